-- Draws the id of the ordering source once: a table that has one keeps it.
INSERT INTO {{source_table}} (one, source) VALUES (1, lower(hex(randomblob(16))))
    ON CONFLICT (one) DO NOTHING;
