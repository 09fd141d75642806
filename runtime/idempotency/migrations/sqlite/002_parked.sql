-- Parked ordering keys of ordered consumers with onPoison park (see
-- runtime.ParkStore): one row per (consumer, key) waiting behind a poisoned
-- fact, written before the fact's poison copy and deleted when the fact
-- comes back, so that a park outlives the instance that made it.
CREATE TABLE IF NOT EXISTS {{parked}} (
    consumer     TEXT    NOT NULL,
    ordering_key TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    parked_at    INTEGER NOT NULL,
    PRIMARY KEY (consumer, ordering_key)
) WITHOUT ROWID;
