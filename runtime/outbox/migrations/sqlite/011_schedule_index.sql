-- The claim reads scheduled pending rows by due time.
CREATE INDEX IF NOT EXISTS {{schedule_index}} ON {{table}} (due_at, id)
    WHERE failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL AND due_at IS NOT NULL;
