use std::path::PathBuf;

/// Everything that can go wrong managing models, in words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("unknown model {0:?}; `izwi models list` shows the models Izwi knows")]
    UnknownModel(String),
    #[error("{0} is not a model Izwi downloaded or imported; it removes only those (`izwi models list` shows them)")]
    NotRemovable(String),
    #[error("model {0} is not installed; download it with `izwi models download {0}`")]
    NotInstalled(String),
    #[error("no answer from {host} ({reason}); check the internet connection, then download again: it resumes where it stopped")]
    Network { host: String, reason: String },
    #[error("the model hub refused {file} (HTTP {status}); try again later, and update Izwi if it keeps happening")]
    Http { status: u16, file: String },
    #[error("the model hub no longer has {file} of {repo} at commit {revision}; update Izwi to get a catalog that points to it")]
    MissingRemoteFile {
        repo: String,
        revision: String,
        file: String,
    },
    #[error("downloading {file} failed: {reason}; run the download again to resume it")]
    Download { file: String, reason: String },
    #[error("{file} does not match what Izwi expects (its {algorithm} is {actual}, not {expected}); download or import the model again")]
    ChecksumMismatch {
        file: String,
        algorithm: &'static str,
        expected: String,
        actual: String,
    },
    #[error("not enough disk space in {}: {needed} bytes needed, {available} free", path.display())]
    NotEnoughSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error("the disk holding {} is full", path.display())]
    DiskFull { path: PathBuf },
    #[error("the download was cancelled")]
    Cancelled,
    #[error("{} is not a model folder Izwi can import: {reason}", path.display())]
    NotImportable { path: PathBuf, reason: String },
    #[error("a model named {0:?} is already imported; choose another name")]
    AlreadyImported(String),
    #[error("converting {}: {reason}", path.display())]
    Convert { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl HubError {
    /// An I/O error on `path`, named as a full disk when it is one.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::StorageFull {
            HubError::DiskFull { path }
        } else {
            HubError::Io { path, source }
        }
    }
}
