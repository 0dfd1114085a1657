//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::jobs::JobStatus;

/// Everything that can go wrong reading or writing the store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// SQLite or the connection pool failed (a constraint, a full disk, a closed pool).
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),

    /// The schema could not be brought up to date, e.g. the database was written by a
    /// newer Izwi whose migrations this build does not know.
    #[error("cannot update the database schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),

    /// A file or directory of the data dir could not be created or read.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// No row of that kind has this id.
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: i64 },

    /// A job was asked to move to a status it cannot reach from the one it is in.
    #[error("job {id} is {from}; it cannot become {to}")]
    InvalidTransition {
        id: i64,
        from: JobStatus,
        to: JobStatus,
    },

    /// A row holds a value this build does not understand (an unknown enum text).
    #[error("the database holds a value Izwi does not understand: {0}")]
    Corrupt(String),

    /// A path that must lie inside the data dir does not.
    #[error("{} is not inside Izwi's data folder", .0.display())]
    PathOutsideDataDir(PathBuf),

    /// A JSON column or setting could not be written or read as the asked-for type.
    #[error("cannot convert JSON: {0}")]
    Json(#[from] serde_json::Error),

    /// Another process held the data dir's open lock for longer than an open takes.
    #[error(
        "another Izwi (the app or the CLI) is using the data folder {}; close it, or give \
         this one another data folder, and try again",
        .0.display()
    )]
    InUse(PathBuf),

    /// The caller passed a value the store refuses, e.g. a blank name.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}
