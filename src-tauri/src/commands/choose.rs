//! Choosing files and folders: native dialogs opened from Rust (tauri-plugin-dialog's
//! Rust API), so the webview never gets the plugin's own open/save commands, which add
//! every folder picked to the asset scope, recursively. What the user picks is recorded
//! in [`ChosenPaths`](crate::chosen::ChosenPaths): the commands that read or write a
//! path from the page accept only those.

use std::path::PathBuf;

use izwi_runtime::MEDIA_EXTENSIONS;
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::{DialogExt, FileDialogBuilder, FilePath};

use super::models::blocking;
use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// What the user is asked to choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Audio or video files to transcribe.
    MediaFiles,
    /// A folder of recordings to transcribe.
    MediaFolder,
    /// A model folder to import (Whisper, Hugging Face, CTranslate2 layout).
    ModelFolder,
    /// A model file to import: a Piper voice's `.onnx` or a chat model's `.gguf`.
    ModelFile,
    /// A script of lines for a batch: `.txt` or `.csv`.
    Script,
    /// An empty folder for a batch's WAV files.
    OutputFolder,
}

impl AppState {
    /// Records what a dialog returned as chosen, for reading or as a destination.
    pub fn register_choice(&self, pick: Choice, paths: &[PathBuf]) {
        for path in paths {
            match pick {
                Choice::OutputFolder => self.chosen.allow_write(path),
                _ => self.chosen.allow_read(path),
            }
        }
    }
}

/// A dialog over the main window (modal to it, where the platform supports that).
fn dialog<R: Runtime>(app: &AppHandle<R>, title: &str) -> FileDialogBuilder<R> {
    let dialog = app.dialog().file().set_title(title);
    match app.get_webview_window("main") {
        Some(window) => dialog.set_parent(&window),
        None => dialog,
    }
}

fn paths(picked: Option<Vec<FilePath>>) -> AppResult<Vec<PathBuf>> {
    picked
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            p.into_path()
                .map_err(|e| AppError::invalid(format!("that is not a file on this computer: {e}")))
        })
        .collect()
}

fn show<R: Runtime>(app: AppHandle<R>, pick: Choice) -> AppResult<Vec<PathBuf>> {
    let one = |p: Option<FilePath>| paths(p.map(|p| vec![p]));
    match pick {
        Choice::MediaFiles => paths(
            dialog(&app, "Choose audio or video files")
                .add_filter("Audio and video", MEDIA_EXTENSIONS)
                .add_filter("All files", &["*"])
                .blocking_pick_files(),
        ),
        Choice::MediaFolder => {
            one(dialog(&app, "Choose a folder of recordings").blocking_pick_folder())
        }
        Choice::ModelFolder => one(dialog(&app, "Choose a model folder").blocking_pick_folder()),
        Choice::ModelFile => one(dialog(
            &app,
            "Choose a Piper voice (.onnx) or a chat model (.gguf)",
        )
        .add_filter("Piper voice or chat model", &["onnx", "gguf"])
        .blocking_pick_file()),
        Choice::Script => one(dialog(&app, "Choose a script of lines")
            .add_filter("Text or CSV", &["txt", "csv"])
            .blocking_pick_file()),
        Choice::OutputFolder => {
            one(dialog(&app, "Choose an empty folder for the WAV files").blocking_pick_folder())
        }
    }
}

/// Opens a native dialog for `pick`; returns what the user chose (none when they
/// cancelled), now accepted by the commands that read or fill it.
#[tauri::command]
#[specta::specta]
pub async fn choose_paths(
    app: AppHandle,
    state: State<'_, AppState>,
    pick: Choice,
) -> AppResult<Vec<String>> {
    let picked = blocking(move || show(app, pick)).await?;
    state.register_choice(pick, &picked);
    Ok(picked.iter().map(|p| p.display().to_string()).collect())
}

/// Opens a native save dialog proposing `file_name` (its extension is the filter), in
/// the folder of `beside` when that is a file the user chose; returns the path chosen,
/// the one file the next save or export may write, or None when the user cancelled.
#[tauri::command]
#[specta::specta]
pub async fn choose_save_path(
    app: AppHandle,
    state: State<'_, AppState>,
    title: String,
    file_name: String,
    beside: Option<String>,
) -> AppResult<Option<String>> {
    let folder = beside
        .and_then(|b| state.chosen.readable(&b, "a file").ok())
        .and_then(|b| b.parent().map(PathBuf::from));
    let picked = blocking(move || {
        let extension = std::path::Path::new(&file_name)
            .extension()
            .map(|e| e.to_string_lossy().into_owned());
        let mut dialog = dialog(&app, &title).set_file_name(&file_name);
        if let Some(ext) = &extension {
            dialog = dialog.add_filter(ext.to_uppercase(), &[ext.as_str()]);
        }
        if let Some(folder) = folder {
            dialog = dialog.set_directory(folder);
        }
        paths(dialog.blocking_save_file().map(|p| vec![p]))
    })
    .await?;
    let Some(path) = picked.into_iter().next() else {
        return Ok(None);
    };
    state.chosen.allow_write(&path);
    Ok(Some(path.display().to_string()))
}
