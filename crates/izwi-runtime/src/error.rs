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
    #[error("job {0} does not exist")]
    NoSuchJob(i64),
    #[error("voice {0} does not exist")]
    NoSuchVoice(i64),
    #[error("{0}")]
    InvalidRequest(String),
    /// Phonemization or synthesis failed (espeak-ng missing, a voice's error).
    #[error("{0}")]
    Speech(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}
