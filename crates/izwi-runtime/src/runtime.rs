//! The runtime: one per app, shared by every window and command. Each area's methods
//! live beside that area: models.rs, transcribe.rs, voices.rs, speak.rs, history.rs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use izwi_core::engine::BatchStrategy;
use izwi_core::models::shared::device::{built_devices, describe_device, select_device};
use izwi_hub::{Hub, HubConfig, ModelTask};
use izwi_store::{Job, Store};

use crate::chat::ChatModel;
use crate::jobs::Jobs;
use crate::models::ModelManager;
use crate::remote::{BackendChoice, Remote, RemoteInfo, RemoteSettings, REMOTE_BACKEND};
use crate::vad::Vad;
use crate::{EventSink, RuntimeError};

/// The setting naming the model `transcribe` uses when a request names none.
pub const DEFAULT_TRANSCRIBE_MODEL: &str = "default_transcribe_model";

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
    /// How the engines share each step between decoding and reading prompts; None
    /// gives each model the one that suits how it is used.
    pub batch_strategy: Option<BatchStrategy>,
    /// Whether transcription, speech and chat run here or on a remote server.
    pub backend: BackendChoice,
}

impl RuntimeConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            hf_cache_dir: None,
            hub_endpoint: None,
            model_memory_budget: 8 << 30,
            max_concurrent_jobs: 4,
            batch_strategy: None,
            backend: BackendChoice::Stored,
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
    pub jobs: Arc<Jobs>,
    pub vad: Vad,
    /// The chat model opened last, with its file.
    pub chat_model: tokio::sync::Mutex<Option<(PathBuf, ChatModel)>>,
    /// The remote backend that runs transcription, speech and chat; None runs them here.
    pub remote: std::sync::RwLock<Option<Arc<Remote>>>,
    /// Whether the settings choose the backend (not a shell's choice for this run).
    pub backend_from_settings: bool,
}

impl Inner {
    /// The remote backend, when one is in use.
    pub fn remote(&self) -> Option<Arc<Remote>> {
        self.remote
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
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
            config.batch_strategy,
            events.clone(),
        );
        let stored: Option<RemoteSettings> = store.get_setting(REMOTE_BACKEND).await?;
        let remote = match (&config.backend, stored) {
            (BackendChoice::Local, _) | (BackendChoice::Stored, None) => None,
            // A setting that no longer makes a backend must not keep Izwi from opening.
            (BackendChoice::Stored, Some(settings)) => match Remote::new(&settings) {
                Ok(remote) => Some(Arc::new(remote)),
                Err(error) => {
                    tracing::warn!(%error, "the stored remote backend is unusable: running here");
                    None
                }
            },
            (BackendChoice::Url(url), stored) => {
                let url = url.trim().trim_end_matches('/');
                // The stored key goes only to the server it was given for.
                let api_key = stored
                    .filter(|s| s.url.trim().trim_end_matches('/') == url)
                    .and_then(|s| s.api_key);
                Some(Arc::new(Remote::new(&RemoteSettings {
                    url: url.to_string(),
                    api_key,
                })?))
            }
        };
        if let Some(remote) = &remote {
            tracing::info!(
                url = remote.url(),
                "transcription, speech and chat run remotely"
            );
        }
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                hub,
                models,
                events,
                jobs: Arc::new(Jobs::new(config.max_concurrent_jobs)),
                vad: Vad::default(),
                chat_model: tokio::sync::Mutex::new(None),
                remote: std::sync::RwLock::new(remote),
                backend_from_settings: config.backend == BackendChoice::Stored,
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

    /// The backends this build can run models on (`cpu`, `cuda`, `metal`).
    pub fn built_devices() -> Vec<String> {
        built_devices().into_iter().map(String::from).collect()
    }

    /// Jobs found running at open, now marked interrupted.
    pub fn interrupted_at_open(&self) -> u64 {
        self.inner.store.interrupted_at_open()
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

    /// Sets the model transcription uses when a request names none (only a model that
    /// transcribes); None clears it.
    pub async fn set_default_transcribe_model(&self, id: Option<&str>) -> Result<(), RuntimeError> {
        match id {
            Some(id) => {
                let model = self.model(id)?;
                if model.task != ModelTask::Transcribe {
                    return Err(RuntimeError::WrongModel {
                        id: model.id,
                        family: format!("{:?}", model.family).to_lowercase(),
                        task: "transcribe",
                    });
                }
                self.set_setting(DEFAULT_TRANSCRIBE_MODEL, &id).await
            }
            None => self
                .delete_setting(DEFAULT_TRANSCRIBE_MODEL)
                .await
                .map(|_| ()),
        }
    }

    /// The remote backend in use, if any (its address; never its key).
    pub fn remote_backend(&self) -> Option<RemoteInfo> {
        self.inner.remote().map(|r| r.info())
    }

    /// The remote backend the settings name (its address; never its key).
    pub async fn remote_setting(&self) -> Result<Option<RemoteInfo>, RuntimeError> {
        let stored: Option<RemoteSettings> = self.setting(REMOTE_BACKEND).await?;
        Ok(stored.map(|s| RemoteInfo {
            url: s.url,
            has_key: s.api_key.is_some_and(|k| !k.is_empty()),
        }))
    }

    /// Sends transcription, speech and chat to the server `settings` name from now on
    /// (None: back to this machine), remembered in the settings with its key. A runtime
    /// told its backend by its shell (`izwi --backend`, `izwi serve`) keeps using that
    /// one until it is opened again.
    pub async fn set_remote_backend(
        &self,
        settings: Option<RemoteSettings>,
    ) -> Result<(), RuntimeError> {
        let remote = match settings {
            Some(settings) => {
                let remote = Remote::new(&settings)?;
                // Kept as it is used: trimmed of a trailing slash.
                let url = remote.url().to_string();
                self.set_setting(REMOTE_BACKEND, &RemoteSettings { url, ..settings })
                    .await?;
                Some(Arc::new(remote))
            }
            None => {
                self.delete_setting(REMOTE_BACKEND).await?;
                None
            }
        };
        if self.inner.backend_from_settings {
            *self.inner.remote.write().unwrap_or_else(|e| e.into_inner()) = remote;
        }
        Ok(())
    }

    // ---- jobs of every kind

    /// Stops a queued or running job; it ends `cancelled`.
    pub async fn cancel_job(&self, job_id: i64) -> Result<(), RuntimeError> {
        self.cancel(job_id, None).await
    }

    /// Stops a queued or running job for `reason` (a request that ran out of time), which
    /// the history keeps as the cancelled job's error.
    pub async fn cancel_job_because(&self, job_id: i64, reason: &str) -> Result<(), RuntimeError> {
        self.cancel(job_id, Some(reason.to_owned())).await
    }

    async fn cancel(&self, job_id: i64, reason: Option<String>) -> Result<(), RuntimeError> {
        if self.inner.jobs.cancel(job_id, reason.clone()) {
            self.inner.jobs.wait(job_id).await;
            return Ok(());
        }
        // Not running in this process: a queued row left by another, or finished.
        self.inner
            .store
            .cancel_job(job_id, reason.as_deref())
            .await?;
        Ok(())
    }

    /// Waits for a job to end and returns it.
    pub async fn wait_job(&self, job_id: i64) -> Result<Job, RuntimeError> {
        self.inner.jobs.wait(job_id).await;
        self.job(job_id).await
    }

    /// Ids of jobs running or queued in this process.
    pub fn active_jobs(&self) -> Vec<i64> {
        self.inner.jobs.running()
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
