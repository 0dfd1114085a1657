-- Job ids are never reused: a deleted job's id (the highest included) is not given to
-- a new job, so nothing that still names an old id (an event, a file name such as
-- speech-<id>.wav, a shell's open view) can reach a different job. SQLite cannot add
-- AUTOINCREMENT to a column, so the table is rebuilt with every row and id kept.
-- The store runs migrations with foreign keys off (SQLite's way to rebuild a table that
-- others reference): dropping the old table would otherwise cascade to transcripts.

CREATE TABLE jobs_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT    NOT NULL CHECK (kind IN ('transcribe', 'speak', 'speak_batch')),
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
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_status ON jobs (status);
CREATE INDEX jobs_created_at ON jobs (created_at);
