-- The claim reads unscheduled pending rows in id order, past any kept ones.
CREATE INDEX IF NOT EXISTS {{ready_index}} ON {{table}} (id)
    WHERE failed_at IS NULL AND published_at IS NULL AND discarded_at IS NULL AND due_at IS NULL;
