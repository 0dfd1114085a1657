//! The one error every command returns: a kind the UI can branch on and a message it
//! can show as is.

pub use izwi_runtime::ErrorKind;
use izwi_runtime::RuntimeError;
use serde::{Deserialize, Serialize};

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

impl From<RuntimeError> for AppError {
    fn from(e: RuntimeError) -> Self {
        AppError::new(e.kind(), e.to_string())
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
