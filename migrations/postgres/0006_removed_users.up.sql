-- A removed member keeps their row, so that the questions they asked stay
-- readable and attributed; removed_at marks them a former member, who cannot
-- log in, be asked or be listed. Their id is not reused.
ALTER TABLE users ADD COLUMN removed_at TIMESTAMPTZ;
