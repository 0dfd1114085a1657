//! Jobs: one transcription or synthesis request and its life from queued to finished.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use crate::error::StoreError;
use crate::store::{now_ms, Store};

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Transcribe,
    Speak,
    SpeakBatch,
    /// A chat completion of the API: its reply is the job's output.
    Chat,
}

impl JobKind {
    /// The text stored in the database, the same as the serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Transcribe => "transcribe",
            JobKind::Speak => "speak",
            JobKind::SpeakBatch => "speak_batch",
            JobKind::Chat => "chat",
        }
    }

    pub(crate) fn from_db(text: &str) -> Result<JobKind, StoreError> {
        match text {
            "transcribe" => Ok(JobKind::Transcribe),
            "speak" => Ok(JobKind::Speak),
            "speak_batch" => Ok(JobKind::SpeakBatch),
            "chat" => Ok(JobKind::Chat),
            other => Err(StoreError::Corrupt(format!("unknown job kind {other:?}"))),
        }
    }
}

/// Where a job is in its life. `queued` → `running` → `done`; `failed` and `cancelled`
/// from either of the first two; `interrupted` when Izwi stopped while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
    Interrupted,
}

impl JobStatus {
    /// The text stored in the database, the same as the serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Interrupted => "interrupted",
        }
    }

    /// Whether the job has stopped for good (no status follows this one).
    pub fn is_finished(self) -> bool {
        !matches!(self, JobStatus::Queued | JobStatus::Running)
    }

    pub(crate) fn from_db(text: &str) -> Result<JobStatus, StoreError> {
        match text {
            "queued" => Ok(JobStatus::Queued),
            "running" => Ok(JobStatus::Running),
            "done" => Ok(JobStatus::Done),
            "failed" => Ok(JobStatus::Failed),
            "cancelled" => Ok(JobStatus::Cancelled),
            "interrupted" => Ok(JobStatus::Interrupted),
            other => Err(StoreError::Corrupt(format!("unknown job status {other:?}"))),
        }
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Measurements of a finished job, stored as JSON. Missing fields read as `None`, so
/// fields can be added later without touching old rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct JobMetrics {
    /// Length of the audio read or written.
    pub audio_seconds: Option<f64>,
    /// Wall-clock time the job took.
    pub processing_seconds: Option<f64>,
    /// Real-time factor: processing seconds per audio second.
    pub rtf: Option<f64>,
    /// Tokens the model produced.
    pub tokens: Option<u64>,
    /// Speech: milliseconds from the request to its first piece of audio.
    pub first_audio_ms: Option<u64>,
}

/// A job as stored. Times are unix milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Job {
    pub id: i64,
    pub kind: JobKind,
    pub status: JobStatus,
    pub model_id: Option<String>,
    /// What the job works on: a file path for transcription, text for speech.
    pub input: String,
    /// What it produced, e.g. an audio path relative to the data dir.
    pub output: Option<String>,
    pub params: serde_json::Value,
    pub error: Option<String>,
    /// 0 to 1.
    pub progress: f64,
    pub metrics: JobMetrics,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// What [`Store::create_job`] needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewJob {
    pub kind: JobKind,
    pub model_id: Option<String>,
    pub input: String,
    pub params: serde_json::Value,
}

/// Which jobs [`Store::list_jobs`] returns; `None` fields match everything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct JobFilter {
    pub kind: Option<JobKind>,
    pub status: Option<JobStatus>,
    /// At most this many jobs; negative for no limit.
    pub limit: i64,
    pub offset: i64,
}

impl Default for JobFilter {
    fn default() -> Self {
        JobFilter {
            kind: None,
            status: None,
            limit: 100,
            offset: 0,
        }
    }
}

/// A `jobs` row as SQLite returns it, before its text and JSON are checked.
#[derive(FromRow)]
struct JobRow {
    id: i64,
    kind: String,
    status: String,
    model_id: Option<String>,
    input: String,
    output: Option<String>,
    params: String,
    error: Option<String>,
    progress: f64,
    metrics: String,
    created_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
}

impl TryFrom<JobRow> for Job {
    type Error = StoreError;

    fn try_from(row: JobRow) -> Result<Job, StoreError> {
        Ok(Job {
            id: row.id,
            kind: JobKind::from_db(&row.kind)?,
            status: JobStatus::from_db(&row.status)?,
            model_id: row.model_id,
            input: row.input,
            output: row.output,
            params: serde_json::from_str(&row.params)?,
            error: row.error,
            progress: row.progress,
            metrics: serde_json::from_str(&row.metrics)?,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
        })
    }
}

// Each transition is one guarded UPDATE, so two callers racing on a job cannot both
// move it; when nothing changes, `refused` reads the row to say why.
impl Store {
    /// Records a new `queued` job.
    pub async fn create_job(&self, new: NewJob) -> Result<Job, StoreError> {
        let row: JobRow = sqlx::query_as(
            "INSERT INTO jobs (kind, status, model_id, input, params, created_at, session) \
             VALUES (?, 'queued', ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(new.kind.as_str())
        .bind(new.model_id)
        .bind(new.input)
        .bind(serde_json::to_string(&new.params)?)
        .bind(now_ms())
        .bind(&self.session.id)
        .fetch_one(&self.pool)
        .await?;
        row.try_into()
    }

    /// `queued` → `running`, stamping `started_at`.
    pub async fn start_job(&self, id: i64) -> Result<Job, StoreError> {
        let row: Option<JobRow> = sqlx::query_as(
            "UPDATE jobs SET status = 'running', started_at = ?, progress = 0 \
             WHERE id = ? AND status = 'queued' RETURNING *",
        )
        .bind(now_ms())
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        self.transitioned(id, JobStatus::Running, row).await
    }

    /// Sets the progress (clamped to 0..=1) of a `running` job. Does nothing to a job in
    /// any other status, so a late progress report cannot touch a finished job.
    pub async fn set_job_progress(&self, id: i64, progress: f64) -> Result<(), StoreError> {
        if progress.is_nan() {
            return Err(StoreError::InvalidInput("job progress is NaN".into()));
        }
        let changed =
            sqlx::query("UPDATE jobs SET progress = ? WHERE id = ? AND status = 'running'")
                .bind(progress.clamp(0.0, 1.0))
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
        if changed == 0 && self.job(id).await?.is_none() {
            return Err(StoreError::NotFound { what: "job", id });
        }
        Ok(())
    }

    /// `running` → `done`, with what the job produced and how it went.
    pub async fn finish_job(
        &self,
        id: i64,
        output: Option<&str>,
        metrics: &JobMetrics,
    ) -> Result<Job, StoreError> {
        let row: Option<JobRow> = sqlx::query_as(
            "UPDATE jobs SET status = 'done', output = ?, metrics = ?, progress = 1, \
             finished_at = ? WHERE id = ? AND status = 'running' RETURNING *",
        )
        .bind(output)
        .bind(serde_json::to_string(metrics)?)
        .bind(now_ms())
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        self.transitioned(id, JobStatus::Done, row).await
    }

    /// `queued` or `running` → `failed`, with the message to show the user.
    pub async fn fail_job(&self, id: i64, error: &str) -> Result<Job, StoreError> {
        let row: Option<JobRow> = sqlx::query_as(
            "UPDATE jobs SET status = 'failed', error = ?, finished_at = ? \
             WHERE id = ? AND status IN ('queued', 'running') RETURNING *",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        self.transitioned(id, JobStatus::Failed, row).await
    }

    /// `queued` or `running` → `cancelled`, with why when it was not the user's own
    /// doing (a request that ran out of time).
    pub async fn cancel_job(&self, id: i64, reason: Option<&str>) -> Result<Job, StoreError> {
        let row: Option<JobRow> = sqlx::query_as(
            "UPDATE jobs SET status = 'cancelled', error = ?, finished_at = ? \
             WHERE id = ? AND status IN ('queued', 'running') RETURNING *",
        )
        .bind(reason)
        .bind(now_ms())
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        self.transitioned(id, JobStatus::Cancelled, row).await
    }

    /// The job with this id, if any.
    pub async fn job(&self, id: i64) -> Result<Option<Job>, StoreError> {
        let row: Option<JobRow> = sqlx::query_as("SELECT * FROM jobs WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(Job::try_from).transpose()
    }

    /// Jobs matching `filter`, newest first.
    pub async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        let rows: Vec<JobRow> = sqlx::query_as(
            "SELECT * FROM jobs WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2) \
             ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4",
        )
        .bind(filter.kind.map(JobKind::as_str))
        .bind(filter.status.map(JobStatus::as_str))
        .bind(filter.limit)
        .bind(filter.offset)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(Job::try_from).collect()
    }

    /// Deletes a job and, through the foreign keys, its transcript and segments. A
    /// speak job's WAV goes too when it lies in the data dir's own audio folder (where
    /// a job writes when given no output), and a transcription's upload or dictation
    /// recording when no other job reads it; a file the user chose stays.
    pub async fn delete_job(&self, id: i64) -> Result<(), StoreError> {
        let row: Option<(String, String, Option<String>)> =
            sqlx::query_as("DELETE FROM jobs WHERE id = ? RETURNING kind, input, output")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        let Some((kind, input, output)) = row else {
            return Err(StoreError::NotFound { what: "job", id });
        };
        // The files Izwi made for the job go with it: a speech's audio, an upload the
        // API received for a transcription. The user's own files never do.
        let own = match JobKind::from_db(&kind)? {
            JobKind::Speak => output.and_then(|o| own_file(&self.audio_dir(), Path::new(&o))),
            JobKind::Transcribe => {
                let input = Path::new(&input);
                let own = own_file(&self.uploads_dir(), input)
                    .or_else(|| own_file(&self.recordings_dir(), input));
                // A retried job reads the same upload or recording: it stays for that one.
                let shared: Option<i64> =
                    sqlx::query_scalar("SELECT id FROM jobs WHERE input = ? LIMIT 1")
                        .bind(input.to_string_lossy())
                        .fetch_optional(&self.pool)
                        .await?;
                own.filter(|_| shared.is_none())
            }
            _ => None,
        };
        if let Some(file) = own {
            if let Err(e) = std::fs::remove_file(&file) {
                // The row is gone either way; a stray file is only disk space.
                tracing::warn!(job = id, path = %file.display(), error = %e, "could not delete the job's file");
            }
        }
        Ok(())
    }

    /// The job a guarded UPDATE returned, or the reason it returned none.
    async fn transitioned(
        &self,
        id: i64,
        to: JobStatus,
        row: Option<JobRow>,
    ) -> Result<Job, StoreError> {
        match row {
            Some(row) => row.try_into(),
            None => match self.job(id).await? {
                Some(job) => Err(StoreError::InvalidTransition {
                    id,
                    from: job.status,
                    to,
                }),
                None => Err(StoreError::NotFound { what: "job", id }),
            },
        }
    }
}

/// `path` as a file directly inside `dir` (a folder of Izwi's own), when it is one: its
/// folder resolved through any symlinks, so nothing outside can pass for it.
fn own_file(dir: &Path, path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let folder = path.parent()?.canonicalize().ok()?;
    let file = folder.join(name);
    let is_file = file.symlink_metadata().ok()?.is_file();
    (is_file && folder == dir).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_db_text_and_serde() {
        for kind in [JobKind::Transcribe, JobKind::Speak, JobKind::SpeakBatch] {
            assert_eq!(JobKind::from_db(kind.as_str()).unwrap(), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert!(matches!(
            JobKind::from_db("Transcribe"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn statuses_round_trip_through_db_text_and_serde() {
        let all = [
            JobStatus::Queued,
            JobStatus::Running,
            JobStatus::Done,
            JobStatus::Failed,
            JobStatus::Cancelled,
            JobStatus::Interrupted,
        ];
        for status in all {
            assert_eq!(JobStatus::from_db(status.as_str()).unwrap(), status);
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
        }
        let finished: Vec<_> = all.into_iter().filter(|s| s.is_finished()).collect();
        assert_eq!(
            finished,
            [
                JobStatus::Done,
                JobStatus::Failed,
                JobStatus::Cancelled,
                JobStatus::Interrupted
            ]
        );
        assert!(matches!(
            JobStatus::from_db("paused"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn invalid_transition_message_names_both_statuses() {
        let err = StoreError::InvalidTransition {
            id: 3,
            from: JobStatus::Done,
            to: JobStatus::Running,
        };
        assert_eq!(err.to_string(), "job 3 is done; it cannot become running");
    }

    #[test]
    fn metrics_read_with_missing_fields() {
        let metrics: JobMetrics = serde_json::from_str(r#"{"rtf":0.5}"#).unwrap();
        assert_eq!(metrics.rtf, Some(0.5));
        assert_eq!(metrics.tokens, None);
    }
}
