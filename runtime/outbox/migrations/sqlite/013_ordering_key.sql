-- Adds ordering_key (see migrations/postgres/006_ordering_key.sql).
ALTER TABLE {{table}} ADD COLUMN ordering_key TEXT;
