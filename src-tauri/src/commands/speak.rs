//! Speech: text in a voice to a WAV (each sentence streamed as `speech_audio` events for
//! the UI to play while the rest are made), saving it elsewhere, batches of lines to a
//! folder of WAVs (`batch_line_done` per line), reading a script's lines, and showing a
//! finished batch's folder.

use std::path::{Path, PathBuf};

use izwi_runtime::{Job, JobKind, SpeakBatchRequest, SpeakRequest, MANIFEST_NAME};
use tauri::State;

use super::models::blocking;
use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// An absolute path the user chose in a dialog; relative ones would land in whatever
/// folder the app happened to start in.
fn chosen_path(path: &str, what: &str) -> AppResult<PathBuf> {
    let path = PathBuf::from(path.trim());
    if path.as_os_str().is_empty() {
        return Err(AppError::invalid(format!("choose {what}")));
    }
    if !path.is_absolute() {
        return Err(AppError::invalid(format!(
            "{} is not a full path: choose {what} in the dialog",
            path.display()
        )));
    }
    Ok(path)
}

impl AppState {
    /// Queues `text` in `voice` (a library voice's id or name, or a voice model's id).
    /// The WAV goes to the data folder; [`AppState::save_speech`] copies it elsewhere.
    pub async fn speak(&self, voice: String, text: String, speed: Option<f32>) -> AppResult<Job> {
        Ok(self
            .runtime
            .speak(SpeakRequest {
                voice,
                text,
                output: None,
                speed,
            })
            .await?)
    }

    /// Saves a finished speak job's WAV to `path` (atomically); returns the path.
    pub async fn save_speech(&self, job_id: i64, path: String) -> AppResult<String> {
        let mut path = chosen_path(&path, "where to save the WAV")?;
        if path.extension().is_none() {
            path.set_extension("wav");
        }
        self.runtime.save_speech(job_id, &path).await?;
        Ok(path.display().to_string())
    }

    /// Queues a batch: one WAV per line, numbered, plus `manifest.csv`, in `output_dir`.
    pub async fn speak_batch(
        &self,
        voice: String,
        lines: Vec<String>,
        output_dir: String,
        speed: Option<f32>,
    ) -> AppResult<Job> {
        let output_dir = chosen_path(&output_dir, "a folder for the WAV files")?;
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
            })
            .await?)
    }

    /// The lines of a script: a .csv's `text` column (else its first), or a text
    /// file's non-blank lines.
    pub async fn read_lines(&self, path: String) -> AppResult<Vec<String>> {
        let path = chosen_path(&path, "a .txt or .csv file")?;
        blocking(move || Ok(izwi_runtime::read_lines(&path)?)).await
    }

    /// What to show for a batch job: its manifest when there is one (the file manager
    /// opens the folder with it selected), else the folder. Only batch jobs' folders:
    /// the webview cannot open arbitrary paths through this.
    pub async fn batch_output(&self, job_id: i64) -> AppResult<PathBuf> {
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
        let manifest = dir.join(MANIFEST_NAME);
        Ok(if manifest.is_file() { manifest } else { dir })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialog_paths_must_be_absolute() {
        assert!(chosen_path("", "a folder").is_err());
        assert!(chosen_path("out/x.wav", "a file").is_err());
        let abs = std::env::temp_dir().join("x.wav");
        assert_eq!(
            chosen_path(&abs.display().to_string(), "a file").unwrap(),
            abs
        );
    }
}
