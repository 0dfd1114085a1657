//! History: jobs and what each made (by kind), transcripts with their segments and
//! corrections, full-text search, export.

use std::path::Path;

use izwi_runtime::{
    BatchLineStatus, ExportFormat, Job, JobDetail, JobFilter, SearchHit, SegmentRecord,
    TranscriptRecord,
};
use serde::{Deserialize, Serialize};
use tauri::State;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// A transcript with its segments in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct TranscriptView {
    pub record: TranscriptRecord,
    pub segments: Vec<SegmentRecord>,
}

impl AppState {
    pub async fn list_jobs(&self, filter: JobFilter) -> AppResult<Vec<Job>> {
        Ok(self.runtime.jobs(&filter).await?)
    }

    /// Deletes a job and its transcript, cancelling it first if it runs.
    pub async fn delete_job(&self, job_id: i64) -> AppResult<()> {
        Ok(self.runtime.delete_job(job_id).await?)
    }

    /// The transcript a job made, None while it has none (queued, running, failed).
    /// The source file becomes playable in the webview.
    pub async fn get_transcript(&self, job_id: i64) -> AppResult<Option<TranscriptView>> {
        let Some(record) = self.runtime.transcript_for_job(job_id).await? else {
            return Ok(None);
        };
        let (record, segments) = self.runtime.transcript(record.id).await?;
        // The app's own history names the file: it may be played and its waveform read.
        let source = Path::new(&record.source_path);
        if source.is_file() {
            self.chosen.allow_read(source);
            self.allow_asset(source);
        }
        Ok(Some(TranscriptView { record, segments }))
    }

    /// A job with what it made, in the shape of its kind. Its recordings (a speech
    /// job's WAV, a batch's WAVs) become playable in the webview.
    pub async fn get_job_detail(&self, job_id: i64) -> AppResult<JobDetail> {
        let detail = self.runtime.job_detail(job_id).await?;
        match &detail {
            JobDetail::Transcript(_) | JobDetail::Chat(_) => {}
            JobDetail::Speech(speech) => {
                if let (Some(path), true) = (&speech.audio_path, speech.audio_exists) {
                    self.allow_asset(Path::new(path));
                }
            }
            JobDetail::Batch(batch) => {
                let made = batch
                    .lines
                    .iter()
                    .filter(|l| l.status == BatchLineStatus::Made);
                for file in made.filter_map(|l| l.file.as_deref()) {
                    self.allow_asset(Path::new(file));
                }
            }
        }
        Ok(detail)
    }

    /// Corrects a segment's text (the original is kept); returns the segment.
    pub async fn edit_segment(
        &self,
        transcript_id: i64,
        idx: i64,
        text: String,
    ) -> AppResult<SegmentRecord> {
        Ok(self.runtime.edit_segment(transcript_id, idx, &text).await?)
    }

    /// Puts back what the model heard; returns the segment.
    pub async fn revert_segment(&self, transcript_id: i64, idx: i64) -> AppResult<SegmentRecord> {
        Ok(self.runtime.revert_segment(transcript_id, idx).await?)
    }

    pub async fn search_transcripts(&self, text: String, limit: i64) -> AppResult<Vec<SearchHit>> {
        Ok(self.runtime.search(&text, limit.clamp(1, 1000)).await?)
    }

    /// A job's transcript as `format`. With a path (one the user chose in a save
    /// dialog) it is written there, atomically, and the path is returned; without, the
    /// text is.
    pub async fn export_transcript(
        &self,
        job_id: i64,
        format: ExportFormat,
        path: Option<String>,
    ) -> AppResult<String> {
        // The destination is checked first: a path the user did not choose is refused
        // whatever the job.
        let path = path
            .map(|p| self.chosen.writable(&p, "where to save the transcript"))
            .transpose()?;
        let record = self
            .runtime
            .transcript_for_job(job_id)
            .await?
            .ok_or_else(|| AppError::not_found(format!("job {job_id} has no transcript")))?;
        match path {
            None => Ok(self.runtime.export_transcript(record.id, format).await?),
            Some(path) => {
                self.runtime
                    .export_transcript_to(record.id, format, &path)
                    .await?;
                Ok(path.display().to_string())
            }
        }
    }
}

#[tauri::command]
#[specta::specta]
pub async fn list_jobs(state: State<'_, AppState>, filter: JobFilter) -> AppResult<Vec<Job>> {
    state.list_jobs(filter).await
}

#[tauri::command]
#[specta::specta]
pub async fn delete_job(state: State<'_, AppState>, job_id: i64) -> AppResult<()> {
    state.delete_job(job_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn get_transcript(
    state: State<'_, AppState>,
    job_id: i64,
) -> AppResult<Option<TranscriptView>> {
    state.get_transcript(job_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn get_job_detail(state: State<'_, AppState>, job_id: i64) -> AppResult<JobDetail> {
    state.get_job_detail(job_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn edit_segment(
    state: State<'_, AppState>,
    transcript_id: i64,
    idx: i64,
    text: String,
) -> AppResult<SegmentRecord> {
    state.edit_segment(transcript_id, idx, text).await
}

#[tauri::command]
#[specta::specta]
pub async fn revert_segment(
    state: State<'_, AppState>,
    transcript_id: i64,
    idx: i64,
) -> AppResult<SegmentRecord> {
    state.revert_segment(transcript_id, idx).await
}

#[tauri::command]
#[specta::specta]
pub async fn search_transcripts(
    state: State<'_, AppState>,
    text: String,
    limit: i64,
) -> AppResult<Vec<SearchHit>> {
    state.search_transcripts(text, limit).await
}

#[tauri::command]
#[specta::specta]
pub async fn export_transcript(
    state: State<'_, AppState>,
    job_id: i64,
    format: ExportFormat,
    path: Option<String>,
) -> AppResult<String> {
    state.export_transcript(job_id, format, path).await
}
