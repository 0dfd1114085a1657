//! The runtime: one per app, shared by every window and command.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use izwi_core::models::shared::device::{describe_device, select_device};
use izwi_core::transcript::{Segment, Transcript};
use izwi_hub::{CancellationToken, Family, Hub, HubConfig, ModelInfo, ModelStatus};
use izwi_store::{
    Job, JobFilter, JobKind, NewJob, SearchHit, SegmentRecord, Store, TranscriptRecord,
};

use crate::files::{self, ExportFormat};
use crate::jobs::Jobs;
use crate::models::{LoadedModel, ModelManager};
use crate::transcribe::{self, TranscribeRequest};
use crate::{Event, EventSink, RuntimeError};

/// The setting naming the model `transcribe` uses when a request names none.
pub const DEFAULT_TRANSCRIBE_MODEL: &str = "default_transcribe_model";

/// The most peaks [`Runtime::audio_peaks`] returns: more than any screen is wide.
pub const MAX_PEAK_BUCKETS: usize = 100_000;

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Izwi's own data: the database, imported models, audio.
    pub data_dir: PathBuf,
    /// The Hugging Face cache; None uses the one other tools use (`HF_HOME`).
    pub hf_cache_dir: Option<PathBuf>,
    /// The hub's address; None reads `HF_ENDPOINT`, else huggingface.co.
    pub hub_endpoint: Option<String>,
    /// Weights kept loaded at most; idle models beyond it are unloaded.
    pub model_memory_budget: u64,
    /// Jobs that run at once; the engine batches their work.
    pub max_concurrent_jobs: usize,
}

impl RuntimeConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            hf_cache_dir: None,
            hub_endpoint: None,
            model_memory_budget: 8 << 30,
            max_concurrent_jobs: 4,
        }
    }

    /// The platform's place for app data: `~/.local/share/izwi`,
    /// `~/Library/Application Support/izwi`, `%APPDATA%\izwi`.
    pub fn default_data_dir() -> PathBuf {
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("izwi")
    }
}

pub(crate) struct Inner {
    pub store: Store,
    pub hub: Arc<Hub>,
    pub models: ModelManager,
    pub events: Arc<dyn EventSink>,
    jobs: Arc<Jobs>,
}

#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl Runtime {
    /// Opens the store (marking jobs a crash left running as interrupted) and the hub.
    pub async fn open(
        config: RuntimeConfig,
        events: Arc<dyn EventSink>,
    ) -> Result<Self, RuntimeError> {
        let store = Store::open(&config.data_dir).await?;
        if store.interrupted_at_open() > 0 {
            tracing::warn!(
                jobs = store.interrupted_at_open(),
                "jobs interrupted by the last exit"
            );
        }
        let hub = Arc::new(Hub::new(HubConfig {
            cache_dir: config.hf_cache_dir,
            endpoint: config.hub_endpoint,
            ..HubConfig::new(config.data_dir.join("models"))
        }));
        let models = ModelManager::new(
            hub.clone(),
            select_device(),
            config.model_memory_budget,
            events.clone(),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                hub,
                models,
                events,
                jobs: Arc::new(Jobs::new(config.max_concurrent_jobs)),
            }),
        })
    }

    pub fn data_dir(&self) -> &Path {
        self.inner.store.data_dir()
    }

    pub fn hf_cache_dir(&self) -> &Path {
        self.inner.hub.cache_dir()
    }

    /// Where models run: `cpu`, `cuda:0` or `metal`.
    pub fn device(&self) -> String {
        describe_device(self.inner.models.device())
    }

    /// Jobs found running at open, now marked interrupted.
    pub fn interrupted_at_open(&self) -> u64 {
        self.inner.store.interrupted_at_open()
    }

    // ---- models

    pub fn models(&self) -> Vec<ModelInfo> {
        self.inner.hub.list()
    }

    pub fn model(&self, id: &str) -> Result<ModelInfo, RuntimeError> {
        Ok(self.inner.hub.info(id)?)
    }

    /// Downloads a catalog model, reporting `Event::Download`.
    pub async fn download_model(
        &self,
        id: &str,
        cancel: CancellationToken,
    ) -> Result<ModelInfo, RuntimeError> {
        let events = self.inner.events.clone();
        self.inner
            .hub
            .download(id, move |p| events.emit(Event::Download(p.clone())), cancel)
            .await?;
        self.model(id)
    }

    /// Unloads and deletes a model; returns the bytes freed.
    pub fn remove_model(&self, id: &str) -> Result<u64, RuntimeError> {
        self.inner.models.unload(id);
        Ok(self.inner.hub.remove(id)?)
    }

    pub fn import_model(&self, path: &Path, name: Option<&str>) -> Result<ModelInfo, RuntimeError> {
        Ok(self.inner.hub.import(path, name)?)
    }

    /// Re-hashes a downloaded model's files against their checksums.
    pub fn verify_model(&self, id: &str) -> Result<(), RuntimeError> {
        Ok(self.inner.hub.verify(id)?)
    }

    /// The model to transcribe with when none is named: the
    /// `default_transcribe_model` setting, else the first installed Whisper model.
    pub async fn default_transcribe_model(&self) -> Result<String, RuntimeError> {
        if let Some(id) = self
            .inner
            .store
            .get_setting::<String>(DEFAULT_TRANSCRIBE_MODEL)
            .await?
        {
            return Ok(id);
        }
        self.models()
            .into_iter()
            .find(|m| m.family == Family::Whisper && m.status == ModelStatus::Installed)
            .map(|m| m.id)
            .ok_or_else(|| {
                RuntimeError::InvalidRequest(
                    "no Whisper model is installed: `izwi models download whisper-base` \
                     fetches one, `izwi models import FOLDER` adds one you have"
                        .into(),
                )
            })
    }

    pub async fn setting<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, RuntimeError> {
        Ok(self.inner.store.get_setting(key).await?)
    }

    pub async fn set_setting<T: serde::Serialize>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), RuntimeError> {
        Ok(self.inner.store.set_setting(key, value).await?)
    }

    /// Removes a setting; returns whether it was set.
    pub async fn delete_setting(&self, key: &str) -> Result<bool, RuntimeError> {
        Ok(self.inner.store.delete_setting(key).await?)
    }

    pub fn loaded_models(&self) -> Vec<LoadedModel> {
        self.inner.models.loaded()
    }

    pub fn unload_model(&self, id: &str) -> bool {
        self.inner.models.unload(id)
    }

    /// For the shell to call when the system is short of memory: unloads idle models.
    pub fn relieve_memory_pressure(&self) -> Vec<String> {
        self.inner.models.relieve_memory_pressure()
    }

    // ---- jobs

    /// Records a transcription job and starts it; the returned job is `queued`. A model
    /// that is unknown, not installed or not for transcription is refused here; what
    /// goes wrong later (an unreadable file, say) fails the job with its reason.
    pub async fn transcribe(&self, request: TranscribeRequest) -> Result<Job, RuntimeError> {
        let info = self.inner.hub.info(&request.model_id)?;
        if info.family != Family::Whisper {
            return Err(RuntimeError::WrongModel {
                id: info.id,
                family: format!("{:?}", info.family).to_lowercase(),
                task: "transcribe",
            });
        }
        self.inner.hub.model_dir(&request.model_id)?;
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Transcribe,
                model_id: Some(request.model_id.clone()),
                input: request.path.display().to_string(),
                params: serde_json::to_value(&request)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let (transcript_id, metrics) = transcribe::run(&inner, job_id, &request).await?;
                Ok((Some(format!("transcript:{transcript_id}")), metrics))
            },
        );
        Ok(job)
    }

    /// Stops a queued or running job; it ends `cancelled`.
    pub async fn cancel_job(&self, job_id: i64) -> Result<(), RuntimeError> {
        if self.inner.jobs.cancel(job_id) {
            self.inner.jobs.wait(job_id).await;
            return Ok(());
        }
        // Not running in this process: a queued row left by another, or finished.
        self.inner.store.cancel_job(job_id).await?;
        Ok(())
    }

    /// Waits for a job to end and returns it.
    pub async fn wait_job(&self, job_id: i64) -> Result<Job, RuntimeError> {
        self.inner.jobs.wait(job_id).await;
        self.job(job_id).await
    }

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

    /// Ids of jobs running or queued in this process.
    pub fn active_jobs(&self) -> Vec<i64> {
        self.inner.jobs.running()
    }

    /// Deletes a job with its transcript, cancelling it first if it runs.
    pub async fn delete_job(&self, job_id: i64) -> Result<(), RuntimeError> {
        if self.inner.jobs.cancel(job_id) {
            self.inner.jobs.wait(job_id).await;
        }
        Ok(self.inner.store.delete_job(job_id).await?)
    }

    // ---- history

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

    /// The waveform of a media file: the peak magnitude (0 to 1) of its mono mix in each
    /// of `buckets` equal spans of time. Decodes on a blocking thread.
    pub async fn audio_peaks(&self, path: &Path, buckets: usize) -> Result<Vec<f32>, RuntimeError> {
        if buckets == 0 || buckets > MAX_PEAK_BUCKETS {
            return Err(RuntimeError::InvalidRequest(format!(
                "buckets must be 1 to {MAX_PEAK_BUCKETS}, not {buckets}"
            )));
        }
        let owned = path.to_path_buf();
        tokio::task::spawn_blocking(move || izwi_audio::decode_file(&owned))
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("decoding stopped: {e}")))?
            .map(|audio| files::peaks(&audio.to_mono(), buckets))
            .map_err(|source| RuntimeError::Audio {
                path: path.to_path_buf(),
                source,
            })
    }

    /// Cancels every job and waits for them: call before the app exits, so no job is
    /// left `running` to be found interrupted.
    pub async fn shutdown(&self) {
        self.inner.jobs.cancel_all();
        for id in self.inner.jobs.running() {
            self.inner.jobs.wait(id).await;
        }
    }
}
