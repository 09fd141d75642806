-- The warren outbox on PostgreSQL.
--
-- One row per fact written in a business transaction and not yet published.
-- The relay claims rows in id order (FOR UPDATE SKIP LOCKED, so several
-- relays share the work), publishes them and deletes each row whose publish
-- the broker confirmed, in the transaction that claimed it. A row whose
-- publish failed stays, with the error, until a later round publishes it.
--
-- The table name is a placeholder in double braces, filled in with the
-- configured name by outbox.MigrationSQL.
CREATE TABLE IF NOT EXISTS {{table}} (
    -- The message id: a UUIDv7, so ids sort by creation time.
    id              uuid        PRIMARY KEY,
    routing_key     text        NOT NULL,
    version         integer     NOT NULL,
    -- The JSON envelope, byte for byte the body the relay publishes
    -- (read it with convert_from(envelope, 'UTF8')).
    envelope        bytea       NOT NULL,
    created_at      timestamptz NOT NULL,
    -- Failed publishes so far; a published row is deleted.
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text,
    last_attempt_at timestamptz,
    -- A failed row waits until then; NULL for a row never tried.
    retry_at        timestamptz
);
