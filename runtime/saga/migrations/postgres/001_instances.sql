-- Instances of warren sagas on PostgreSQL.
--
-- One row per (saga, instance). version grows by one with every change:
-- a write names the version it read, so of two handlings of one instance
-- that read the same version only the first to commit writes; the other
-- reads again and handles its fact on the new state. Times are Unix
-- milliseconds, as in every dialect.
CREATE TABLE IF NOT EXISTS {{table}} (
    saga         text        NOT NULL,
    instance     text        NOT NULL,
    version      bigint      NOT NULL,
    state        text        NOT NULL,
    timeouts     text        NOT NULL,
    completed_at bigint,
    created_at   bigint      NOT NULL,
    updated_at   bigint      NOT NULL,
    PRIMARY KEY (saga, instance)
);

-- Pruning deletes completed instances by age.
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (completed_at) WHERE completed_at IS NOT NULL;
