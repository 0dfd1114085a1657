//! Izwi's store: one SQLite database in the app data dir holding jobs, transcripts and
//! their segments, the voice library, chats and settings.
//!
//! [`Store::open`] creates the data dir, its `audio` folder and the database, runs the
//! embedded migrations, and marks jobs a crash left `running` as `interrupted`. The
//! database runs in WAL mode with foreign keys on and full fsync on commit; writes that
//! read first take the write lock up front, so concurrent writers (tasks of one process,
//! or another process on the same data dir) wait instead of failing with "database is
//! locked".
//!
//! Audio lives in files under the data dir; rows hold their paths relative to it
//! ([`Store::relative`], [`Store::resolve`]). Deleting rows never deletes files.
//!
//! Transcripts are searchable with SQLite FTS5 ([`Store::search_transcripts`]); any text
//! a user types is a valid search.

mod chats;
mod error;
mod jobs;
mod session;
mod settings;
mod store;
mod transcripts;
mod voices;

pub use chats::{ChatRecord, MessageMetrics, MessageRecord, MessageRole, NewMessage};
pub use error::StoreError;
pub use jobs::{Job, JobFilter, JobKind, JobMetrics, JobStatus, NewJob};
pub use session::{OPEN_LOCK_NAME, OPEN_LOCK_WAIT, SESSIONS_DIR_NAME};
pub use store::{
    Store, AUDIO_DIR_NAME, DB_FILE_NAME, INTERRUPTED_ERROR, RECORDINGS_DIR_NAME, UPLOADS_DIR_NAME,
};
pub use transcripts::{NewTranscript, SearchHit, SegmentRecord, TranscriptRecord, WordRecord};
pub use voices::{NewVoice, VoiceRecord, VoiceSettings, VoiceSource};
