//! The global dictation shortcut: pressed in any app, it starts dictating; pressed
//! again, it stops, and the text goes to the clipboard for the user to paste. Izwi
//! types into no other app (that would take a native input library per platform). The
//! shortcut is a setting, changed in Settings.

use std::sync::Arc;

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Manager, Wry};
use tauri_plugin_clipboard_manager::ClipboardExt;
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutState};

use crate::commands::dictate::{self, DictateEvent, DictateEvents};
use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The setting holding the shortcut, as typed (`CommandOrControl+Shift+Space`).
pub const DICTATION_SHORTCUT: &str = "dictation_shortcut";
pub const DEFAULT_SHORTCUT: &str = "CommandOrControl+Shift+Space";

/// The global-shortcut plugin, every shortcut it hears toggling dictation (the
/// dictation shortcut is the only one Izwi registers).
pub fn plugin() -> TauriPlugin<Wry> {
    tauri_plugin_global_shortcut::Builder::new()
        .with_handler(|app, _shortcut, event| {
            if event.state == ShortcutState::Pressed {
                toggle(app);
            }
        })
        .build()
}

/// A shortcut as the user typed it, checked: the text is kept as typed, so Settings
/// shows what the user wrote.
pub fn parse(text: &str) -> AppResult<Shortcut> {
    text.trim().parse::<Shortcut>().map_err(|e| {
        AppError::invalid(format!(
            "{text:?} is not a shortcut ({e}); write it as modifiers and a key, like {DEFAULT_SHORTCUT}"
        ))
    })
}

impl AppState {
    /// The dictation shortcut: the setting, else [`DEFAULT_SHORTCUT`].
    pub async fn dictation_shortcut(&self) -> String {
        self.runtime
            .setting::<String>(DICTATION_SHORTCUT)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| DEFAULT_SHORTCUT.to_string())
    }
}

/// Listens for the saved shortcut. One taken by another app, or a desktop where apps
/// cannot take global shortcuts (Wayland), is logged: the app runs without it.
pub async fn register_saved(app: &AppHandle) {
    let state = app.state::<AppState>();
    let text = state.dictation_shortcut().await;
    let registered = parse(&text).and_then(|shortcut| {
        app.global_shortcut()
            .register(shortcut)
            .map_err(|e| AppError::invalid(e.to_string()))
    });
    match registered {
        Ok(()) => tracing::info!(shortcut = text, "listening for the dictation shortcut"),
        Err(e) => {
            tracing::warn!(shortcut = text, error = %e, "the dictation shortcut is not listened for")
        }
    }
}

/// Makes `text` the dictation shortcut: listened for at once, then saved. One that
/// cannot be taken (another app has it) changes nothing.
pub async fn set(app: &AppHandle, text: String) -> AppResult<String> {
    let text = text.trim().to_string();
    let new = parse(&text)?;
    let state = app.state::<AppState>();
    let old = parse(&state.dictation_shortcut().await).ok();
    // Also the same shortcut again: one that could not be taken at start is tried anew.
    let shortcuts = app.global_shortcut();
    if !shortcuts.is_registered(new) {
        shortcuts
            .register(new)
            .map_err(|e| AppError::invalid(format!("{text} cannot be used: {e}")))?;
    }
    if let Some(old) = old.filter(|old| *old != new && shortcuts.is_registered(*old)) {
        if let Err(e) = shortcuts.unregister(old) {
            tracing::warn!(error = %e, "the old dictation shortcut is still listened for");
        }
    }
    state.runtime.set_setting(DICTATION_SHORTCUT, &text).await?;
    Ok(text)
}

/// Starts dictating, or stops the dictation under way; the text of a dictation the
/// shortcut started goes to the clipboard when it ends.
fn toggle(app: &AppHandle) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    if state.stop_dictation() {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let webview = dictate::to_webview(app.clone());
        let clipboard = app.clone();
        let to_page = webview.clone();
        let events: DictateEvents = Arc::new(move |event| {
            if let DictateEvent::Stopped {
                text, error: None, ..
            } = &event
            {
                if !text.is_empty() {
                    if let Err(e) = clipboard.clipboard().write_text(text.as_str()) {
                        tracing::warn!(error = %e, "the dictation could not go to the clipboard");
                    }
                }
            }
            to_page(event);
        });
        let state = app.state::<AppState>();
        if let Err(e) = state.start_dictation(None, None, None, events).await {
            // The Dictate screen says why, as for a dictation that failed.
            webview(DictateEvent::Stopped {
                job_id: None,
                text: String::new(),
                error: Some(e.message),
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcuts_are_checked_and_a_bad_one_is_named() {
        assert!(parse(DEFAULT_SHORTCUT).is_ok());
        assert!(parse(" Alt+F9 ").is_ok());
        let e = parse("Ctrl+Nope").unwrap_err();
        assert!(e.message.contains("\"Ctrl+Nope\" is not a shortcut"), "{e}");
    }
}
