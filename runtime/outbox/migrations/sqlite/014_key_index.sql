-- Finds the earlier rows of a row's ordering key (see
-- migrations/postgres/006_ordering_key.sql).
CREATE INDEX IF NOT EXISTS {{key_index}} ON {{table}} (ordering_key, ordering_seq)
    WHERE ordering_key IS NOT NULL AND published_at IS NULL AND discarded_at IS NULL;
