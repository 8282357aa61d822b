ALTER TABLE login_failures DROP COLUMN check_id;
