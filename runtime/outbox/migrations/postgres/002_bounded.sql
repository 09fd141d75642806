-- Bounded retries, kept rows and the pending index (added to tables made
-- by 001 as well: ADD COLUMN IF NOT EXISTS).
--
-- A row is pending while failed_at, published_at and discarded_at are all
-- NULL. After RelayConfig.MaxAttempts refused publishes it is marked
-- failed (failed_at), keeps its last_error and waits for an operator:
-- `warren outbox retry` makes it pending again, `warren outbox discard`
-- sets discarded_at; note holds the reason they gave. published_at is set
-- instead of deleting the row when the relay keeps published rows
-- (RelayConfig.KeepPublished).
ALTER TABLE {{table}}
    ADD COLUMN IF NOT EXISTS failed_at    timestamptz,
    ADD COLUMN IF NOT EXISTS published_at timestamptz,
    ADD COLUMN IF NOT EXISTS discarded_at timestamptz,
    ADD COLUMN IF NOT EXISTS note         text;

-- The claim's indexes are made by 004_schedule.sql.
