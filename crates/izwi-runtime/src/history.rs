//! History: the jobs of every kind, their transcripts, search and export.

use std::path::Path;

use izwi_core::transcript::{Segment, Transcript};
use izwi_store::{Job, JobFilter, SearchHit, SegmentRecord, TranscriptRecord};

use crate::files::{self, ExportFormat};
use crate::{Runtime, RuntimeError};

impl Runtime {
    pub async fn job(&self, job_id: i64) -> Result<Job, RuntimeError> {
        self.inner
            .store
            .job(job_id)
            .await?
            .ok_or(RuntimeError::NoSuchJob(job_id))
    }

    pub async fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, RuntimeError> {
        Ok(self.inner.store.list_jobs(filter).await?)
    }

    /// Deletes a job with its transcript, cancelling it first if it runs.
    pub async fn delete_job(&self, job_id: i64) -> Result<(), RuntimeError> {
        if self.inner.jobs.cancel(job_id) {
            self.inner.jobs.wait(job_id).await;
        }
        Ok(self.inner.store.delete_job(job_id).await?)
    }

    pub async fn transcripts(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<TranscriptRecord>, RuntimeError> {
        Ok(self.inner.store.list_transcripts(limit, offset).await?)
    }

    pub async fn transcript(
        &self,
        id: i64,
    ) -> Result<(TranscriptRecord, Vec<SegmentRecord>), RuntimeError> {
        let record = self.inner.store.transcript(id).await?.ok_or_else(|| {
            RuntimeError::InvalidRequest(format!("transcript {id} does not exist"))
        })?;
        let segments = self.inner.store.segments(id).await?;
        Ok((record, segments))
    }

    pub async fn transcript_for_job(
        &self,
        job_id: i64,
    ) -> Result<Option<TranscriptRecord>, RuntimeError> {
        Ok(self.inner.store.transcript_for_job(job_id).await?)
    }

    /// Full-text search over every transcript; the last word matches as a prefix.
    pub async fn search(&self, text: &str, limit: i64) -> Result<Vec<SearchHit>, RuntimeError> {
        Ok(self.inner.store.search_transcripts(text, limit).await?)
    }

    /// A stored transcript in the shape the exporters (TXT, SRT, VTT, JSON) take.
    pub async fn transcript_for_export(&self, id: i64) -> Result<Transcript, RuntimeError> {
        let (record, segments) = self.transcript(id).await?;
        Ok(Transcript {
            language: record.language,
            duration: record.duration,
            segments: segments
                .into_iter()
                .map(|s| Segment {
                    start: s.start,
                    end: s.end,
                    text: s.text,
                })
                .collect(),
            rtf: record.rtf.unwrap_or(0.0),
        })
    }

    /// A stored transcript rendered as `format`.
    pub async fn export_transcript(
        &self,
        id: i64,
        format: ExportFormat,
    ) -> Result<String, RuntimeError> {
        Ok(format.render(&self.transcript_for_export(id).await?))
    }

    /// Renders a stored transcript as `format` into `path`, atomically: `path` never
    /// holds half a transcript. Returns the text written.
    pub async fn export_transcript_to(
        &self,
        id: i64,
        format: ExportFormat,
        path: &Path,
    ) -> Result<String, RuntimeError> {
        let text = self.export_transcript(id, format).await?;
        let (path, bytes) = (path.to_path_buf(), text.clone().into_bytes());
        tokio::task::spawn_blocking(move || files::write_atomically(&path, &bytes))
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("writing stopped: {e}")))??;
        Ok(text)
    }
}
