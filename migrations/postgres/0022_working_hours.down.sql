ALTER TABLE notify_settings DROP COLUMN work_end;
ALTER TABLE notify_settings DROP COLUMN work_start;
ALTER TABLE notify_settings DROP COLUMN work_days;
