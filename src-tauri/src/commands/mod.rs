//! The commands the UI calls. Each parses its arguments, calls the runtime through
//! [`AppState`](crate::state::AppState) and maps errors to [`AppError`](crate::error::AppError).
//! The work is in `AppState` methods of the same names, so tests drive the very same
//! code without a webview; the `#[tauri::command]` functions only unwrap `State`.

pub mod api_server;
pub mod backend;
pub mod chat;
pub mod choose;
pub mod dictate;
pub mod history;
pub mod models;
pub mod settings;
pub mod speak;
pub mod transcribe;
pub mod voice_sample;
pub mod voices;
