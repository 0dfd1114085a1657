//! LFM2-Audio's built-in voices in the library: an installed model that can speak gets
//! its four (US and UK, male and female) as preset rows, made the first time the
//! library is listed after it was installed, as a Qwen3-TTS CustomVoice checkpoint's
//! speakers are. A row's speaker setting holds the voice's id (`us-male`, ...).

use std::path::Path;

use izwi_core::models::lfm2_audio::audio_out::AUDIO_DETOKENIZER_DIR;
use izwi_core::models::lfm2_audio::mimi::MIMI_FILE;
use izwi_core::models::lfm2_audio::Lfm2Voice;
use izwi_hub::{ModelInfo, ModelStatus};
use izwi_store::VoiceRecord;

use crate::runtime::Inner;
use crate::RuntimeError;

/// Whether an LFM2-Audio folder can turn frames into audio, from its files alone (what
/// `Lfm2Audio::can_speak` says once it is loaded): LFM2.5-Audio's detokenizer, or the
/// Mimi codec's file.
pub(crate) fn can_speak(dir: &Path) -> bool {
    dir.join(AUDIO_DETOKENIZER_DIR)
        .join("config.json")
        .is_file()
        || dir.join(MIMI_FILE).is_file()
}

/// The ids of the built-in voices, for messages.
pub(crate) fn voice_ids() -> String {
    Lfm2Voice::ALL.map(Lfm2Voice::id).join(", ")
}

impl Inner {
    /// Adds a preset row for each built-in voice of an installed LFM2-Audio model that
    /// can speak and has none; a name another voice has is followed by the model's.
    pub(crate) async fn add_lfm2_voices(
        &self,
        model: &ModelInfo,
        rows: &mut Vec<VoiceRecord>,
    ) -> Result<(), RuntimeError> {
        if model.status != ModelStatus::Installed {
            return Ok(());
        }
        let Ok(dir) = self.hub.model_dir(&model.id) else {
            return Ok(());
        };
        if !can_speak(&dir) {
            return Ok(());
        }
        let voices = Lfm2Voice::ALL
            .into_iter()
            .map(|voice| (voice.id().to_string(), voice.label().to_string()));
        self.add_speaker_presets(model, voices, rows).await
    }
}
