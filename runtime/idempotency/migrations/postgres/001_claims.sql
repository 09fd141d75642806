-- Claims of the warren idempotency guard on PostgreSQL.
--
-- One row per (message, consumer) whose handler committed. The primary key is
-- the whole mechanism: a second claim of the same pair inserts nothing, and a
-- claim that meets another transaction's uncommitted claim waits for that
-- transaction to end, then sees its outcome.
--
-- The table and index names are placeholders in double braces, filled in
-- with the configured table name by idempotency.MigrationSQL.
CREATE TABLE IF NOT EXISTS {{table}} (
    message_id text        NOT NULL,
    consumer   text        NOT NULL,
    claimed_at timestamptz NOT NULL,
    PRIMARY KEY (message_id, consumer)
);

-- Prune deletes claims by age.
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (claimed_at);
