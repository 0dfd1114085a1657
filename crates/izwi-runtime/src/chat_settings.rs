//! What voice chat remembers between sessions: the models it talks with and the
//! microphone and speaker the user chose. Kept in the store's settings, so the desktop
//! app and the CLI share them.

use serde::{Deserialize, Serialize};

use crate::{Runtime, RuntimeError};

/// The setting holding [`ChatSettings`].
const CHAT_SETTINGS: &str = "chat";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct ChatSettings {
    /// The chat model: an installed chat model's id.
    pub llm: Option<String>,
    /// The Whisper model that hears the user; None: the default transcription model.
    pub asr: Option<String>,
    /// The voice that speaks the replies: a library voice's name or id.
    pub voice: Option<String>,
    /// Speech-to-speech: an LFM2-Audio model's id that hears and answers aloud in
    /// place of `asr`, `llm` and `voice`; None: the cascade of those three.
    pub s2s: Option<String>,
    /// The microphone's id (`izwi devices`); None: the system's default.
    pub input_device: Option<String>,
    /// The speaker's id; None: the system's default.
    pub output_device: Option<String>,
    /// The pause, in milliseconds, that ends what the user says.
    pub end_silence_ms: u32,
    /// Whether speaking over a reply interrupts it (off for speakers the microphone hears).
    pub barge_in: bool,
}

impl Default for ChatSettings {
    fn default() -> Self {
        Self {
            llm: None,
            asr: None,
            voice: None,
            s2s: None,
            input_device: None,
            output_device: None,
            end_silence_ms: 500,
            barge_in: true,
        }
    }
}

/// The shortest and longest end-of-speech pause a user may set.
pub const END_SILENCE_MS_RANGE: (u32, u32) = (200, 3000);

impl Runtime {
    /// Voice chat's settings; the defaults when none were saved (or they are unreadable).
    pub async fn chat_settings(&self) -> ChatSettings {
        match self.setting::<ChatSettings>(CHAT_SETTINGS).await {
            Ok(Some(settings)) => settings,
            Ok(None) => ChatSettings::default(),
            Err(error) => {
                tracing::warn!(%error, "voice chat settings are unreadable; using the defaults");
                ChatSettings::default()
            }
        }
    }

    /// Saves voice chat's settings, after checking the models and the pause.
    pub async fn set_chat_settings(&self, settings: &ChatSettings) -> Result<(), RuntimeError> {
        let (low, high) = END_SILENCE_MS_RANGE;
        if !(low..=high).contains(&settings.end_silence_ms) {
            return Err(RuntimeError::InvalidRequest(format!(
                "the end-of-speech pause must be {low} to {high} ms, not {}",
                settings.end_silence_ms
            )));
        }
        if let Some(llm) = &settings.llm {
            self.chat_model_file(llm)?;
        }
        if let Some(asr) = &settings.asr {
            let model = self.model(asr)?;
            if model.task != izwi_hub::ModelTask::Transcribe {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{asr} is not a speech-to-text model"
                )));
            }
        }
        if let Some(s2s) = &settings.s2s {
            let model = self.model(s2s)?;
            if model.family != izwi_hub::Family::Lfm2Audio {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{s2s} is not an LFM2-Audio model: only those chat speech to speech"
                )));
            }
        }
        self.set_setting(CHAT_SETTINGS, settings).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_saved_by_an_older_build_keep_their_defaults() {
        let settings: ChatSettings = serde_json::from_str(r#"{"llm": "local/smol"}"#).unwrap();
        assert_eq!(settings.llm.as_deref(), Some("local/smol"));
        assert_eq!(settings.end_silence_ms, 500);
        assert!(settings.barge_in);
        assert_eq!(settings.s2s, None, "the cascade stays the default");
    }
}
