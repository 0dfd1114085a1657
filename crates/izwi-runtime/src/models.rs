//! Model lifecycle: a model is loaded on first use and kept for the next job; it is
//! unloaded on request, when memory runs short (the shell says so), or to make room
//! for another within the memory budget, least recently used first. A job holds its
//! model while it runs, so unloading never pulls a model from under a job: the
//! memory is freed when that job ends.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use izwi_core::engine::{BatchStrategy, Engine, EngineCoreConfig};
use izwi_core::models::lfm2_audio::Lfm2Audio;
use izwi_core::models::qwen3_tts::Qwen3Tts;
use izwi_core::models::vits::Vits;
use izwi_core::models::voxtral_realtime::{VoxtralRealtime, VoxtralTranscriber};
use izwi_core::models::whisper::{Transcriber, Whisper, WhisperExecutor, WhisperTokenizer};
use izwi_core::{DType, Device};
use izwi_hub::{CancellationToken, Family, Hub, ModelInfo, ModelStatus};
use serde::{Deserialize, Serialize};

use crate::{Event, EventSink, Runtime, RuntimeError, DEFAULT_TRANSCRIBE_MODEL};

/// Whisper's decoder context.
const WHISPER_MAX_SEQ_LEN: usize = 448;

/// A Whisper model on its engine (the transcriber holds the engine).
pub struct LoadedWhisper {
    pub transcriber: Transcriber,
}

/// A loaded model as the shells list it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LoadedModel {
    pub id: String,
    /// Bytes of weights (what it costs in memory, roughly).
    pub bytes: u64,
    /// A job is using it.
    pub in_use: bool,
}

/// What a slot holds: a job holding a clone keeps it from being unloaded.
#[derive(Clone)]
enum Loaded {
    Whisper(Arc<LoadedWhisper>),
    Voice(Arc<Vits>),
    Voxtral(Arc<VoxtralTranscriber>),
    Qwen3Tts(Arc<Qwen3Tts>),
    Lfm2Audio(Arc<Lfm2Audio>),
}

impl Loaded {
    fn in_use(&self) -> bool {
        match self {
            Loaded::Whisper(m) => Arc::strong_count(m) > 1,
            Loaded::Voice(v) => Arc::strong_count(v) > 1,
            Loaded::Voxtral(m) => Arc::strong_count(m) > 1,
            Loaded::Qwen3Tts(m) => Arc::strong_count(m) > 1,
            Loaded::Lfm2Audio(m) => Arc::strong_count(m) > 1,
        }
    }

    fn family(&self) -> Family {
        match self {
            Loaded::Whisper(_) => Family::Whisper,
            Loaded::Voice(_) => Family::Piper,
            Loaded::Voxtral(_) => Family::VoxtralRealtime,
            Loaded::Qwen3Tts(_) => Family::Qwen3Tts,
            Loaded::Lfm2Audio(_) => Family::Lfm2Audio,
        }
    }
}

/// A model that transcribes, of any family that does.
#[derive(Clone)]
pub enum TranscriptionModel {
    Whisper(Arc<LoadedWhisper>),
    Voxtral(Arc<VoxtralTranscriber>),
    Lfm2Audio(Arc<Lfm2Audio>),
}

struct Slot {
    model: Loaded,
    bytes: u64,
    last_used: Instant,
}

pub struct ModelManager {
    hub: Arc<Hub>,
    device: Device,
    budget_bytes: u64,
    batch_strategy: Option<BatchStrategy>,
    loaded: Mutex<HashMap<String, Slot>>,
    /// One load at a time: two jobs asking for the same model load it once.
    loading: tokio::sync::Mutex<()>,
    events: Arc<dyn EventSink>,
}

impl ModelManager {
    pub fn new(
        hub: Arc<Hub>,
        device: Device,
        budget_bytes: u64,
        batch_strategy: Option<BatchStrategy>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        Self {
            hub,
            device,
            budget_bytes,
            batch_strategy,
            loaded: Mutex::new(HashMap::new()),
            loading: tokio::sync::Mutex::new(()),
            events,
        }
    }

    /// The batch strategy chosen for every engine, if one was.
    pub fn batch_strategy(&self) -> Option<BatchStrategy> {
        self.batch_strategy
    }

    /// Where models run.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The Whisper model `id`, loading it if needed.
    pub async fn whisper(&self, id: &str) -> Result<Arc<LoadedWhisper>, RuntimeError> {
        let dir = || -> Result<PathBuf, RuntimeError> {
            let info = self.hub.info(id)?;
            if info.family != Family::Whisper {
                return Err(wrong_family(id, info.family, "transcribe"));
            }
            Ok(self.hub.model_dir(id)?)
        };
        let device = self.device.clone();
        let strategy = self.batch_strategy.unwrap_or(WHISPER_BATCH_STRATEGY);
        let loaded = self
            .get_or_load(id, dir, weights_bytes, move |dir| {
                load_whisper(dir, &device, strategy).map(|m| Loaded::Whisper(Arc::new(m)))
            })
            .await?;
        match loaded {
            Loaded::Whisper(m) => Ok(m),
            other => Err(wrong_family(id, other.family(), "transcribe")),
        }
    }

    /// The Voxtral Realtime model `id` writing `delay_ms` behind the audio (None: the
    /// checkpoint's default), loading it if needed. A model is loaded for one delay:
    /// asked for another, it is reloaded once no job is using it.
    pub async fn voxtral(
        &self,
        id: &str,
        delay_ms: Option<u32>,
    ) -> Result<Arc<VoxtralTranscriber>, RuntimeError> {
        let busy = |loaded_ms: f64| {
            RuntimeError::InvalidRequest(format!(
                "{id} is in use with a delay of {loaded_ms} ms; wait for its job to finish or \
                 ask for the same delay"
            ))
        };
        {
            // Under the load lock no other load starts, and under the slots' lock no job
            // takes the model between the check and its removal.
            let _loading = self.loading.lock().await;
            let mut slots = self.lock();
            let other_delay = match slots.get(id).map(|slot| &slot.model) {
                Some(Loaded::Voxtral(m)) if !has_delay(m, delay_ms) => {
                    Some((Arc::strong_count(m) > 1, m.format().delay_ms()))
                }
                _ => None,
            };
            match other_delay {
                Some((true, loaded_ms)) => return Err(busy(loaded_ms)),
                Some((false, _)) => {
                    slots.remove(id);
                    drop(slots);
                    self.events.emit(Event::ModelUnloaded {
                        model_id: id.to_string(),
                    });
                }
                None => {}
            }
        }
        let dir = || -> Result<PathBuf, RuntimeError> {
            let info = self.hub.info(id)?;
            if info.family != Family::VoxtralRealtime {
                return Err(wrong_family(id, info.family, "transcribe"));
            }
            Ok(self.hub.model_dir(id)?)
        };
        let device = self.device.clone();
        let strategy = self.batch_strategy.unwrap_or(BatchStrategy::DecodeMaximal);
        let loaded = self
            .get_or_load(id, dir, weights_bytes, move |dir| {
                load_voxtral(dir, delay_ms, &device, strategy).map(|m| Loaded::Voxtral(Arc::new(m)))
            })
            .await?;
        match loaded {
            // Another job may have loaded it for its own delay meanwhile.
            Loaded::Voxtral(m) if !has_delay(&m, delay_ms) => Err(busy(m.format().delay_ms())),
            Loaded::Voxtral(m) => Ok(m),
            other => Err(wrong_family(id, other.family(), "transcribe")),
        }
    }

    /// The transcription model `id` (Whisper or Voxtral Realtime, the latter writing
    /// `delay_ms` behind the audio), loading it if needed.
    pub async fn transcription(
        &self,
        id: &str,
        delay_ms: Option<u32>,
    ) -> Result<TranscriptionModel, RuntimeError> {
        match self.hub.info(id)?.family {
            Family::VoxtralRealtime => self
                .voxtral(id, delay_ms)
                .await
                .map(TranscriptionModel::Voxtral),
            Family::Lfm2Audio => self.lfm2_audio(id).await.map(TranscriptionModel::Lfm2Audio),
            _ => self.whisper(id).await.map(TranscriptionModel::Whisper),
        }
    }

    /// The Qwen3-TTS model `id` (an import, or a checkpoint folder's path), loading it
    /// if needed. Every job speaking with it shares its one engine, which batches their
    /// utterances.
    pub async fn qwen3_tts(&self, id: &str) -> Result<Arc<Qwen3Tts>, RuntimeError> {
        let dir = || -> Result<PathBuf, RuntimeError> {
            let info = self.hub.info(id)?;
            if info.family != Family::Qwen3Tts {
                return Err(wrong_family(id, info.family, "speak"));
            }
            Ok(self.hub.model_dir(id)?)
        };
        let bytes = |dir: &Path| weights_bytes(dir) + weights_bytes(&dir.join("speech_tokenizer"));
        let device = self.device.clone();
        let loaded = self
            .get_or_load(id, dir, bytes, move |dir| {
                Qwen3Tts::from_dir(dir, &device, EngineCoreConfig::default())
                    .map(|m| Loaded::Qwen3Tts(Arc::new(m)))
                    .map_err(|e| e.to_string())
            })
            .await?;
        match loaded {
            Loaded::Qwen3Tts(m) => Ok(m),
            other => Err(wrong_family(id, other.family(), "speak")),
        }
    }

    /// The LFM2-Audio model `id` (an import, or a checkpoint folder's path), loading it
    /// if needed. Every job using it (transcribing, speaking, voice chat) shares its
    /// one engine, which batches their turns.
    pub async fn lfm2_audio(&self, id: &str) -> Result<Arc<Lfm2Audio>, RuntimeError> {
        let dir = || -> Result<PathBuf, RuntimeError> {
            let info = self.hub.info(id)?;
            if info.family != Family::Lfm2Audio {
                return Err(wrong_family(id, info.family, "hear and speak"));
            }
            Ok(self.hub.model_dir(id)?)
        };
        let device = self.device.clone();
        let loaded = self
            .get_or_load(id, dir, weights_bytes, move |dir| {
                Lfm2Audio::from_dir(dir, &device, EngineCoreConfig::default())
                    .map(|m| Loaded::Lfm2Audio(Arc::new(m)))
                    .map_err(|e| e.to_string())
            })
            .await?;
        match loaded {
            Loaded::Lfm2Audio(m) => Ok(m),
            other => Err(wrong_family(id, other.family(), "hear and speak")),
        }
    }

    /// The Piper voice of model `id`, loading it if needed.
    pub async fn voice(&self, id: &str) -> Result<Arc<Vits>, RuntimeError> {
        let dir = || -> Result<PathBuf, RuntimeError> {
            let info = self.hub.info(id)?;
            if info.family != Family::Piper {
                return Err(wrong_family(id, info.family, "speak"));
            }
            Ok(self.hub.model_dir(id)?)
        };
        self.load_voice(id, dir).await
    }

    /// A Piper voice from its `.onnx` file, outside the catalog and imports.
    pub async fn voice_file(&self, onnx: &Path) -> Result<Arc<Vits>, RuntimeError> {
        let key = format!("file:{}", onnx.display());
        let onnx = onnx.to_path_buf();
        self.load_voice(&key, move || Ok(onnx)).await
    }

    async fn load_voice(
        &self,
        key: &str,
        path: impl FnOnce() -> Result<PathBuf, RuntimeError>,
    ) -> Result<Arc<Vits>, RuntimeError> {
        let device = self.device.clone();
        let bytes = |path: &Path| voice_files(path).map_or(0, |(onnx, _)| file_len(&onnx));
        let loaded = self
            .get_or_load(key, path, bytes, move |path| {
                let (onnx, json) = voice_files(path)?;
                Vits::from_onnx(&onnx, &json, &device)
                    .and_then(Vits::with_bf16_vocoder)
                    .map(|v| Loaded::Voice(Arc::new(v)))
                    .map_err(|e| e.to_string())
            })
            .await?;
        match loaded {
            Loaded::Voice(v) => Ok(v),
            other => Err(wrong_family(key, other.family(), "speak")),
        }
    }

    /// The model under `key`, loaded from `path()` by `load` on a blocking thread when
    /// it is not loaded yet, after making room for the `bytes` it will take.
    async fn get_or_load(
        &self,
        key: &str,
        path: impl FnOnce() -> Result<PathBuf, RuntimeError>,
        bytes: impl FnOnce(&Path) -> u64,
        load: impl FnOnce(&Path) -> Result<Loaded, String> + Send + 'static,
    ) -> Result<Loaded, RuntimeError> {
        if let Some(model) = self.touch(key) {
            return Ok(model);
        }
        let _loading = self.loading.lock().await;
        if let Some(model) = self.touch(key) {
            return Ok(model);
        }
        let path = path()?;
        let bytes = bytes(&path);
        self.make_room(bytes);

        let started = Instant::now();
        let load_error = |reason: String| RuntimeError::Load {
            id: key.to_string(),
            reason,
        };
        let model = tokio::task::spawn_blocking(move || load(&path))
            .await
            .map_err(|e| load_error(e.to_string()))?
            .map_err(load_error)?;
        self.lock().insert(
            key.to_string(),
            Slot {
                model: model.clone(),
                bytes,
                last_used: Instant::now(),
            },
        );
        tracing::info!(
            model = key,
            bytes,
            seconds = started.elapsed().as_secs_f64(),
            "model loaded"
        );
        self.events.emit(Event::ModelLoaded {
            model_id: key.to_string(),
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(model)
    }

    /// Unloads `id`; returns whether it was loaded.
    pub fn unload(&self, id: &str) -> bool {
        let removed = self.lock().remove(id).is_some();
        if removed {
            self.events.emit(Event::ModelUnloaded {
                model_id: id.to_string(),
            });
        }
        removed
    }

    /// Unloads every model no job is using; returns their ids.
    pub fn relieve_memory_pressure(&self) -> Vec<String> {
        let idle: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, slot)| !slot.model.in_use())
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            self.unload(id);
        }
        idle
    }

    pub fn loaded(&self) -> Vec<LoadedModel> {
        let mut models: Vec<_> = self
            .lock()
            .iter()
            .map(|(id, slot)| LoadedModel {
                id: id.clone(),
                bytes: slot.bytes,
                in_use: slot.model.in_use(),
            })
            .collect();
        models.sort_by(|a, b| a.id.cmp(&b.id));
        models
    }

    fn touch(&self, id: &str) -> Option<Loaded> {
        let mut loaded = self.lock();
        let slot = loaded.get_mut(id)?;
        slot.last_used = Instant::now();
        Some(slot.model.clone())
    }

    /// Unloads idle models, least recently used first, until `bytes` more fit the budget.
    fn make_room(&self, bytes: u64) {
        loop {
            let victim = {
                let loaded = self.lock();
                let used: u64 = loaded.values().map(|s| s.bytes).sum();
                if used + bytes <= self.budget_bytes {
                    return;
                }
                loaded
                    .iter()
                    .filter(|(_, s)| !s.model.in_use())
                    .min_by_key(|(_, s)| s.last_used)
                    .map(|(id, _)| id.clone())
            };
            match victim {
                Some(id) => {
                    tracing::info!(model = %id, "unloading to stay within the memory budget");
                    self.unload(&id);
                }
                // Everything loaded is in use: load anyway rather than fail the job.
                None => return,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Memory the weights take once loaded as f32: parameters counted from the
/// safetensors headers (files on disk are often f16, half of that).
fn weights_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| izwi_core::models::shared::weights::is_hf_weights(p))
        .map(|p| safetensors_parameters(&p).unwrap_or(0) * 4)
        .sum()
}

fn safetensors_parameters(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len).ok()?;
    let len = u64::from_le_bytes(len);
    // A header is a few hundred kB at most; refuse absurd lengths.
    if len > 100 << 20 {
        return None;
    }
    let mut header = vec![0u8; len as usize];
    file.read_exact(&mut header).ok()?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).ok()?;
    Some(
        header
            .values()
            .filter_map(|t| t.get("shape")?.as_array())
            .map(|shape| shape.iter().filter_map(|d| d.as_u64()).product::<u64>())
            .sum(),
    )
}

fn wrong_family(id: &str, family: Family, task: &'static str) -> RuntimeError {
    RuntimeError::WrongModel {
        id: id.to_string(),
        family: format!("{family:?}").to_lowercase(),
        task,
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A Piper voice's `.onnx` and `.onnx.json`: `path` itself when it is the `.onnx`,
/// else the one `.onnx` found in the folder `path` (searched recursively: a catalog
/// voice keeps the hub's folders).
pub fn voice_files(path: &Path) -> Result<(PathBuf, PathBuf), String> {
    fn find(dir: &Path, depth: usize) -> Option<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        entries
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "onnx") && p.is_file())
            .cloned()
            .or_else(|| {
                (depth < 6)
                    .then(|| {
                        entries
                            .iter()
                            .filter(|p| p.is_dir())
                            .find_map(|d| find(d, depth + 1))
                    })
                    .flatten()
            })
    }
    let onnx = if path.is_dir() {
        find(path, 0).ok_or_else(|| format!("{} holds no Piper voice (.onnx)", path.display()))?
    } else {
        path.to_path_buf()
    };
    let mut json = onnx.clone().into_os_string();
    json.push(".json");
    let json = PathBuf::from(json);
    if !onnx.is_file() {
        return Err(format!("{} does not exist", onnx.display()));
    }
    if !json.is_file() {
        return Err(format!(
            "{} has no config beside it ({} is missing)",
            onnx.display(),
            json.display()
        ));
    }
    Ok((onnx, json))
}

/// A window's prompt is a few tokens, so the strategies measured alike for files and
/// API clients (docs/api.md); this one keeps live dictation's passes steady.
const WHISPER_BATCH_STRATEGY: BatchStrategy = BatchStrategy::DecodeMaximal;

fn load_whisper(
    dir: &Path,
    device: &Device,
    batch_strategy: BatchStrategy,
) -> Result<LoadedWhisper, String> {
    let tokenizer = Arc::new(WhisperTokenizer::from_dir(dir).map_err(|e| format!("{e:#}"))?);
    let model = Whisper::from_dir(dir, DType::F32, device)
        .and_then(Whisper::with_bf16_encoder)
        .map_err(|e| format!("{e:#}"))?;
    let executor = WhisperExecutor::new(model, Some(tokenizer.special.clone()))
        .map_err(|e| format!("{e:#}"))?;
    let config = EngineCoreConfig {
        max_seq_len: WHISPER_MAX_SEQ_LEN,
        max_batch_size: 16,
        batch_strategy,
        // One token per block: a forked beam never copies a half-full block, and the
        // prefix cache serves every token requests over the same audio share.
        block_size: 1,
        ..EngineCoreConfig::default()
    };
    let engine = Arc::new(Engine::new(config, Box::new(executor)).map_err(|e| format!("{e:#}"))?);
    Ok(LoadedWhisper {
        transcriber: Transcriber::new(engine, tokenizer),
    })
}

/// Whether `model` writes `delay_ms` behind the audio (None: its checkpoint's default).
fn has_delay(model: &VoxtralTranscriber, delay_ms: Option<u32>) -> bool {
    let format = model.format();
    delay_ms.map_or(format.default_delay_ms(), f64::from) == format.delay_ms()
}

fn load_voxtral(
    dir: &Path,
    delay_ms: Option<u32>,
    device: &Device,
    batch_strategy: BatchStrategy,
) -> Result<VoxtralTranscriber, String> {
    let model = VoxtralRealtime::from_dir(dir, delay_ms.map(f64::from), DType::F32, device)
        .map_err(|e| format!("{e:#}"))?;
    let format = model.format().clone();
    let config = EngineCoreConfig {
        // The model's own limit: its decoder's attention window.
        max_seq_len: usize::MAX,
        max_batch_size: 16,
        batch_strategy,
        ..EngineCoreConfig::default()
    };
    let engine = Engine::new(config, Box::new(model)).map_err(|e| format!("{e:#}"))?;
    Ok(VoxtralTranscriber::new(Arc::new(engine), format))
}

impl Runtime {
    pub fn models(&self) -> Vec<ModelInfo> {
        self.inner.hub.list()
    }

    pub fn model(&self, id: &str) -> Result<ModelInfo, RuntimeError> {
        Ok(self.inner.hub.info(id)?)
    }

    /// The model `id` among those [`Runtime::models`] lists, never a path used in place:
    /// for shells whose requests must not make Izwi open a model file they name.
    pub fn listed_model(&self, id: &str) -> Result<ModelInfo, RuntimeError> {
        Ok(self.inner.hub.listed_info(id)?)
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

    /// Imports a local model; a CTranslate2 Whisper folder is converted on the way
    /// (the engine converts, the hub registers the result).
    pub fn import_model(&self, path: &Path, name: Option<&str>) -> Result<ModelInfo, RuntimeError> {
        let convert = |src: &Path, dst: &Path| {
            izwi_core::models::whisper::ctranslate2::convert_ctranslate2(src, dst)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        if path.is_file() && path.extension().is_some_and(|e| e == "gguf") {
            crate::chat::check_chat_model(path)?;
        }
        Ok(self.inner.hub.import(path, name, &convert)?)
    }

    /// Re-hashes a model's files: a downloaded one's against the catalog's pins, an
    /// import's against what was recorded when it was imported.
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

    /// The model a transcription job uses when its request names none: `whisper-1`
    /// while a remote backend is in use (the setting names a model of this machine; a
    /// server has names of its own), else [`Self::default_transcribe_model`]. Dictation
    /// and voice chat hear on this machine and keep to the latter.
    pub async fn default_job_transcribe_model(&self) -> Result<String, RuntimeError> {
        if self.inner.remote().is_some() {
            return Ok(crate::REMOTE_TRANSCRIBE_MODEL.to_string());
        }
        self.default_transcribe_model().await
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
}
