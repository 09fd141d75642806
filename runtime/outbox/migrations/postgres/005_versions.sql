-- Facts written in several versions at once (see outbox.Outbox.WriteVersions).
--
-- A fact published in several versions during a dual publish window is one
-- row: its id, version and envelope are the newest copy's, and copies holds
-- the others as a JSON array of {"version": N, "payload": {...}}. The relay
-- publishes every copy with the row's id and time and deletes the row once
-- all are confirmed. NULL for a fact written in one version.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS copies bytea;
