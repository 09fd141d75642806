-- Parked ordering keys of ordered consumers with onPoison park (see
-- runtime.ParkStore): one row per (consumer, key) waiting behind a poisoned
-- fact, written before the fact's poison copy and deleted when the fact
-- comes back, so that a park outlives the instance that made it.
CREATE TABLE IF NOT EXISTS {{parked}} (
    consumer     text        NOT NULL,
    ordering_key text        NOT NULL,
    message_id   text        NOT NULL,
    parked_at    timestamptz NOT NULL,
    PRIMARY KEY (consumer, ordering_key)
);
