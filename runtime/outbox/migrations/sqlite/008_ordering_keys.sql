-- The per-key counters of facts with an ordering key (see
-- migrations/postgres/003_ordering.sql).
CREATE TABLE IF NOT EXISTS {{seq_table}} (
    ordering_key TEXT    PRIMARY KEY,
    seq          INTEGER NOT NULL
);
