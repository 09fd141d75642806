-- The source of the numbers of the per-key counters, one row (see
-- migrations/postgres/007_seq_source.sql); 016 draws its id.
CREATE TABLE IF NOT EXISTS {{source_table}} (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    source TEXT    NOT NULL
);
