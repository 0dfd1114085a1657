//! Speech: text in a voice to a WAV (each sentence streamed as binary over the channel
//! the page opened with `stream_speech_audio`, to play while the rest are made), saving
//! it elsewhere, batches of lines to a folder of WAVs (`batch_line_done` per line),
//! reading a script's lines, and showing a finished batch's folder.

use std::path::{Path, PathBuf};

use izwi_runtime::{
    read_manifest, Job, JobKind, ManifestRow, RetakeRequest, SpeakBatchRequest, SpeakRequest,
    MANIFEST_NAME,
};
use tauri::ipc::Channel;
use tauri::State;

use super::models::blocking;
use crate::error::{AppError, AppResult};
use crate::speech_audio::{SpeechAudioFrame, SpeechAudioStream};
use crate::state::AppState;

impl AppState {
    /// Queues `text` in `voice` (a library voice's id or name, a voice model's id, or a
    /// Piper `.onnx` the user chose). The WAV goes to the data folder;
    /// [`AppState::save_speech`] copies it elsewhere.
    pub async fn speak(&self, voice: String, text: String, speed: Option<f32>) -> AppResult<Job> {
        let voice = self.checked_voice(voice).await?;
        Ok(self
            .runtime
            .speak(SpeakRequest {
                voice,
                text,
                output: None,
                replace: false,
                speed,
            })
            .await?)
    }

    /// Saves a finished speak job's WAV to `path`, the file the user chose in a save
    /// dialog (atomically); returns the path.
    pub async fn save_speech(&self, job_id: i64, path: String) -> AppResult<String> {
        let path = self.chosen.writable(&path, "where to save the WAV")?;
        self.runtime.save_speech(job_id, &path).await?;
        Ok(path.display().to_string())
    }

    /// Queues a batch: one WAV per line, numbered, plus `manifest.csv`, in `output_dir`,
    /// a folder the user chose for it.
    pub async fn speak_batch(
        &self,
        voice: String,
        lines: Vec<String>,
        output_dir: String,
        speed: Option<f32>,
    ) -> AppResult<Job> {
        let output_dir = self
            .chosen
            .writable(&output_dir, "a folder for the WAV files")?;
        let voice = self.checked_voice(voice).await?;
        let lines: Vec<String> = lines
            .into_iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        Ok(self
            .runtime
            .speak_batch(SpeakBatchRequest {
                voice,
                lines,
                output_dir,
                speed,
                max_wer: None,
            })
            .await?)
    }

    /// The lines of a script the user chose: a .csv's `text` column (else its first),
    /// or a text file's non-blank lines.
    pub async fn read_lines(&self, path: String) -> AppResult<Vec<String>> {
        let path = self.chosen.readable(&path, "a .txt or .csv file")?;
        blocking(move || Ok(izwi_runtime::read_lines(&path)?)).await
    }

    /// A voice given as a path must be one the user chose (the runtime would load any
    /// voice or model folder it is given); it goes on resolved. Library voices and the
    /// ids of listed models pass as they are.
    pub(crate) async fn checked_voice(&self, voice: String) -> AppResult<String> {
        let spec = voice.trim();
        let path = Path::new(spec);
        let looks_like_path = path.is_absolute() || spec.ends_with(".onnx") || path.exists();
        if !looks_like_path || self.is_listed_model(spec) {
            return Ok(voice);
        }
        let named = self
            .runtime
            .list_voices()
            .await?
            .iter()
            .any(|v| v.name.eq_ignore_ascii_case(spec));
        if named {
            return Ok(voice);
        }
        let path = self.chosen.readable(spec, "the voice's .onnx file")?;
        Ok(path.display().to_string())
    }

    /// What to show for a batch job: its manifest when there is one (the file manager
    /// opens the folder with it selected), else the folder. Only batch jobs' folders:
    /// the webview cannot open arbitrary paths through this.
    pub async fn batch_output(&self, job_id: i64) -> AppResult<PathBuf> {
        let dir = self.batch_dir(job_id).await?;
        let manifest = dir.join(MANIFEST_NAME);
        Ok(if manifest.is_file() { manifest } else { dir })
    }

    /// The manifest rows of a batch job's folder: each made line with what Whisper
    /// heard, its word error rate and whether it is flagged; none before a manifest.
    pub async fn batch_checks(&self, job_id: i64) -> AppResult<Vec<ManifestRow>> {
        let manifest = self.batch_dir(job_id).await?.join(MANIFEST_NAME);
        if !manifest.is_file() {
            return Ok(Vec::new());
        }
        blocking(move || Ok(read_manifest(&manifest)?)).await
    }

    /// Says a batch job's flagged lines again with `voice`, each with a new seed, into
    /// the same folder (the runtime's `retake_flagged`); a new job.
    pub async fn retake_flagged(
        &self,
        job_id: i64,
        voice: String,
        speed: Option<f32>,
    ) -> AppResult<Job> {
        let output_dir = self.batch_dir(job_id).await?;
        let voice = self.checked_voice(voice).await?;
        Ok(self
            .runtime
            .retake_flagged(RetakeRequest {
                voice,
                output_dir,
                speed,
                max_wer: None,
            })
            .await?)
    }

    /// A batch job's folder, while it is there; only batch jobs have one.
    async fn batch_dir(&self, job_id: i64) -> AppResult<PathBuf> {
        let job = self.runtime.job(job_id).await?;
        let dir = match (job.kind, &job.output) {
            (JobKind::SpeakBatch, Some(dir)) => PathBuf::from(dir),
            (JobKind::SpeakBatch, None) => PathBuf::from(&job.input),
            _ => {
                return Err(AppError::invalid(format!(
                    "job {job_id} is not a batch export"
                )))
            }
        };
        if !dir.is_dir() {
            return Err(AppError::not_found(format!(
                "{} is no longer there",
                dir.display()
            )));
        }
        Ok(dir)
    }
}

fn reveal(path: &Path) -> AppResult<()> {
    tauri_plugin_opener::reveal_item_in_dir(path).map_err(|e| {
        AppError::internal(format!(
            "could not open the file manager at {}: {e}",
            path.display()
        ))
    })
}

#[tauri::command]
#[specta::specta]
pub async fn speak(
    state: State<'_, AppState>,
    voice: String,
    text: String,
    speed: Option<f32>,
) -> AppResult<Job> {
    state.speak(voice, text, speed).await
}

/// Opens the channel speak jobs' audio arrives on, a binary frame per sentence
/// (src-tauri/src/speech_audio.rs); the page opens one when it loads, and a later one
/// replaces it.
#[tauri::command]
#[specta::specta]
pub fn stream_speech_audio(
    stream: State<'_, SpeechAudioStream>,
    channel: Channel<SpeechAudioFrame>,
) -> AppResult<()> {
    stream.open(channel);
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn save_speech(
    state: State<'_, AppState>,
    job_id: i64,
    path: String,
) -> AppResult<String> {
    state.save_speech(job_id, path).await
}

#[tauri::command]
#[specta::specta]
pub async fn batch_checks(state: State<'_, AppState>, job_id: i64) -> AppResult<Vec<ManifestRow>> {
    state.batch_checks(job_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn retake_flagged(
    state: State<'_, AppState>,
    job_id: i64,
    voice: String,
    speed: Option<f32>,
) -> AppResult<Job> {
    state.retake_flagged(job_id, voice, speed).await
}

#[tauri::command]
#[specta::specta]
pub async fn speak_batch(
    state: State<'_, AppState>,
    voice: String,
    lines: Vec<String>,
    output_dir: String,
    speed: Option<f32>,
) -> AppResult<Job> {
    state.speak_batch(voice, lines, output_dir, speed).await
}

#[tauri::command]
#[specta::specta]
pub async fn read_lines(state: State<'_, AppState>, path: String) -> AppResult<Vec<String>> {
    state.read_lines(path).await
}

/// Opens the file manager on a finished (or cancelled) batch's folder.
#[tauri::command]
#[specta::specta]
pub async fn show_batch_output(state: State<'_, AppState>, job_id: i64) -> AppResult<()> {
    let path = state.batch_output(job_id).await?;
    blocking(move || reveal(&path)).await
}
