-- The warren outbox on SQLite.
--
-- One row per fact written in a business transaction and not yet published.
-- The relay claims rows in id order under the database's write lock,
-- publishes them and deletes each row whose publish the broker confirmed,
-- in the transaction that claimed it. A row whose publish failed stays,
-- with the error, until a later round publishes it.
--
-- Times are Unix milliseconds (UTC), so they compare as numbers whatever
-- time format the driver writes.
--
-- The table name is a placeholder in double braces, filled in with the
-- configured name by outbox.MigrationSQL.
CREATE TABLE IF NOT EXISTS {{table}} (
    -- The message id: a UUIDv7, so ids sort by creation time.
    id              TEXT    NOT NULL PRIMARY KEY,
    routing_key     TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    -- The JSON envelope, byte for byte the body the relay publishes.
    envelope        BLOB    NOT NULL,
    created_at      INTEGER NOT NULL,
    -- Failed publishes so far; a published row is deleted.
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    last_attempt_at INTEGER,
    -- A failed row waits until then; NULL for a row never tried.
    retry_at        INTEGER
);
