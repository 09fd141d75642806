-- Adds discarded_at (see migrations/postgres/002_bounded.sql for what it means).
-- SQLite has no ADD COLUMN IF NOT EXISTS: each script adds one column, and
-- Migrate skips a script whose column is already there.
ALTER TABLE {{table}} ADD COLUMN discarded_at INTEGER;
