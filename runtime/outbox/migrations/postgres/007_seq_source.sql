-- The source of the numbers that {{seq_table}} counts (see
-- outbox.Outbox.Write and ordering.go).
--
-- {{source_table}} holds one row: an id drawn at random when the table is
-- first migrated, and kept by every migration after. The relay publishes
-- each numbered fact with the source "outbox:<table>:<id>", so that two
-- databases each with an outbox table of the same name, or a database
-- made again from nothing, number their keys under sources of their own:
-- an ordered consumer of both never reads one's numbers as the other's
-- gaps or steps back. A table migrated before this script gets its id
-- here. Deleting the row and migrating again draws a new one (after
-- restoring a backup, whose counters start again from where it was taken).
CREATE TABLE IF NOT EXISTS {{source_table}} (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    source text    NOT NULL
);
INSERT INTO {{source_table}} (source) VALUES (replace(gen_random_uuid()::text, '-', ''))
    ON CONFLICT (one) DO NOTHING;
