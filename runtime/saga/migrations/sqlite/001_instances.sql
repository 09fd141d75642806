-- Instances of warren sagas on SQLite: see the PostgreSQL script.
CREATE TABLE IF NOT EXISTS {{table}} (
    saga         TEXT    NOT NULL,
    instance     TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    state        TEXT    NOT NULL,
    timeouts     TEXT    NOT NULL,
    completed_at INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (saga, instance)
);

CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (completed_at) WHERE completed_at IS NOT NULL;
