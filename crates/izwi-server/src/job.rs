//! A job started for one request. If the client goes away before it is done (axum then
//! drops the handler's future), or the request runs out of time, the job is cancelled:
//! nobody's work runs on for no one.

use std::sync::Arc;

use izwi_runtime::{Job, JobStatus, Runtime};

use crate::deadline::Deadline;
use crate::error::ApiError;
use crate::request_voice::Upload;

pub(crate) struct RequestJob {
    runtime: Arc<Runtime>,
    id: i64,
    deadline: Deadline,
    finished: bool,
    /// A recording the job reads: removed once the job is over, and when the job is
    /// abandoned only after its cancel has landed (a queued job that found its recording
    /// gone would be recorded failed, not cancelled).
    upload: Option<Upload>,
}

impl RequestJob {
    /// `job`, started for a request that must be answered by `deadline`.
    pub fn new(runtime: Arc<Runtime>, job: &Job, deadline: Deadline) -> Self {
        Self {
            runtime,
            id: job.id,
            deadline,
            finished: false,
            upload: None,
        }
    }

    /// The job reads `upload`: keep it until the job is over.
    pub fn with_upload(mut self, upload: Option<Upload>) -> Self {
        self.upload = upload;
        self
    }

    pub fn id(&self) -> i64 {
        self.id
    }

    /// The job ended (its end was seen another way): dropping this no longer cancels it.
    pub fn ended(&mut self) {
        self.finished = true;
        self.upload = None;
    }

    /// The job once done; a job that failed is the request's error.
    pub async fn finished(&mut self) -> Result<Job, ApiError> {
        let job = self.runtime.wait_job(self.id).await?;
        self.ended();
        match job.status {
            JobStatus::Done => Ok(job),
            _ => Err(ApiError::internal(format!(
                "job {} {}: {}",
                job.id,
                format!("{:?}", job.status).to_lowercase(),
                job.error.as_deref().unwrap_or("no reason given")
            ))),
        }
    }
}

impl Drop for RequestJob {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let (runtime, id, upload) = (self.runtime.clone(), self.id, self.upload.take());
        // Given up on for its time, not by its client: the history says so.
        let reason = self.deadline.passed().then(|| self.deadline.reason());
        // Dropped inside a request's task, so a runtime is there to run the cancel on.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let cancelled = match &reason {
                    Some(reason) => runtime.cancel_job_because(id, reason).await,
                    None => runtime.cancel_job(id).await,
                };
                if let Err(e) = cancelled {
                    tracing::warn!(job = id, error = %e, "could not cancel an abandoned job");
                }
                drop(upload);
            });
        }
    }
}
