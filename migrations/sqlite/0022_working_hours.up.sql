-- A person's working days and hours, in their time_zone: reminders count
-- working time only. work_days lists ISO weekdays (1 Monday .. 7 Sunday),
-- comma-separated; work_start and work_end are minutes after midnight.
ALTER TABLE notify_settings ADD COLUMN work_days TEXT NOT NULL DEFAULT '1,2,3,4,5';
ALTER TABLE notify_settings ADD COLUMN work_start INTEGER NOT NULL DEFAULT 540;
ALTER TABLE notify_settings ADD COLUMN work_end INTEGER NOT NULL DEFAULT 1020;
