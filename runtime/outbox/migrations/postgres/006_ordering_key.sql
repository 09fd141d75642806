-- The ordering key of each row (see outbox.Outbox.Write and relay.go).
--
-- ordering_key is the key a fact with an ordering key was numbered under
-- (ordering_seq is its number), NULL for the others. The relay holds a
-- key back while an earlier row of it is unsent: refused and waiting for
-- its retry, or marked failed until an operator retries or discards it.
-- The key index finds a row's earlier ones. Rows written before this
-- script have no key: the relay sends them as it did before, unheld.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS ordering_key text;
CREATE INDEX IF NOT EXISTS {{key_index}} ON {{table}} (ordering_key, ordering_seq)
    WHERE ordering_key IS NOT NULL AND published_at IS NULL AND discarded_at IS NULL;
