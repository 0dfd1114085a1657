//! Transcription: files and folders in, one queued job per media file; cancelling;
//! the files the app was opened with; waveform peaks for the player.

use izwi_runtime::{Job, SkippedPath, Task, TranscribeRequest, MAX_MEDIA_FILES};
use serde::{Deserialize, Serialize};
use tauri::State;

use super::models::blocking;
use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// How to transcribe, as the UI sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct TranscribeOptions {
    /// None uses the default model (the setting, else the first installed Whisper).
    pub model_id: Option<String>,
    /// ISO code; None (or empty) detects it.
    pub language: Option<String>,
    pub task: Task,
    /// Segment timestamps from the model; without them a window is one segment.
    pub timestamps: bool,
    /// Beams per window; 1 decodes greedily.
    pub beam_size: u32,
    /// Text that primes names and spelling.
    pub initial_prompt: Option<String>,
    /// Each word's time too (highlighted as the audio plays).
    #[serde(default)]
    pub word_timestamps: bool,
    /// Voxtral Realtime only: how far its text runs behind the audio, in milliseconds;
    /// None takes the model's default.
    #[serde(default)]
    pub delay_ms: Option<u32>,
}

impl Default for TranscribeOptions {
    fn default() -> Self {
        Self {
            model_id: None,
            language: None,
            task: Task::Transcribe,
            timestamps: true,
            beam_size: 1,
            initial_prompt: None,
            word_timestamps: false,
            delay_ms: None,
        }
    }
}

/// What `transcribe_files` queued, and what it could not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct QueuedFiles {
    /// One job per media file, in path order.
    pub jobs: Vec<Job>,
    /// Folders that could not be read, with why; the rest was queued.
    pub skipped: Vec<SkippedPath>,
    /// Media files beyond the most one request queues, not queued.
    pub left_out: u32,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

impl AppState {
    /// Queues one job per media file among `paths` (files and folders the user chose;
    /// folders searched recursively, at most [`MAX_MEDIA_FILES`] files), and lets the
    /// webview play each file queued. Folders that cannot be read are skipped and
    /// reported, as is the number of files beyond the limit.
    pub async fn transcribe_files(
        &self,
        paths: Vec<String>,
        options: TranscribeOptions,
    ) -> AppResult<QueuedFiles> {
        if paths.is_empty() {
            return Err(AppError::invalid("no files to transcribe"));
        }
        let paths = paths
            .iter()
            .map(|p| self.chosen.readable(p, "the files to transcribe"))
            .collect::<AppResult<Vec<_>>>()?;
        let found =
            blocking(move || Ok(izwi_runtime::expand_media_paths(&paths, MAX_MEDIA_FILES)?))
                .await?;
        let model_id = match non_empty(options.model_id) {
            Some(id) => {
                self.listed_model(&id, "transcription model")?;
                id
            }
            None => self.runtime.default_job_transcribe_model().await?,
        };
        let mut jobs = Vec::with_capacity(found.files.len());
        for path in found.files {
            let mut request = TranscribeRequest::new(path, model_id.clone());
            request.language = non_empty(options.language.clone());
            request.task = options.task;
            request.timestamps = options.timestamps;
            request.beam_size = options.beam_size.clamp(1, 16) as usize;
            request.word_timestamps = options.word_timestamps;
            request.initial_prompt = non_empty(options.initial_prompt.clone());
            request.delay_ms = options.delay_ms;
            let path = request.path.clone();
            jobs.push(self.runtime.transcribe(request).await?);
            // The UI plays the file while it is transcribed.
            self.allow_asset(&path);
        }
        Ok(QueuedFiles {
            jobs,
            skipped: found.skipped,
            left_out: found.left_out,
        })
    }

    /// Stops a queued or running job; it ends `cancelled`.
    pub async fn cancel_job(&self, job_id: i64) -> AppResult<()> {
        Ok(self.runtime.cancel_job(job_id).await?)
    }

    /// Peak amplitude (0 to 1) per bucket of a media file the user chose (or the data
    /// folder holds), for the waveform `window` shows. A newer request of the same
    /// window stops this one, which then ends `cancelled`.
    pub async fn audio_peaks(
        &self,
        path: String,
        buckets: u32,
        window: &str,
    ) -> AppResult<Vec<f32>> {
        let token = self.start_peaks(window);
        let path = self.chosen.readable(&path, "the file")?;
        Ok(self
            .runtime
            .audio_peaks(&path, buckets as usize, token)
            .await?)
    }

    /// The files the app was opened with ("Open with Izwi", command-line arguments),
    /// the first time it is asked; then none.
    pub async fn take_opened_files(&self) -> AppResult<Vec<String>> {
        Ok(self
            .take_opened_files_once()
            .into_iter()
            .map(|p| p.display().to_string())
            .collect())
    }
}

#[tauri::command]
#[specta::specta]
pub async fn transcribe_files(
    state: State<'_, AppState>,
    paths: Vec<String>,
    options: TranscribeOptions,
) -> AppResult<QueuedFiles> {
    state.transcribe_files(paths, options).await
}

#[tauri::command]
#[specta::specta]
pub async fn cancel_job(state: State<'_, AppState>, job_id: i64) -> AppResult<()> {
    state.cancel_job(job_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn audio_peaks(
    state: State<'_, AppState>,
    window: tauri::Window,
    path: String,
    buckets: u32,
) -> AppResult<Vec<f32>> {
    state.audio_peaks(path, buckets, window.label()).await
}

#[tauri::command]
#[specta::specta]
pub async fn take_opened_files(state: State<'_, AppState>) -> AppResult<Vec<String>> {
    state.take_opened_files().await
}
