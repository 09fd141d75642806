-- Adds ordering_seq (see migrations/postgres/003_ordering.sql).
ALTER TABLE {{table}} ADD COLUMN ordering_seq INTEGER;
