-- A password check still running is counted with the failures, so that
-- concurrent guesses stay within the limits, but it is not one: its row
-- carries the check's id until the check fails (the id is cleared) or
-- succeeds (the row is deleted). Checks running stop others only for as
-- long as they run.
ALTER TABLE login_failures ADD COLUMN check_id TEXT;
