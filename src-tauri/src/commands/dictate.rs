//! Dictation: the microphone heard live, its partial and final text sent to the UI as
//! `DictateEvent`s, the whole saved to the history as a transcript with its recording
//! (izwi-runtime's `dictate_and_save`: the audio is on disk as it is heard). One
//! dictation at a time, started and stopped by the Dictate screen or the global
//! shortcut (crate::shortcut).

use std::sync::{Arc, Mutex};

use izwi_runtime::{
    microphone_chunks, CancellationToken, DictationEvent, DictationOptions, Microphone,
};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, State};
use tauri_specta::Event as _;

use crate::error::{AppError, AppResult, ErrorKind};
use crate::state::{lock, AppState};

/// What a dictation is doing, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DictateEvent {
    /// Recording from the microphone `input` as the history's job `job_id`.
    Listening { input: String, job_id: i64 },
    /// What was heard after the final text so far; replaces the previous partial.
    Partial { text: String },
    /// Confirmed text, in order; it never changes and replaces the partial it confirms.
    Final { text: String },
    /// The dictation ended: saved as `job_id` with all its final `text` (pieces joined
    /// by spaces), or ended by `error` (the recording stays; `job_id` is None when it
    /// failed before it began, or was stopped while the microphone opened).
    Stopped {
        job_id: Option<i64>,
        text: String,
        error: Option<String>,
    },
}

/// The app's one dictation place, emptied when dropped.
struct Slot(Arc<Mutex<Option<CancellationToken>>>);

impl Drop for Slot {
    fn drop(&mut self) {
        *lock(&self.0) = None;
    }
}

/// Where dictation events go: the webview, the clipboard, or a test's list.
pub type DictateEvents = Arc<dyn Fn(DictateEvent) + Send + Sync>;

impl AppState {
    /// Starts dictating from the microphone chosen in Chat's settings (else the
    /// system's) with `model_id` (None: the default transcription model). Refused while
    /// a dictation runs; a microphone that cannot be opened fails the start. What
    /// follows comes as events, up to `Stopped`.
    pub async fn start_dictation(
        &self,
        model_id: Option<String>,
        language: Option<String>,
        delay_ms: Option<u32>,
        events: DictateEvents,
    ) -> AppResult<()> {
        // The place is taken before anything is awaited, so a stop (the shortcut pressed
        // again) while the microphone opens cancels this start instead of racing it.
        let stop = {
            let mut dictation = lock(&self.dictation);
            if dictation.is_some() {
                return Err(AppError::invalid("a dictation is under way: stop it first"));
            }
            let stop = CancellationToken::new();
            *dictation = Some(stop.clone());
            stop
        };
        let slot = Slot(self.dictation.clone());
        let model_id = match model_id {
            Some(id) => {
                self.listed_model(&id, "dictation model")?;
                id
            }
            None => self.runtime.default_transcribe_model().await?,
        };
        let settings = self.runtime.chat_settings().await;
        let microphone = Microphone::open(settings.input_device.as_deref())
            .map_err(|e| AppError::new(ErrorKind::Audio, e.to_string()))?;
        if stop.is_cancelled() {
            events(DictateEvent::Stopped {
                job_id: None,
                text: String::new(),
                error: None,
            });
            return Ok(());
        }
        let input = microphone.name().to_string();
        let audio = microphone_chunks(microphone, stop.clone());
        let options = DictationOptions {
            language,
            delay_ms,
            ..DictationOptions::new(model_id)
        };
        let runtime = self.runtime.clone();
        tokio::spawn(async move {
            // Freed however this ends, a panic included.
            let _slot = slot;
            let job = Arc::new(Mutex::new(None));
            let (started, heard, known) = (events.clone(), events.clone(), job.clone());
            let on_job = move |job_id| {
                *lock(&known) = Some(job_id);
                started(DictateEvent::Listening { input, job_id })
            };
            let on_event = move |event: DictationEvent| {
                heard(match event {
                    DictationEvent::Partial(t) => DictateEvent::Partial { text: t.text },
                    DictationEvent::Final(t) => DictateEvent::Final { text: t.text },
                })
            };
            let saved = runtime
                .dictate_and_save(&options, audio, on_job, on_event)
                .await;
            // Stopped by the user or not, the microphone is closed now.
            stop.cancel();
            drop(_slot);
            events(match saved {
                Ok(saved) => DictateEvent::Stopped {
                    job_id: Some(saved.job_id),
                    text: saved
                        .text
                        .iter()
                        .map(|t| t.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    error: None,
                },
                Err(e) => DictateEvent::Stopped {
                    job_id: *lock(&job),
                    text: String::new(),
                    error: Some(e.to_string()),
                },
            });
        });
        Ok(())
    }

    /// Ends the dictation under way (what is still partial becomes final, and it is
    /// saved); false when none was.
    pub fn stop_dictation(&self) -> bool {
        match &*lock(&self.dictation) {
            Some(stop) => {
                stop.cancel();
                true
            }
            None => false,
        }
    }

    pub fn dictating(&self) -> bool {
        lock(&self.dictation).is_some()
    }
}

pub fn to_webview(app: AppHandle) -> DictateEvents {
    Arc::new(move |event: DictateEvent| {
        if let Err(e) = event.emit(&app) {
            tracing::warn!(error = %e, "could not send a dictation event to the webview");
        }
    })
}

/// Starts dictating; the text comes as `DictateEvent`s.
#[tauri::command]
#[specta::specta]
pub async fn start_dictation(
    app: AppHandle,
    state: State<'_, AppState>,
    model_id: Option<String>,
    language: Option<String>,
    delay_ms: Option<u32>,
) -> AppResult<()> {
    state
        .start_dictation(model_id, language, delay_ms, to_webview(app))
        .await
}

/// Ends the dictation; false when none was under way.
#[tauri::command]
#[specta::specta]
pub async fn stop_dictation(state: State<'_, AppState>) -> AppResult<bool> {
    Ok(state.stop_dictation())
}

/// Whether a dictation is under way (started here or by the shortcut).
#[tauri::command]
#[specta::specta]
pub async fn is_dictating(state: State<'_, AppState>) -> AppResult<bool> {
    Ok(state.dictating())
}
