//! Voices: the library (a preset per installed Piper model, and the user's own on the
//! same models), renaming, settings, deleting, and a short preview of how one sounds.
//! Preset voices are downloaded like any model (`download_model`). Qwen3-TTS voices are
//! cloned from a recording (Base models) or designed from a description (VoiceDesign).

use izwi_runtime::{CloneVoiceRequest, ClonedVoice, SpeechClip, VoiceInfo, VoiceSettings};
use serde::{Deserialize, Serialize};
use tauri::State;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The longest voice name, in characters.
pub const VOICE_NAME_MAX_CHARS: usize = 80;

/// Names are shown in pickers: one line, not blank, not a paragraph.
fn voice_name(name: &str) -> AppResult<String> {
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    if name.is_empty() {
        return Err(AppError::invalid("give the voice a name"));
    }
    if name.chars().count() > VOICE_NAME_MAX_CHARS {
        return Err(AppError::invalid(format!(
            "that name is too long: keep it to {VOICE_NAME_MAX_CHARS} characters"
        )));
    }
    Ok(name)
}

/// A Qwen3-TTS checkpoint's variant, as its config.json's `tts_model_type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Qwen3Variant {
    /// Clones voices from a recording.
    Base,
    /// Speaks with preset speakers.
    CustomVoice,
    /// Makes voices from a description.
    VoiceDesign,
}

impl Qwen3Variant {
    fn config_name(self) -> &'static str {
        match self {
            Qwen3Variant::Base => "base",
            Qwen3Variant::CustomVoice => "custom_voice",
            Qwen3Variant::VoiceDesign => "voice_design",
        }
    }
}

impl AppState {
    /// The library, oldest first; every installed Piper model has at least one voice.
    pub async fn list_voices(&self) -> AppResult<Vec<VoiceInfo>> {
        Ok(self.runtime.list_voices().await?)
    }

    /// A new voice on a Piper model with its own name and settings.
    pub async fn add_voice(
        &self,
        model_id: String,
        name: String,
        settings: VoiceSettings,
    ) -> AppResult<VoiceInfo> {
        let name = voice_name(&name)?;
        self.listed_model(&model_id, "voice model")?;
        Ok(self.runtime.add_voice(&model_id, &name, settings).await?)
    }

    /// Renames a voice; returns it as listed now.
    pub async fn rename_voice(&self, id: i64, name: String) -> AppResult<VoiceInfo> {
        let name = voice_name(&name)?;
        self.runtime.rename_voice(id, &name).await?;
        self.voice(id).await
    }

    /// Changes how a voice speaks; returns it as listed now.
    pub async fn update_voice_settings(
        &self,
        id: i64,
        settings: VoiceSettings,
    ) -> AppResult<VoiceInfo> {
        self.runtime.update_voice_settings(id, settings).await?;
        self.voice(id).await
    }

    /// Deletes a voice (not the last one of an installed model: remove the model).
    pub async fn delete_voice(&self, id: i64) -> AppResult<()> {
        Ok(self.runtime.delete_voice(id).await?)
    }

    /// A few seconds of a voice (a stock line when `text` is None or blank), as samples
    /// for the UI to play; no job, no file.
    pub async fn preview_voice(
        &self,
        voice: String,
        text: Option<String>,
    ) -> AppResult<SpeechClip> {
        let text = text.filter(|t| !t.trim().is_empty());
        let voice = self.checked_voice(voice).await?;
        Ok(self.runtime.preview_voice(&voice, text).await?)
    }

    /// A voice cloned from a recording the user chose, with a Qwen3-TTS Base model; a
    /// blank `text` lets Whisper transcribe it. Returns the voice and where its
    /// transcript came from.
    pub async fn clone_voice(
        &self,
        name: String,
        model_id: String,
        audio: String,
        text: Option<String>,
    ) -> AppResult<ClonedVoice> {
        let name = voice_name(&name)?;
        self.listed_model(&model_id, "Qwen3-TTS model")?;
        let audio = self.chosen.readable(&audio, "the recording")?;
        let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let request = CloneVoiceRequest {
            name,
            model_id,
            audio,
            text,
        };
        Ok(self.runtime.clone_voice(request).await?)
    }

    /// A voice designed from a description with a Qwen3-TTS VoiceDesign model.
    pub async fn design_voice(
        &self,
        name: String,
        model_id: String,
        description: String,
    ) -> AppResult<VoiceInfo> {
        let name = voice_name(&name)?;
        self.listed_model(&model_id, "Qwen3-TTS model")?;
        let description = description.trim();
        if description.is_empty() {
            return Err(AppError::invalid("describe the voice"));
        }
        Ok(self
            .runtime
            .design_voice(&name, &model_id, description)
            .await?)
    }

    /// The installed Qwen3-TTS models of a variant, by id: what a dialog offers.
    pub fn qwen3_models(&self, variant: Qwen3Variant) -> Vec<String> {
        self.runtime.qwen3_models(variant.config_name())
    }

    async fn voice(&self, id: i64) -> AppResult<VoiceInfo> {
        self.list_voices()
            .await?
            .into_iter()
            .find(|v| v.id == id)
            .ok_or_else(|| AppError::not_found(format!("voice {id} does not exist")))
    }
}

#[tauri::command]
#[specta::specta]
pub async fn list_voices(state: State<'_, AppState>) -> AppResult<Vec<VoiceInfo>> {
    state.list_voices().await
}

#[tauri::command]
#[specta::specta]
pub async fn add_voice(
    state: State<'_, AppState>,
    model_id: String,
    name: String,
    settings: VoiceSettings,
) -> AppResult<VoiceInfo> {
    state.add_voice(model_id, name, settings).await
}

#[tauri::command]
#[specta::specta]
pub async fn rename_voice(
    state: State<'_, AppState>,
    id: i64,
    name: String,
) -> AppResult<VoiceInfo> {
    state.rename_voice(id, name).await
}

#[tauri::command]
#[specta::specta]
pub async fn update_voice_settings(
    state: State<'_, AppState>,
    id: i64,
    settings: VoiceSettings,
) -> AppResult<VoiceInfo> {
    state.update_voice_settings(id, settings).await
}

#[tauri::command]
#[specta::specta]
pub async fn delete_voice(state: State<'_, AppState>, id: i64) -> AppResult<()> {
    state.delete_voice(id).await
}

#[tauri::command]
#[specta::specta]
pub async fn preview_voice(
    state: State<'_, AppState>,
    voice: String,
    text: Option<String>,
) -> AppResult<SpeechClip> {
    state.preview_voice(voice, text).await
}

#[tauri::command]
#[specta::specta]
pub async fn clone_voice(
    state: State<'_, AppState>,
    name: String,
    model_id: String,
    audio: String,
    text: Option<String>,
) -> AppResult<ClonedVoice> {
    state.clone_voice(name, model_id, audio, text).await
}

#[tauri::command]
#[specta::specta]
pub async fn design_voice(
    state: State<'_, AppState>,
    name: String,
    model_id: String,
    description: String,
) -> AppResult<VoiceInfo> {
    state.design_voice(name, model_id, description).await
}

#[tauri::command]
#[specta::specta]
pub async fn qwen3_models(
    state: State<'_, AppState>,
    variant: Qwen3Variant,
) -> AppResult<Vec<String>> {
    Ok(state.qwen3_models(variant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_trimmed_line() {
        assert_eq!(voice_name("  Joe \n slow ").unwrap(), "Joe slow");
        assert_eq!(
            voice_name(" \t").unwrap_err().kind,
            crate::error::ErrorKind::Invalid
        );
        assert!(voice_name(&"x".repeat(81)).is_err());
    }
}
