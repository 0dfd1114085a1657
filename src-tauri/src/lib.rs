//! Izwi's desktop app: a Tauri shell around izwi-runtime. Commands (in [`commands`])
//! parse, call the runtime and map errors; runtime events reach the webview as the
//! typed `RuntimeEvent`; the TypeScript bindings in `ui/src/bindings.ts` are generated
//! from these types by tauri-specta (`cargo test -p izwi-desktop --test bindings`).

pub mod commands;
pub mod error;
pub mod events;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tauri::{Manager, RunEvent, WebviewWindowBuilder};
use tauri_specta::{collect_commands, collect_events};

use crate::events::{RuntimeEvent, WebviewEvents};
use crate::state::{AllowAsset, AppState};

/// The first line of the generated bindings.
pub const BINDINGS_HEADER: &str =
    "// Generated from the Rust types of src-tauri by tauri-specta: do not edit.\n\
// Regenerate with `cargo test -p izwi-desktop --test bindings` (CI fails when it is stale).";

/// Every command and event the UI sees, with their types.
pub fn specta_builder() -> tauri_specta::Builder<tauri::Wry> {
    use commands::{history, models, settings, speak, transcribe, voices};
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            models::list_models,
            models::download_model,
            models::cancel_download,
            models::remove_model,
            models::import_model,
            transcribe::transcribe_files,
            transcribe::cancel_job,
            transcribe::audio_peaks,
            transcribe::take_opened_files,
            history::list_jobs,
            history::delete_job,
            history::get_transcript,
            history::get_job_detail,
            history::edit_segment,
            history::revert_segment,
            history::search_transcripts,
            history::export_transcript,
            settings::get_settings,
            settings::set_default_model,
            settings::set_theme,
            speak::speak,
            speak::save_speech,
            speak::speak_batch,
            speak::read_lines,
            speak::show_batch_output,
            voices::list_voices,
            voices::add_voice,
            voices::rename_voice,
            voices::update_voice_settings,
            voices::delete_voice,
            voices::preview_voice,
        ])
        .events(collect_events![RuntimeEvent])
        // Ids, sizes and times stay far below 2^53.
        .dangerously_cast_bigints_to_number()
        // The runtime sends finite floats only: `number`, not `number | null`.
        .semantic_types(
            specta_typescript::semantic::Configuration::empty().enable_lossless_floats(),
        )
        // One TS type per Rust type: `Option` fields are `T | null` both ways.
        .disable_serde_phases()
}

/// Writes the TypeScript bindings to `path`.
pub fn export_bindings(path: &Path) -> Result<(), String> {
    specta_builder()
        .export(
            specta_typescript::Typescript::default().header(BINDINGS_HEADER),
            path,
        )
        .map_err(|e| e.to_string())
}

/// Izwi's data folder: `IZWI_DATA_DIR`, else the one the CLI uses too
/// (`~/.local/share/izwi`, `~/Library/Application Support/izwi`, `%APPDATA%\izwi`), so
/// models and history are shared.
fn data_dir(app: &tauri::App) -> tauri::Result<PathBuf> {
    match std::env::var_os("IZWI_DATA_DIR") {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Ok(app.path().data_dir()?.join("izwi")),
    }
}

pub fn run() {
    izwi_core::allocator::tune_for_inference();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let builder = specta_builder();
    let opened_files = state::files_from_args(std::env::args().skip(1));

    let app = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            let data_dir = data_dir(app)?;
            let handle = app.handle().clone();
            let events = Arc::new(WebviewEvents::new(handle.clone()));
            let allow_asset: AllowAsset = Box::new(move |path| {
                if let Err(e) = handle.asset_protocol_scope().allow_file(path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot play this file");
                }
            });
            let state = tauri::async_runtime::block_on(AppState::open(
                data_dir,
                events,
                opened_files,
                allow_asset,
            ))?;
            tracing::info!(
                data_dir = %state.runtime.data_dir().display(),
                device = state.runtime.device(),
                "Izwi is ready"
            );
            app.manage(state);
            // The window opens once the state is there, so no command can come first.
            for window in app.config().app.windows.clone() {
                WebviewWindowBuilder::from_config(app.handle(), &window)?.build()?;
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .expect("Izwi could not start");

    app.run(|app, event| {
        if let RunEvent::Exit = event {
            // Jobs still running end `cancelled` now rather than `interrupted` later.
            if let Some(state) = app.try_state::<AppState>() {
                tauri::async_runtime::block_on(state.runtime.shutdown());
            }
        }
    });
}
