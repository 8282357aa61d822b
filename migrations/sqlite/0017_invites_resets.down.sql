DROP TABLE reset_requests;
DROP TABLE password_resets;
DROP TABLE invites;
DROP INDEX users_email;
ALTER TABLE users DROP COLUMN email;
