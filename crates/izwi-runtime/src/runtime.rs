//! The runtime: one per app, shared by every window and command.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use izwi_core::models::shared::device::{describe_device, select_device};
use izwi_core::transcript::{Segment, Transcript};
use izwi_hub::{CancellationToken, Family, Hub, HubConfig, ModelInfo, ModelStatus};
use izwi_store::{
    Job, JobFilter, JobKind, JobStatus, NewJob, SearchHit, SegmentRecord, Store, TranscriptRecord,
    VoiceSettings,
};

use crate::files::{self, ExportFormat};
use crate::jobs::Jobs;
use crate::models::{LoadedModel, ModelManager};
use crate::speak::{self, SpeakBatchRequest, SpeakRequest, SpeechClip, MANIFEST_NAME};
use crate::transcribe::{self, TranscribeRequest};
use crate::voices::{check_settings, VoiceChoice, VoiceInfo};
use crate::{Event, EventSink, RuntimeError};

/// The setting naming the model `transcribe` uses when a request names none.
pub const DEFAULT_TRANSCRIBE_MODEL: &str = "default_transcribe_model";

/// Refuses, before a job exists, what would only fail it: a voice model not
/// installed, settings out of range, espeak-ng missing.
fn check_voice_ready(choice: &VoiceChoice, speed: Option<f32>) -> Result<(), RuntimeError> {
    let settings = VoiceSettings {
        speed: speed.unwrap_or(choice.settings().speed),
        ..choice.settings().clone()
    };
    check_settings(&settings)?;
    izwi_core::text::Espeak::find().map_err(|e| RuntimeError::Speech(e.to_string()))?;
    Ok(())
}

/// The folder of an output file must exist.
fn check_output_file(path: &Path) -> Result<(), RuntimeError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} is a folder; give a file name ending in .wav",
            path.display()
        )));
    }
    Ok(())
}

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

    // ---- voices and speech

    /// The voice library; every installed Piper voice model has at least one voice.
    pub async fn list_voices(&self) -> Result<Vec<VoiceInfo>, RuntimeError> {
        self.inner.list_voices().await
    }

    /// Adds a voice on a Piper model (installed or not yet) under `name`.
    pub async fn add_voice(
        &self,
        model_id: &str,
        name: &str,
        settings: VoiceSettings,
    ) -> Result<VoiceInfo, RuntimeError> {
        self.inner.add_voice(model_id, name, settings).await
    }

    pub async fn rename_voice(&self, id: i64, name: &str) -> Result<(), RuntimeError> {
        self.inner.voice_row(id).await?;
        Ok(self.inner.store.rename_voice(id, name).await?)
    }

    pub async fn update_voice_settings(
        &self,
        id: i64,
        settings: VoiceSettings,
    ) -> Result<(), RuntimeError> {
        check_settings(&settings)?;
        self.inner.voice_row(id).await?;
        Ok(self
            .inner
            .store
            .update_voice_settings(id, &settings)
            .await?)
    }

    /// Deletes a voice; the last voice of an installed model stays (remove the model).
    pub async fn delete_voice(&self, id: i64) -> Result<(), RuntimeError> {
        self.inner.delete_voice(id).await
    }

    /// A voice saying `text` (or a stock line), returned as samples: no job, no file.
    pub async fn preview_voice(
        &self,
        voice: &str,
        text: Option<String>,
    ) -> Result<SpeechClip, RuntimeError> {
        let choice = self.inner.choose_voice(voice).await?;
        speak::preview(&self.inner, &choice, text.as_deref()).await
    }

    /// Queues a speak job: `text` in a voice, to one WAV file (the job's output),
    /// each sentence reported as `Event::SpeechAudio` as soon as it is made.
    pub async fn speak(&self, request: SpeakRequest) -> Result<Job, RuntimeError> {
        speak::sentences_of(&request.text)?;
        let choice = self.inner.choose_voice(&request.voice).await?;
        check_voice_ready(&choice, request.speed)?;
        if let Some(output) = &request.output {
            check_output_file(output)?;
        }
        let job = self
            .create_job(
                JobKind::Speak,
                &choice,
                request.text.chars().take(200).collect(),
                &request,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = match &request.output {
                    Some(path) => path.clone(),
                    None => inner.store.audio_dir().join(format!("speech-{job_id}.wav")),
                };
                let metrics = speak::run(&inner, job_id, &choice, &request, &output).await?;
                Ok((Some(output.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Queues a batch: one WAV per line into `output_dir`, with `manifest.csv`. Every
    /// line is checked first; a folder that already holds a batch is refused.
    pub async fn speak_batch(&self, request: SpeakBatchRequest) -> Result<Job, RuntimeError> {
        if request.lines.is_empty() {
            return Err(RuntimeError::InvalidRequest(
                "the batch has no lines".into(),
            ));
        }
        for (i, line) in request.lines.iter().enumerate() {
            speak::sentences_of(line).map_err(|_| {
                RuntimeError::InvalidRequest(format!("line {} has no words to say", i + 1))
            })?;
        }
        let choice = self.inner.choose_voice(&request.voice).await?;
        check_voice_ready(&choice, request.speed)?;
        let dir = &request.output_dir;
        std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        if dir.join(MANIFEST_NAME).exists() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} already holds a batch ({MANIFEST_NAME}); choose an empty folder",
                dir.display()
            )));
        }
        let job = self
            .create_job(
                JobKind::SpeakBatch,
                &choice,
                dir.display().to_string(),
                &request,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let metrics = speak::run_batch(&inner, job_id, &choice, &request).await?;
                Ok((Some(request.output_dir.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Copies a finished speak job's WAV to `path`, atomically.
    pub async fn save_speech(&self, job_id: i64, path: &Path) -> Result<(), RuntimeError> {
        let job = self.job(job_id).await?;
        let source = match (job.kind, job.status, &job.output) {
            (JobKind::Speak, JobStatus::Done, Some(output)) => PathBuf::from(output),
            _ => {
                return Err(RuntimeError::InvalidRequest(format!(
                    "job {job_id} is not a finished speak job"
                )))
            }
        };
        let (target, from) = (path.to_path_buf(), source.clone());
        tokio::task::spawn_blocking(move || {
            let bytes = std::fs::read(&from).map_err(|source| RuntimeError::Io {
                path: from.clone(),
                source,
            })?;
            files::write_atomically(&target, &bytes)
        })
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("saving stopped: {e}")))?
    }

    async fn create_job<R: serde::Serialize>(
        &self,
        kind: JobKind,
        choice: &VoiceChoice,
        input: String,
        request: &R,
    ) -> Result<Job, RuntimeError> {
        let model_id = match choice {
            VoiceChoice::Model { model_id, .. } => Some(model_id.clone()),
            VoiceChoice::File { path, .. } => Some(path.display().to_string()),
        };
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind,
                model_id,
                input,
                params: serde_json::to_value(request)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
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
