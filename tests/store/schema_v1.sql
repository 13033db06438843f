-- The SQLite schema of reassignd 0.1 (store schema version 1), for the migration test.
CREATE TABLE plans (
    id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL UNIQUE,
    plan_json TEXT NOT NULL,
    options_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('queued', 'running', 'paused', 'cancelling', 'cancelled', 'completed', 'failed')),
    submitted_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    error TEXT
);
CREATE TABLE partition_states (
    plan_id TEXT NOT NULL REFERENCES plans(id),
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (plan_id, topic, partition)
) WITHOUT ROWID;
CREATE TABLE original_configs (
    resource_type TEXT NOT NULL CHECK (resource_type IN ('broker', 'topic')),
    resource_name TEXT NOT NULL,
    config_key TEXT NOT NULL,
    value TEXT,
    recorded_at REAL NOT NULL,
    PRIMARY KEY (resource_type, resource_name, config_key)
) WITHOUT ROWID;
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    plan_id TEXT,
    topic TEXT,
    partition INTEGER,
    step_index INTEGER,
    data_json TEXT NOT NULL,
    idempotency_key TEXT UNIQUE
);
CREATE INDEX journal_by_plan ON journal (plan_id, seq);
CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal
    BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
