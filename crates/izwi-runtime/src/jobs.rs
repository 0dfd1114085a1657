//! Running jobs: each runs as a task, waits for a free slot while `queued`, and ends
//! `done`, `failed` or `cancelled` in the store. Cancelling drops the job's work,
//! which aborts its engine requests at once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use izwi_store::{Job, JobMetrics, JobStatus};
use tokio::sync::{watch, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{Event, EventSink, RuntimeError};

struct Running {
    cancel: CancellationToken,
    /// Why it was cancelled, when not by the user: kept as the job's error.
    reason: Arc<Mutex<Option<String>>>,
    finished: watch::Receiver<bool>,
}

pub struct Jobs {
    running: Mutex<HashMap<i64, Running>>,
    slots: Arc<Semaphore>,
}

/// What a job's work returns: the output to record and its metrics.
pub type JobResult = Result<(Option<String>, JobMetrics), RuntimeError>;

impl Jobs {
    pub fn new(max_concurrent: usize) -> Self {
        Self {
            running: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
        }
    }

    /// Runs `work` for the queued job `job` once a slot is free, recording each step.
    pub fn spawn<W, F>(
        self: &Arc<Self>,
        store: izwi_store::Store,
        events: Arc<dyn EventSink>,
        job: &Job,
        work: W,
    ) where
        W: FnOnce() -> F + Send + 'static,
        F: Future<Output = JobResult> + Send + 'static,
    {
        self.start(store, events, job, true, work);
    }

    /// Runs `work` for `job` at once, beside the jobs in slots: a chat reply holds no
    /// audio, and the engine batches as many as come.
    pub fn spawn_unslotted<W, F>(
        self: &Arc<Self>,
        store: izwi_store::Store,
        events: Arc<dyn EventSink>,
        job: &Job,
        work: W,
    ) where
        W: FnOnce() -> F + Send + 'static,
        F: Future<Output = JobResult> + Send + 'static,
    {
        self.start(store, events, job, false, work);
    }

    fn start<W, F>(
        self: &Arc<Self>,
        store: izwi_store::Store,
        events: Arc<dyn EventSink>,
        job: &Job,
        slotted: bool,
        work: W,
    ) where
        W: FnOnce() -> F + Send + 'static,
        F: Future<Output = JobResult> + Send + 'static,
    {
        let job_id = job.id;
        let cancel = CancellationToken::new();
        let (finished_tx, finished) = watch::channel(false);
        let reason = Arc::new(Mutex::new(None));
        self.lock().insert(
            job_id,
            Running {
                cancel: cancel.clone(),
                reason: reason.clone(),
                finished,
            },
        );
        let jobs = self.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = async {
                    let _slot = match slotted {
                        true => Some(jobs.slots.clone().acquire_owned().await),
                        false => None,
                    };
                    store.start_job(job_id).await?;
                    events.emit(Event::JobStarted { job_id });
                    work().await
                } => outcome,
                _ = cancel.cancelled() => Err(RuntimeError::Cancelled(job_id)),
            };
            let (status, error) = match outcome {
                Ok((output, metrics)) => {
                    match store.finish_job(job_id, output.as_deref(), &metrics).await {
                        Ok(_) => (JobStatus::Done, None),
                        Err(e) => (JobStatus::Failed, Some(e.to_string())),
                    }
                }
                Err(RuntimeError::Cancelled(_)) => {
                    let reason = reason.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if let Err(e) = store.cancel_job(job_id, reason.as_deref()).await {
                        tracing::warn!(job_id, error = %e, "could not record the cancel");
                    }
                    (JobStatus::Cancelled, reason)
                }
                Err(e) => {
                    let message = e.to_string();
                    if let Err(e) = store.fail_job(job_id, &message).await {
                        tracing::warn!(job_id, error = %e, "could not record the failure");
                    }
                    (JobStatus::Failed, Some(message))
                }
            };
            if status == JobStatus::Failed {
                tracing::warn!(job_id, error = error.as_deref().unwrap_or(""), "job failed");
            }
            events.emit(Event::JobFinished {
                job_id,
                status,
                error,
            });
            jobs.lock().remove(&job_id);
            let _ = finished_tx.send(true);
        });
    }

    /// Asks a running or queued job to stop, for `reason` when it is not the user's
    /// doing; false when it is not running here.
    pub fn cancel(&self, job_id: i64, reason: Option<String>) -> bool {
        match self.lock().get(&job_id) {
            Some(running) => {
                if reason.is_some() {
                    *running.reason.lock().unwrap_or_else(|e| e.into_inner()) = reason;
                }
                running.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Waits until the job's task is over (at once when it is not running here).
    pub async fn wait(&self, job_id: i64) {
        let finished = self.lock().get(&job_id).map(|r| r.finished.clone());
        if let Some(mut finished) = finished {
            let _ = finished.wait_for(|done| *done).await;
        }
    }

    pub fn running(&self) -> Vec<i64> {
        let mut ids: Vec<_> = self.lock().keys().copied().collect();
        ids.sort();
        ids
    }

    pub fn cancel_all(&self) {
        for running in self.lock().values() {
            running.cancel.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
