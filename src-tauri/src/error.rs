//! The one error every command returns: a kind the UI can branch on and a message it
//! can show as is.

use izwi_runtime::RuntimeError;
use serde::{Deserialize, Serialize};

/// What sort of thing went wrong, for the UI to choose how to say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
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
    /// The user cancelled it.
    Cancelled,
    /// Anything else: a bug or the database.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
pub struct AppError {
    pub kind: ErrorKind,
    pub message: String,
}

impl AppError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

fn io_kind(e: &std::io::Error) -> ErrorKind {
    match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => ErrorKind::Invalid,
        _ => ErrorKind::Disk,
    }
}

impl From<RuntimeError> for AppError {
    fn from(e: RuntimeError) -> Self {
        use izwi_hub::HubError as H;
        use izwi_runtime::RuntimeError as R;
        use izwi_store::StoreError as S;
        let kind = match &e {
            R::Hub(h) => match h {
                H::UnknownModel(_) => ErrorKind::NotFound,
                H::NotInstalled(_) | H::Convert { .. } => ErrorKind::Model,
                H::Network { .. }
                | H::Http { .. }
                | H::MissingRemoteFile { .. }
                | H::Download { .. }
                | H::ChecksumMismatch { .. } => ErrorKind::Network,
                H::NotEnoughSpace { .. } | H::DiskFull { .. } => ErrorKind::Disk,
                H::Io { source, .. } => io_kind(source),
                H::Cancelled => ErrorKind::Cancelled,
                H::NotRemovable(_) | H::NotImportable { .. } | H::AlreadyImported(_) => {
                    ErrorKind::Invalid
                }
            },
            R::Store(s) => match s {
                S::NotFound { .. } => ErrorKind::NotFound,
                S::InvalidInput(_) | S::InvalidTransition { .. } | S::PathOutsideDataDir(_) => {
                    ErrorKind::Invalid
                }
                S::Io { source, .. } => io_kind(source),
                _ => ErrorKind::Internal,
            },
            R::Audio { .. } => ErrorKind::Audio,
            R::Transcribe(_) | R::Load { .. } | R::Speech(_) => ErrorKind::Model,
            R::WrongModel { .. } | R::InvalidRequest(_) => ErrorKind::Invalid,
            R::Cancelled(_) => ErrorKind::Cancelled,
            R::NoSuchJob(_) | R::NoSuchVoice(_) => ErrorKind::NotFound,
            R::Io { source, .. } => io_kind(source),
        };
        AppError::new(kind, e.to_string())
    }
}

pub type AppResult<T> = Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_errors_keep_their_message_and_get_a_kind() {
        let e: AppError = RuntimeError::NoSuchJob(7).into();
        assert_eq!(e, AppError::not_found("job 7 does not exist"));
        let e: AppError = RuntimeError::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk on fire"),
        }
        .into();
        assert_eq!(e.kind, ErrorKind::Disk);
        assert_eq!(
            serde_json::to_value(AppError::invalid("no")).unwrap(),
            serde_json::json!({"kind": "invalid", "message": "no"})
        );
    }
}
