-- Scheduled facts (see outbox.Outbox.In and At).
--
-- due_at is when a scheduled fact is due: the relay publishes it then and
-- not before, with due_at as its x-due-at header. It is NULL for a fact
-- published as soon as its transaction commits.
--
-- The claim reads from two partial indexes: the ready index holds the
-- unscheduled pending rows in id order, the schedule index the scheduled
-- ones by due time. A table holding a year of scheduled facts so costs a
-- claim no more than an empty one; one index over every pending row (made
-- by 002_bounded.sql before this script) would make each claim step over
-- all the facts not yet due. DROP INDEX removes that index once.
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS due_at timestamptz;
DROP INDEX IF EXISTS {{pending_index}};
CREATE INDEX IF NOT EXISTS {{ready_index}} ON {{table}} (id)
    WHERE failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL AND due_at IS NULL;
CREATE INDEX IF NOT EXISTS {{schedule_index}} ON {{table}} (due_at, id)
    WHERE failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL AND due_at IS NOT NULL;
