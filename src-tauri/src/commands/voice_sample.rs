//! The sample "Clone a voice" clones from: recorded from the microphone chosen in
//! Chat's settings (its level sent as `VoiceSampleEvent`s), or a file the user chose or
//! dropped; trimmed; and heard by Whisper. The work is izwi-runtime's (voice_sample).
//! One recording at a time.

use std::sync::{Arc, Mutex};

use izwi_runtime::{
    microphone_chunks, CancellationToken, Microphone, SampleTranscript, VoiceSample,
};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, State};
use tauri_specta::Event as _;

use crate::commands::models::blocking;
use crate::error::{AppError, AppResult, ErrorKind};
use crate::state::{lock, AppState};

/// A sample being recorded, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VoiceSampleEvent {
    /// How loud the microphone was over the last tenth of a second (0 to 1, RMS).
    Level { level: f32 },
    /// The recording ended: the `sample`, or the `error` that ended it.
    Stopped {
        sample: Option<VoiceSample>,
        error: Option<String>,
    },
}

pub type VoiceSampleEvents = Arc<dyn Fn(VoiceSampleEvent) + Send + Sync>;

/// The app's one recording place, emptied when dropped.
struct Slot(Arc<Mutex<Option<CancellationToken>>>);

impl Drop for Slot {
    fn drop(&mut self) {
        *lock(&self.0) = None;
    }
}

impl AppState {
    /// Starts recording a sample; it ends with `stop_voice_sample` (or at the longest a
    /// clone takes) and comes as a `Stopped` event.
    pub async fn start_voice_sample(&self, events: VoiceSampleEvents) -> AppResult<()> {
        let stop = {
            let mut recording = lock(&self.voice_sample);
            if recording.is_some() {
                return Err(AppError::invalid(
                    "a sample is being recorded: stop it first",
                ));
            }
            let stop = CancellationToken::new();
            *recording = Some(stop.clone());
            stop
        };
        let slot = Slot(self.voice_sample.clone());
        let settings = self.runtime.chat_settings().await;
        let microphone = Microphone::open(settings.input_device.as_deref())
            .map_err(|e| AppError::new(ErrorKind::Audio, e.to_string()))?;
        let audio = microphone_chunks(microphone, stop.clone());
        let runtime = self.runtime.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let level = events.clone();
            let recorded = runtime
                .record_voice_sample(audio, move |l| level(VoiceSampleEvent::Level { level: l }))
                .await;
            // Stopped by the user or at the limit: the microphone is closed now.
            stop.cancel();
            drop(_slot);
            events(match recorded {
                Ok(sample) => VoiceSampleEvent::Stopped {
                    sample: Some(sample),
                    error: None,
                },
                Err(e) => VoiceSampleEvent::Stopped {
                    sample: None,
                    error: Some(e.to_string()),
                },
            });
        });
        Ok(())
    }

    /// Ends the recording under way; false when none was.
    pub fn stop_voice_sample(&self) -> bool {
        match &*lock(&self.voice_sample) {
            Some(stop) => {
                stop.cancel();
                true
            }
            None => false,
        }
    }

    /// A file the user chose or dropped, as a sample: its length and waveform.
    pub async fn open_voice_sample(&self, path: String) -> AppResult<VoiceSample> {
        let path = self.chosen.readable(&path, "the recording")?;
        let runtime = self.runtime.clone();
        blocking(move || Ok(runtime.read_voice_sample(&path)?)).await
    }

    /// A new sample: `start_s` to `end_s` of `path`.
    pub async fn trim_voice_sample(
        &self,
        path: String,
        start_s: f64,
        end_s: f64,
    ) -> AppResult<VoiceSample> {
        let path = self.chosen.readable(&path, "the recording")?;
        let runtime = self.runtime.clone();
        blocking(move || Ok(runtime.trim_voice_sample(&path, start_s, end_s)?)).await
    }

    /// What Whisper hears in a sample, for the transcript field.
    pub async fn transcribe_voice_sample(&self, path: String) -> AppResult<SampleTranscript> {
        let path = self.chosen.readable(&path, "the recording")?;
        Ok(self.runtime.transcribe_voice_sample(&path).await?)
    }
}

fn to_webview(app: AppHandle) -> VoiceSampleEvents {
    Arc::new(move |event: VoiceSampleEvent| {
        if let Err(e) = event.emit(&app) {
            tracing::warn!(error = %e, "could not send a recording event to the webview");
        }
    })
}

#[tauri::command]
#[specta::specta]
pub async fn start_voice_sample(app: AppHandle, state: State<'_, AppState>) -> AppResult<()> {
    state.start_voice_sample(to_webview(app)).await
}

#[tauri::command]
#[specta::specta]
pub async fn stop_voice_sample(state: State<'_, AppState>) -> AppResult<bool> {
    Ok(state.stop_voice_sample())
}

#[tauri::command]
#[specta::specta]
pub async fn open_voice_sample(state: State<'_, AppState>, path: String) -> AppResult<VoiceSample> {
    state.open_voice_sample(path).await
}

#[tauri::command]
#[specta::specta]
pub async fn trim_voice_sample(
    state: State<'_, AppState>,
    path: String,
    start_s: f64,
    end_s: f64,
) -> AppResult<VoiceSample> {
    state.trim_voice_sample(path, start_s, end_s).await
}

#[tauri::command]
#[specta::specta]
pub async fn transcribe_voice_sample(
    state: State<'_, AppState>,
    path: String,
) -> AppResult<SampleTranscript> {
    state.transcribe_voice_sample(path).await
}
