-- Izwi's first schema. Enum columns hold snake_case text checked against the Rust enums;
-- times are unix milliseconds; audio paths are relative to the app data dir.

CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY,
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
CREATE INDEX jobs_status ON jobs (status);
CREATE INDEX jobs_created_at ON jobs (created_at);

-- One transcript per job at most; transcripts of imported files have no job.
CREATE TABLE transcripts (
    id          INTEGER PRIMARY KEY,
    job_id      INTEGER REFERENCES jobs (id) ON DELETE CASCADE,
    title       TEXT    NOT NULL,
    source_path TEXT    NOT NULL,
    audio_path  TEXT,
    language    TEXT,
    duration    REAL    NOT NULL DEFAULT 0,
    model_id    TEXT,
    rtf         REAL,
    created_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX transcripts_job_id ON transcripts (job_id);
CREATE INDEX transcripts_created_at ON transcripts (created_at);

CREATE TABLE segments (
    id            INTEGER PRIMARY KEY,
    transcript_id INTEGER NOT NULL REFERENCES transcripts (id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    start_secs    REAL    NOT NULL,
    end_secs      REAL    NOT NULL,
    text          TEXT    NOT NULL
);
CREATE UNIQUE INDEX segments_transcript_idx ON segments (transcript_id, idx);
CREATE INDEX segments_transcript_start ON segments (transcript_id, start_secs, idx);

-- Full-text search. Both tables index rows of their content table (no copy of the text);
-- the triggers below keep them in step, including deletes made by ON DELETE CASCADE.
CREATE VIRTUAL TABLE segments_fts USING fts5 (
    text,
    content = 'segments',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER segments_fts_insert AFTER INSERT ON segments BEGIN
    INSERT INTO segments_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER segments_fts_delete AFTER DELETE ON segments BEGIN
    INSERT INTO segments_fts (segments_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER segments_fts_update AFTER UPDATE OF text ON segments BEGIN
    INSERT INTO segments_fts (segments_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO segments_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE VIRTUAL TABLE transcripts_fts USING fts5 (
    title,
    content = 'transcripts',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER transcripts_fts_insert AFTER INSERT ON transcripts BEGIN
    INSERT INTO transcripts_fts (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER transcripts_fts_delete AFTER DELETE ON transcripts BEGIN
    INSERT INTO transcripts_fts (transcripts_fts, rowid, title) VALUES ('delete', old.id, old.title);
END;
CREATE TRIGGER transcripts_fts_update AFTER UPDATE OF title ON transcripts BEGIN
    INSERT INTO transcripts_fts (transcripts_fts, rowid, title) VALUES ('delete', old.id, old.title);
    INSERT INTO transcripts_fts (rowid, title) VALUES (new.id, new.title);
END;

CREATE TABLE voices (
    id              INTEGER PRIMARY KEY,
    name            TEXT    NOT NULL CHECK (length(trim(name)) > 0),
    source          TEXT    NOT NULL CHECK (source IN ('preset', 'cloned', 'designed')),
    model_id        TEXT    NOT NULL,
    reference_audio TEXT,
    reference_text  TEXT,
    settings        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX voices_name ON voices (name COLLATE NOCASE);

CREATE TABLE chats (
    id         INTEGER PRIMARY KEY,
    title      TEXT    NOT NULL,
    model_id   TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX chats_updated_at ON chats (updated_at);

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    chat_id    INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    role       TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content    TEXT    NOT NULL,
    audio_path TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX messages_chat_id ON messages (chat_id, id);

CREATE TABLE settings (
    key        TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL CHECK (json_valid(value)),
    updated_at INTEGER NOT NULL
);
