//! Which process owns a job. Each open store holds an exclusive lock on a file of its
//! own under `<data dir>/sessions/`, and jobs record the session that created them.
//! The operating system releases the lock when the process ends, however it ends, so
//! at open a job whose session's file can be locked was left behind by a process that
//! is gone, while jobs of a live process (the desktop app while the CLI runs, say) are
//! left alone.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::StoreError;

pub const SESSIONS_DIR_NAME: &str = "sessions";
/// The file whose lock makes opening a data dir one process at a time.
pub const OPEN_LOCK_NAME: &str = "open.lock";

/// How long an open waits for another process to finish opening the same data dir.
/// Opening takes well under a second, so a lock held this long belongs to a process
/// that is stuck; waiting on would hang this one without a word.
pub const OPEN_LOCK_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Session {
    pub id: String,
    /// Held for the life of the store; the lock goes with it.
    _lock: File,
}

impl Session {
    pub fn claim(data_dir: &Path) -> Result<Session, StoreError> {
        let dir = data_dir.join(SESSIONS_DIR_NAME);
        std::fs::create_dir_all(&dir).map_err(|source| StoreError::Io {
            path: dir.clone(),
            source,
        })?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let id = format!("{}-{nanos}", std::process::id());
        let path = lock_path(data_dir, &id);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(io)?;
        file.try_lock().map_err(|e| match e {
            TryLockError::Error(e) => io(e),
            TryLockError::WouldBlock => io(std::io::Error::other("locked by another process")),
        })?;
        Ok(Session { id, _lock: file })
    }
}

/// Waits for, then holds, the lock that makes opening a data dir one process at a
/// time. A new database's first connections switch it to WAL and migrate it; SQLite
/// answers a second opener with "database is locked" during that switch instead of
/// waiting its busy timeout, so openers queue here first, for at most
/// [`OPEN_LOCK_WAIT`].
pub async fn lock_for_open(data_dir: &Path) -> Result<File, StoreError> {
    let path = data_dir.join(OPEN_LOCK_NAME);
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    let deadline = Instant::now() + OPEN_LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => {
                return Err(StoreError::InUse(data_dir.to_path_buf()))
            }
            Err(TryLockError::WouldBlock) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
    }
}

/// Whether the process of session `id` still runs. A session we cannot check is
/// taken as gone: a job must not stay `running` forever.
pub fn is_alive(data_dir: &Path, id: &str) -> bool {
    let Ok(file) = File::open(lock_path(data_dir, id)) else {
        return false;
    };
    matches!(file.try_lock(), Err(TryLockError::WouldBlock))
}

/// Deletes the lock files of sessions that have ended.
pub fn sweep(data_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(data_dir.join(SESSIONS_DIR_NAME)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ended = File::open(&path).is_ok_and(|f| f.try_lock().is_ok());
        if ended {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn lock_path(data_dir: &Path, id: &str) -> PathBuf {
    data_dir.join(SESSIONS_DIR_NAME).join(format!("{id}.lock"))
}
