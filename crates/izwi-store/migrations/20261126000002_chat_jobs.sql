-- Chat completions of the API are jobs too ('chat'). SQLite cannot change a CHECK, so
-- the table is rebuilt with every row and id kept, as 20261123000001 did, and with its
-- AUTOINCREMENT counter: an id a deleted job had is still never given again.

CREATE TABLE jobs_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT    NOT NULL CHECK (kind IN ('transcribe', 'speak', 'speak_batch', 'chat')),
    status      TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled', 'interrupted')),
    model_id    TEXT,
    input       TEXT    NOT NULL,
    output      TEXT,
    params      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
    error       TEXT,
    progress    REAL    NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    metrics     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metrics)),
    created_at  INTEGER NOT NULL,
    started_at  INTEGER,
    finished_at INTEGER,
    -- The store session (process) that created the job: see session.rs.
    session     TEXT
);
INSERT INTO jobs_new (id, kind, status, model_id, input, output, params, error, progress,
                      metrics, created_at, started_at, finished_at, session)
    SELECT id, kind, status, model_id, input, output, params, error, progress,
           metrics, created_at, started_at, finished_at, session
    FROM jobs;
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'jobs_new', seq FROM sqlite_sequence
    WHERE name = 'jobs' AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs_new');
UPDATE sqlite_sequence
    SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0))
    WHERE name = 'jobs_new';
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_status ON jobs (status);
CREATE INDEX jobs_created_at ON jobs (created_at);
