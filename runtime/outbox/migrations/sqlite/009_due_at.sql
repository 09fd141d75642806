-- Adds due_at, in Unix milliseconds (see migrations/postgres/004_schedule.sql).
ALTER TABLE {{table}} ADD COLUMN due_at INTEGER;
