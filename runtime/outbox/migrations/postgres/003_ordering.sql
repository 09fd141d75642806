-- Numbering of facts with an ordering key (see outbox.Outbox.Write).
--
-- {{seq_table}} holds, per ordering key, the number of the last fact
-- written with it. Write increments it in the business transaction, which
-- locks the key's row until that transaction ends: writers of one key take
-- numbers one after the other, in commit order, whatever process they run
-- in. ordering_seq is the number of the row's fact (NULL for facts
-- without an ordering key); the relay sends it as x-ordering-seq.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS ordering_seq bigint;
CREATE TABLE IF NOT EXISTS {{seq_table}} (
    ordering_key text   PRIMARY KEY,
    seq          bigint NOT NULL
);
