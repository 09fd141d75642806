-- Parked ordering keys of ordered consumers with onPoison park (see
-- runtime.ParkStore): one row per (consumer, key) waiting behind a poisoned
-- fact, written before the fact's poison copy (poisoned 1 once the broker
-- confirmed the copy; replays: the fact's x-replay-count then) and deleted
-- when the fact comes back replayed, so that a park outlives the instance
-- that made it.
CREATE TABLE IF NOT EXISTS {{parked}} (
    consumer     TEXT    NOT NULL,
    ordering_key TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    replays      INTEGER NOT NULL DEFAULT 0,
    poisoned     INTEGER NOT NULL DEFAULT 0,
    parked_at    INTEGER NOT NULL,
    PRIMARY KEY (consumer, ordering_key)
) WITHOUT ROWID;
