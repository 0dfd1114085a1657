use izwi_audio::AudioError;
use izwi_core::models::whisper::TranscribeError;
use izwi_hub::HubError;
use izwi_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Hub(#[from] HubError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{}: {source}", path.display())]
    Audio {
        path: std::path::PathBuf,
        source: AudioError,
    },
    #[error(transparent)]
    Transcribe(#[from] TranscribeError),
    #[error("model {id} is a {family} model; it cannot {task}")]
    WrongModel {
        id: String,
        family: String,
        task: &'static str,
    },
    #[error("loading model {id}: {reason}")]
    Load { id: String, reason: String },
    #[error("job {0} was cancelled")]
    Cancelled(i64),
    /// A newer request of the same sort replaced this one (holds what it was for).
    #[error("{0} was replaced by a newer request")]
    Superseded(&'static str),
    #[error("job {0} does not exist")]
    NoSuchJob(i64),
    #[error("voice {0} does not exist")]
    NoSuchVoice(i64),
    #[error("{0}")]
    InvalidRequest(String),
    /// A file the request would write is already there, and replacing it was not
    /// asked for.
    #[error("{} already exists; Izwi replaces a file only when asked to", .0.display())]
    OutputExists(std::path::PathBuf),
    /// Phonemization or synthesis failed (espeak-ng missing, a voice's error).
    #[error("{0}")]
    Speech(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The remote backend failed or refused (its message says which).
    #[error("the remote server {url} {message}")]
    Remote { url: String, message: String },
}

/// What sort of thing went wrong, for a shell to choose how to say it (the desktop app
/// sends it to its UI beside the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A model, job, transcript or file that does not exist.
    NotFound,
    /// A request the app refuses: a bad argument, a model of the wrong kind.
    Invalid,
    /// A model that is not installed, cannot load or failed while running.
    Model,
    /// A file that cannot be decoded.
    Audio,
    /// The model hub cannot be reached or answered badly.
    Network,
    /// A full disk or a file that cannot be read or written.
    Disk,
    /// The user cancelled it, or a newer request replaced it.
    Cancelled,
    /// Anything else: a bug or the database.
    Internal,
}

impl ErrorKind {
    /// The kind of an I/O failure on a file.
    pub fn of_io(e: &std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => ErrorKind::Invalid,
            _ => ErrorKind::Disk,
        }
    }
}

impl RuntimeError {
    pub fn kind(&self) -> ErrorKind {
        use HubError as H;
        use StoreError as S;
        match self {
            RuntimeError::Hub(h) => match h {
                H::UnknownModel(_) => ErrorKind::NotFound,
                H::NotInstalled(_) | H::Convert { .. } => ErrorKind::Model,
                H::Network { .. }
                | H::Http { .. }
                | H::MissingRemoteFile { .. }
                | H::Download { .. }
                | H::ChecksumMismatch { .. } => ErrorKind::Network,
                H::NotEnoughSpace { .. } | H::DiskFull { .. } => ErrorKind::Disk,
                H::Io { source, .. } => ErrorKind::of_io(source),
                H::Cancelled => ErrorKind::Cancelled,
                H::NotRemovable(_) | H::NotImportable { .. } | H::AlreadyImported(_) => {
                    ErrorKind::Invalid
                }
            },
            RuntimeError::Store(s) => match s {
                S::NotFound { .. } => ErrorKind::NotFound,
                S::InvalidInput(_) | S::InvalidTransition { .. } | S::PathOutsideDataDir(_) => {
                    ErrorKind::Invalid
                }
                S::Io { source, .. } => ErrorKind::of_io(source),
                _ => ErrorKind::Internal,
            },
            RuntimeError::Audio { source, .. } => match source {
                AudioError::NotFound { .. } => ErrorKind::NotFound,
                AudioError::Cancelled => ErrorKind::Cancelled,
                _ => ErrorKind::Audio,
            },
            RuntimeError::Transcribe(_) | RuntimeError::Load { .. } | RuntimeError::Speech(_) => {
                ErrorKind::Model
            }
            RuntimeError::WrongModel { .. }
            | RuntimeError::InvalidRequest(_)
            | RuntimeError::OutputExists(_) => ErrorKind::Invalid,
            RuntimeError::Cancelled(_) | RuntimeError::Superseded(_) => ErrorKind::Cancelled,
            RuntimeError::NoSuchJob(_) | RuntimeError::NoSuchVoice(_) => ErrorKind::NotFound,
            RuntimeError::Io { source, .. } => ErrorKind::of_io(source),
            RuntimeError::Remote { .. } => ErrorKind::Network,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_the_kind_a_shell_branches_on() {
        assert_eq!(RuntimeError::NoSuchJob(7).kind(), ErrorKind::NotFound);
        let io = RuntimeError::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk on fire"),
        };
        assert_eq!(io.kind(), ErrorKind::Disk);
        assert_eq!(
            RuntimeError::Hub(HubError::UnknownModel("x".into())).kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            RuntimeError::Superseded("the waveform").kind(),
            ErrorKind::Cancelled
        );
        assert_eq!(
            serde_json::to_value(ErrorKind::NotFound).unwrap(),
            serde_json::json!("not_found")
        );
    }
}
