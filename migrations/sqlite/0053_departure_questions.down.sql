ALTER TABLE orgs DROP COLUMN departure_questions;
