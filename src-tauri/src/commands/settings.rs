//! Settings: where data lives, the default model, the theme, the device models run on,
//! the dictation shortcut.

use izwi_runtime::{Runtime, DEFAULT_TRANSCRIBE_MODEL};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, State};

use crate::error::AppResult;
use crate::state::AppState;

/// The setting holding the UI's theme.
pub const THEME: &str = "theme";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct Settings {
    /// Izwi's data folder: the database and imported models.
    pub data_dir: String,
    /// The Hugging Face cache downloads go into.
    pub hf_cache_dir: String,
    /// The model transcription uses when none is chosen; None falls back to the first
    /// installed Whisper model.
    pub default_transcribe_model: Option<String>,
    pub theme: Theme,
    /// Where models run now: `cpu`, `cuda:0`, `metal`.
    pub device: String,
    /// The backends this build supports.
    pub devices: Vec<String>,
    /// The most characters one Speak request takes (the runtime's limit).
    pub speak_max_chars: u32,
    /// The global shortcut that starts and stops dictation from any app.
    pub dictation_shortcut: String,
}

impl AppState {
    pub async fn get_settings(&self) -> AppResult<Settings> {
        let runtime = &self.runtime;
        Ok(Settings {
            data_dir: runtime.data_dir().display().to_string(),
            hf_cache_dir: runtime.hf_cache_dir().display().to_string(),
            default_transcribe_model: runtime.setting(DEFAULT_TRANSCRIBE_MODEL).await?,
            // A theme this build does not know reads as the default.
            theme: runtime
                .setting(THEME)
                .await
                .ok()
                .flatten()
                .unwrap_or_default(),
            device: runtime.device(),
            devices: Runtime::built_devices(),
            speak_max_chars: izwi_runtime::MAX_SPEAK_CHARS as u32,
            dictation_shortcut: self.dictation_shortcut().await,
        })
    }

    /// Sets the model transcription uses when none is chosen; None clears it.
    pub async fn set_default_model(&self, id: Option<String>) -> AppResult<()> {
        if let Some(id) = &id {
            self.listed_model(id, "default transcription model")?;
        }
        Ok(self
            .runtime
            .set_default_transcribe_model(id.as_deref())
            .await?)
    }

    pub async fn set_theme(&self, theme: Theme) -> AppResult<()> {
        Ok(self.runtime.set_setting(THEME, &theme).await?)
    }
}

#[tauri::command]
#[specta::specta]
pub async fn get_settings(state: State<'_, AppState>) -> AppResult<Settings> {
    state.get_settings().await
}

#[tauri::command]
#[specta::specta]
pub async fn set_default_model(state: State<'_, AppState>, id: Option<String>) -> AppResult<()> {
    state.set_default_model(id).await
}

#[tauri::command]
#[specta::specta]
pub async fn set_theme(state: State<'_, AppState>, theme: Theme) -> AppResult<()> {
    state.set_theme(theme).await
}

/// Makes `shortcut` (`CommandOrControl+Shift+Space`) the global dictation shortcut;
/// returns it as saved. Refused when it is not a shortcut or another app holds it.
#[tauri::command]
#[specta::specta]
pub async fn set_dictation_shortcut(app: AppHandle, shortcut: String) -> AppResult<String> {
    crate::shortcut::set(&app, shortcut).await
}
