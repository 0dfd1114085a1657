//! Listening to speech Izwi made or was given: a clip transcribed in memory by an
//! installed Whisper model (a clone's transcript, a batch line's self-check).

use std::sync::Arc;

use izwi_core::models::whisper::TranscribeOptions;
use izwi_hub::{Family, ModelStatus};

use crate::runtime::Inner;
use crate::RuntimeError;

impl Inner {
    /// The Whisper model to listen with: the default transcription model when it is an
    /// installed Whisper model, else the first installed one; None when there is none.
    pub(crate) async fn installed_whisper(&self) -> Option<String> {
        let installed = |id: &str| {
            self.hub
                .info(id)
                .is_ok_and(|m| m.family == Family::Whisper && m.status == ModelStatus::Installed)
        };
        let chosen: Option<String> = self
            .store
            .get_setting(crate::DEFAULT_TRANSCRIBE_MODEL)
            .await
            .ok()
            .flatten();
        if let Some(id) = chosen.filter(|id| installed(id)) {
            return Some(id);
        }
        self.hub
            .list()
            .into_iter()
            .find(|m| m.family == Family::Whisper && m.status == ModelStatus::Installed)
            .map(|m| m.id)
    }
}

/// What Whisper model `model_id` hears in `samples` (16 kHz mono), in windows of at
/// most 30 s.
pub(crate) async fn transcribe_samples(
    inner: &Inner,
    model_id: &str,
    samples: Vec<f32>,
    options: &TranscribeOptions,
) -> Result<String, RuntimeError> {
    let whisper = inner.models.whisper(model_id).await?;
    let samples = Arc::new(samples);
    let windows = crate::transcribe::windows(inner, &samples).await?;
    if windows.is_empty() {
        return Ok(String::new());
    }
    let transcript = whisper
        .transcriber
        .transcribe(&samples, &windows, options, |_| {})
        .await?;
    Ok(transcript.text().trim().to_string())
}
