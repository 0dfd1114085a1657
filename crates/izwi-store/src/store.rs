//! Opening the database, and the data dir's path helpers.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, Sqlite, Transaction};

use crate::error::StoreError;
use crate::session::{self, Session};

/// The schema, embedded in the binary from `crates/izwi-store/migrations`.
static MIGRATOR: Migrator = sqlx::migrate!();

/// The database file inside the data dir.
pub const DB_FILE_NAME: &str = "izwi.db";

/// The folder inside the data dir that holds audio files.
pub const AUDIO_DIR_NAME: &str = "audio";
/// Files received through the HTTP API, each the source of its transcription job.
pub const UPLOADS_DIR_NAME: &str = "uploads";
/// Dictation's recordings, written as they are captured, each the source of its
/// transcription job.
pub const RECORDINGS_DIR_NAME: &str = "recordings";

/// The error recorded on jobs found `running` at open.
pub const INTERRUPTED_ERROR: &str = "Izwi stopped while this job was running";

/// Izwi's store: one SQLite database in the app data dir, plus the audio files beside it.
///
/// Cloning is cheap and shares the connection pool. Several processes may open one data
/// dir: each job belongs to the session of the store that created it, and only jobs of
/// ended sessions are marked `interrupted` at open.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: SqlitePool,
    data_dir: PathBuf,
    interrupted_at_open: u64,
    pub(crate) session: Arc<Session>,
}

impl Store {
    /// Opens (creating if needed) the store in `data_dir`: makes the folder and its
    /// `audio` folder, brings the schema up to date, and marks jobs a crash left
    /// `running` as `interrupted`.
    pub async fn open(data_dir: &Path) -> Result<Store, StoreError> {
        create_dir(data_dir)?;
        // Canonical, so `relative` can compare paths that reach it through symlinks.
        let data_dir = data_dir.canonicalize().map_err(|source| StoreError::Io {
            path: data_dir.to_path_buf(),
            source,
        })?;
        create_dir(&data_dir.join(AUDIO_DIR_NAME))?;

        let open_lock = session::lock_for_open(&data_dir).await?;
        let options = SqliteConnectOptions::new()
            .filename(data_dir.join(DB_FILE_NAME))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            // Commits are few (a job's steps, a transcript), so each one can afford an
            // fsync and survive power loss, not only a crash of the app.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await?;

        // Migrations and the crash sweep also run under SQLite's write lock, so nothing
        // else writes between them. The migrator's own transactions become savepoints
        // inside this one. Foreign keys are off on this connection meanwhile (they can
        // only be switched outside a transaction): a migration that rebuilds a table
        // must not cascade its drop to the rows that reference it; the check before
        // commit proves no reference was broken.
        let session = Arc::new(Session::claim(&data_dir)?);
        let mut conn = pool.acquire().await?;
        sqlx::query("PRAGMA foreign_keys = OFF")
            .execute(&mut *conn)
            .await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        MIGRATOR.run(&mut *tx).await?;
        let broken: Vec<(String,)> =
            sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
                .fetch_all(&mut *tx)
                .await?;
        if let Some((table,)) = broken.first() {
            return Err(StoreError::Corrupt(format!(
                "rows of {table} refer to rows that do not exist"
            )));
        }
        let owners: Vec<Option<String>> = sqlx::query_scalar(
            "SELECT DISTINCT session FROM jobs WHERE status IN ('queued', 'running')",
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut interrupted_at_open = 0;
        for owner in owners {
            if owner
                .as_deref()
                .is_some_and(|id| session::is_alive(&data_dir, id))
            {
                continue;
            }
            interrupted_at_open += sqlx::query(
                "UPDATE jobs SET status = 'interrupted', error = ?, finished_at = ? \
                 WHERE status IN ('queued', 'running') AND session IS ?",
            )
            .bind(INTERRUPTED_ERROR)
            .bind(now_ms())
            .bind(owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        tx.commit().await?;
        sqlx::query("PRAGMA foreign_keys = ON")
            .execute(&mut *conn)
            .await?;
        drop(conn);
        session::sweep(&data_dir);
        drop(open_lock);
        if interrupted_at_open > 0 {
            tracing::warn!(
                jobs = interrupted_at_open,
                "marked jobs left running by the last session as interrupted"
            );
        }

        Ok(Store {
            pool,
            data_dir,
            interrupted_at_open,
            session,
        })
    }

    /// The data dir (canonical form of the path given to [`Store::open`]).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The folder for audio files, `<data dir>/audio`; it exists after open.
    pub fn audio_dir(&self) -> PathBuf {
        self.data_dir.join(AUDIO_DIR_NAME)
    }

    /// The folder for files received through the HTTP API, `<data dir>/uploads`: each
    /// is the source of a transcription job, and goes with it.
    pub fn uploads_dir(&self) -> PathBuf {
        self.data_dir.join(UPLOADS_DIR_NAME)
    }

    /// The folder for dictation's recordings, `<data dir>/recordings`: each is the
    /// source of a transcription job, and goes with it.
    pub fn recordings_dir(&self) -> PathBuf {
        self.data_dir.join(RECORDINGS_DIR_NAME)
    }

    /// The id this store's jobs are recorded under.
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// How many jobs of ended processes [`Store::open`] found `queued` or `running` and
    /// marked `interrupted`.
    pub fn interrupted_at_open(&self) -> u64 {
        self.interrupted_at_open
    }

    /// The absolute path of a path stored relative to the data dir.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        self.data_dir.join(relative)
    }

    /// The form of `path` to store in a row: relative to the data dir, with forward
    /// slashes. Refuses paths outside the data dir, and the data dir itself. The path
    /// need not exist yet.
    pub fn relative(&self, path: &Path) -> Result<String, StoreError> {
        let outside = || StoreError::PathOutsideDataDir(path.to_path_buf());
        let absolute = std::path::absolute(path).map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let normal = normalize(&absolute);
        let inside = match normal.strip_prefix(&self.data_dir) {
            Ok(inside) => inside.to_path_buf(),
            // The path may reach the data dir through a symlink (macOS's /var).
            Err(_) => {
                let canonical = canonicalize_existing_prefix(&normal).ok_or_else(outside)?;
                canonical
                    .strip_prefix(&self.data_dir)
                    .map_err(|_| outside())?
                    .to_path_buf()
            }
        };
        let mut parts = Vec::new();
        for component in inside.components() {
            let Component::Normal(part) = component else {
                return Err(outside());
            };
            let part = part.to_str().ok_or_else(|| {
                StoreError::InvalidInput(format!("{} is not valid UTF-8", path.display()))
            })?;
            parts.push(part);
        }
        if parts.is_empty() {
            return Err(outside());
        }
        Ok(parts.join("/"))
    }

    /// Runs `PRAGMA integrity_check` and returns the problems it finds: none when the
    /// database is sound.
    pub async fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        // SQLite's check of an FTS5 index uses the index layout this connection cached at
        // its last query, without noticing writes other connections made since, and then
        // reports corruption that is not there. Querying each FTS table first refreshes it.
        for refresh in [
            "SELECT count(*) FROM segments_fts WHERE rowid = 0",
            "SELECT count(*) FROM transcripts_fts WHERE rowid = 0",
        ] {
            sqlx::query(refresh).execute(&mut *conn).await?;
        }
        let mut problems: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&mut *conn)
            .await?;
        problems.retain(|line| line != "ok");
        Ok(problems)
    }

    /// The connection pool, for diagnostics and tests; the typed methods are the way to
    /// read and write rows.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes every connection, waiting for queries in flight. Clones of this store
    /// share the pool and are closed too.
    pub async fn close(self) {
        self.pool.close().await;
    }

    /// Starts a write transaction that takes the write lock at once. A deferred
    /// transaction that reads and then writes can fail with "database is locked" when it
    /// upgrades its lock, whatever the busy timeout; this one waits its turn instead.
    pub(crate) async fn write_tx(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }
}

/// Refuses a path meant to be stored relative to the data dir if it could point outside
/// it: absolute, empty, or climbing with `..`.
pub(crate) fn check_relative(relative: &str) -> Result<(), StoreError> {
    let path = Path::new(relative);
    let escapes = relative.is_empty()
        || path.has_root()
        || path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)));
    if escapes {
        return Err(StoreError::PathOutsideDataDir(path.to_path_buf()));
    }
    Ok(())
}

/// Now, in unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn create_dir(path: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Removes `.` and resolves `..` by dropping the component before it, without touching
/// the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalizes the longest prefix of `path` that exists and appends the rest, so a
/// file about to be written resolves like its folder.
fn canonicalize_existing_prefix(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut canonical) => {
                canonical.extend(rest.iter().rev());
                return Some(canonical);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                rest.push(existing.file_name()?);
                existing = existing.parent()?;
            }
            Err(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_relative_refuses_escapes() {
        assert!(check_relative("audio/a.wav").is_ok());
        assert!(check_relative("a.wav").is_ok());
        for bad in ["", "/etc/passwd", "../x.wav", "audio/../../x.wav"] {
            assert!(
                matches!(check_relative(bad), Err(StoreError::PathOutsideDataDir(_))),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(
            normalize(Path::new("/a/./b/../c/d/..")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize(Path::new("/a/../..")), PathBuf::from("/"));
    }
}
