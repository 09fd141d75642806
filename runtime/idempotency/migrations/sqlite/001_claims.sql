-- Claims of the warren idempotency guard on SQLite.
--
-- One row per (message, consumer) whose handler committed. The primary key is
-- the whole mechanism: a second claim of the same pair inserts nothing.
-- claimed_at is in Unix milliseconds (UTC), so it compares as a number
-- whatever time format the driver writes.
--
-- The table and index names are placeholders in double braces, filled in
-- with the configured table name by idempotency.MigrationSQL.
CREATE TABLE IF NOT EXISTS {{table}} (
    message_id TEXT    NOT NULL,
    consumer   TEXT    NOT NULL,
    claimed_at INTEGER NOT NULL,
    PRIMARY KEY (message_id, consumer)
) WITHOUT ROWID;

-- Prune deletes claims by age.
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (claimed_at);
