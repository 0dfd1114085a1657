//! Izwi's desktop app: a Tauri shell around izwi-runtime. Commands (in [`commands`])
//! parse, call the runtime and map errors; runtime events reach the webview as the
//! typed `RuntimeEvent`; the TypeScript bindings in `ui/src/bindings.ts` are generated
//! from these types by tauri-specta (`cargo test -p izwi-desktop --test bindings`).

pub mod chosen;
pub mod commands;
pub mod error;
pub mod events;
pub mod shortcut;
pub mod speech_audio;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tauri::{AppHandle, DragDropEvent, Manager, RunEvent, WebviewWindowBuilder};
use tauri_specta::{collect_commands, collect_events, Event as _};

use crate::commands::dictate::DictateEvent;
use crate::commands::voice_sample::VoiceSampleEvent;
use crate::events::{ChatEvent, FilesOpened, RuntimeEvent, WebviewEvents};
use crate::speech_audio::SpeechAudioStream;
use crate::state::{AllowAsset, AppState};

/// The first line of the generated bindings.
pub const BINDINGS_HEADER: &str =
    "// Generated from the Rust types of src-tauri by tauri-specta: do not edit.\n\
// Regenerate with `cargo test -p izwi-desktop --test bindings` (CI fails when it is stale).";

/// Every command and event the UI sees, with their types.
pub fn specta_builder() -> tauri_specta::Builder<tauri::Wry> {
    use commands::{
        api_server, backend, chat, choose, dictate, history, models, settings, speak, transcribe,
        voice_sample, voices,
    };
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            choose::choose_paths,
            choose::choose_save_path,
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
            api_server::get_api_server,
            api_server::start_api_server,
            api_server::stop_api_server,
            backend::get_remote_backend,
            backend::set_remote_backend,
            settings::set_dictation_shortcut,
            speak::speak,
            speak::stream_speech_audio,
            speak::save_speech,
            speak::speak_batch,
            speak::batch_checks,
            speak::retake_flagged,
            speak::read_lines,
            speak::show_batch_output,
            voices::list_voices,
            voices::add_voice,
            voices::rename_voice,
            voices::update_voice_settings,
            voices::delete_voice,
            voices::preview_voice,
            voices::clone_voice,
            voices::design_voice,
            voices::qwen3_models,
            voice_sample::start_voice_sample,
            voice_sample::stop_voice_sample,
            voice_sample::open_voice_sample,
            voice_sample::trim_voice_sample,
            voice_sample::transcribe_voice_sample,
            chat::list_chats,
            chat::get_chat_messages,
            chat::delete_chat,
            chat::list_audio_devices,
            chat::get_chat_settings,
            chat::set_chat_settings,
            chat::send_chat_message,
            chat::start_voice_chat,
            chat::set_talking,
            chat::stop_chat,
            dictate::start_dictation,
            dictate::stop_dictation,
            dictate::is_dictating,
        ])
        .events(collect_events![
            RuntimeEvent,
            FilesOpened,
            ChatEvent,
            DictateEvent,
            VoiceSampleEvent
        ])
        // Limits the UI shows and its test doubles obey, from the code that enforces them.
        .constant("VOICE_LIMITS", izwi_runtime::VOICE_LIMITS)
        .constant(
            "VOICE_NAME_MAX_CHARS",
            commands::voices::VOICE_NAME_MAX_CHARS,
        )
        .constant("MAX_MEDIA_FILES", izwi_runtime::MAX_MEDIA_FILES)
        .constant("END_SILENCE_MS_RANGE", izwi_runtime::END_SILENCE_MS_RANGE)
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

/// Paths dropped onto a window count as chosen. Tauri calls this before the webview's
/// drop handler can call a command with them (the event reaches the page first, but
/// its commands are handled after this returns, on the same thread).
fn register_drop(app: &AppHandle, event: &DragDropEvent) {
    if let DragDropEvent::Drop { paths, .. } = event {
        if let Some(state) = app.try_state::<AppState>() {
            for path in paths {
                state.chosen.allow_read(path);
            }
        }
    }
}

/// A second launch ("Open with" while Izwi runs) hands its files to this one: they
/// count as chosen, the page queues them, and the window comes to the front.
fn second_launch(app: &AppHandle, args: Vec<String>, cwd: String) {
    let files = state::files_from_args(args.into_iter().skip(1), Path::new(&cwd));
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    if files.is_empty() {
        return;
    }
    for file in &files {
        state.chosen.allow_read(file);
    }
    let files = files.iter().map(|p| p.display().to_string()).collect();
    if let Err(e) = FilesOpened(files).emit(app) {
        tracing::warn!(error = %e, "could not hand the opened files to the window");
    }
}

/// What the start-up failure dialog says: what failed (the app's own error, without
/// Tauri's wrapping of it), and what to do.
pub fn startup_failure_message(error: &tauri::Error) -> String {
    let what = match error {
        tauri::Error::Setup(inner) => inner.to_string(),
        other => other.to_string(),
    };
    format!(
        "{what}\n\nIf another Izwi is running, close it (or use that one) and start Izwi \
         again. Otherwise check that Izwi's data folder (~/.local/share/izwi, or the folder \
         IZWI_DATA_DIR names) can be written and the disk has free space."
    )
}

/// Says why Izwi could not start in a native dialog (and on stderr), then exits with
/// status 1.
fn fail_to_start(error: &tauri::Error) -> ! {
    let message = startup_failure_message(error);
    eprintln!("Izwi could not start: {message}");
    rfd::MessageDialog::new()
        .set_level(rfd::MessageLevel::Error)
        .set_title("Izwi could not start")
        .set_description(&message)
        .set_buttons(rfd::MessageButtons::Ok)
        .show();
    std::process::exit(1);
}

pub fn run() {
    izwi_runtime::tune_for_inference();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let builder = specta_builder();
    let cwd = std::env::current_dir().unwrap_or_default();
    let opened_files = state::files_from_args(std::env::args().skip(1), &cwd);

    let app = tauri::Builder::default()
        // First: a second launch must reach this one before anything else starts.
        .plugin(tauri_plugin_single_instance::init(|app, args, cwd| {
            second_launch(app, args, cwd)
        }))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(shortcut::plugin())
        .invoke_handler(builder.invoke_handler())
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::DragDrop(drop) = event {
                register_drop(window.app_handle(), drop);
            }
        })
        .on_webview_event(|webview, event| {
            if let tauri::WebviewEvent::DragDrop(drop) = event {
                register_drop(webview.app_handle(), drop);
            }
        })
        .setup(move |app| {
            builder.mount_events(app);
            let data_dir = data_dir(app)?;
            let handle = app.handle().clone();
            let speech_audio = SpeechAudioStream::default();
            app.manage(speech_audio.clone());
            let api_events = Arc::new(izwi_server::ServerEvents::new());
            let events = Arc::new(WebviewEvents::new(
                handle.clone(),
                speech_audio,
                api_events.clone(),
            ));
            let allow_asset: AllowAsset = Box::new(move |path| {
                if let Err(e) = handle.asset_protocol_scope().allow_file(path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot play this file");
                }
            });
            let state = tauri::async_runtime::block_on(AppState::open(
                data_dir,
                events,
                api_events,
                opened_files,
                allow_asset,
            ))?;
            tracing::info!(
                data_dir = %state.runtime.data_dir().display(),
                device = state.runtime.device(),
                "Izwi is ready"
            );
            app.manage(state);
            tauri::async_runtime::block_on(shortcut::register_saved(app.handle()));
            // The window opens once the state is there, so no command can come first.
            for window in app.config().app.windows.clone() {
                WebviewWindowBuilder::from_config(app.handle(), &window)?.build()?;
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .unwrap_or_else(|e| fail_to_start(&e));

    app.run(|app, event| {
        if let RunEvent::Exit = event {
            // Jobs still running end `cancelled` now rather than `interrupted` later.
            if let Some(state) = app.try_state::<AppState>() {
                tauri::async_runtime::block_on(state.runtime.shutdown());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_failure_says_what_failed_and_what_to_do() {
        let held = izwi_runtime::RuntimeError::InvalidRequest(
            "another Izwi is using the data folder /home/ada/.local/share/izwi".into(),
        );
        let error = tauri::Error::Setup((Box::new(held) as Box<dyn std::error::Error>).into());
        let message = startup_failure_message(&error);
        assert!(
            message.starts_with("another Izwi is using the data folder /home/ada"),
            "{message}"
        );
        assert!(message.contains("close it"), "{message}");
    }
}
