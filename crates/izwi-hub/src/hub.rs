//! The hub as the runtime sees it: list, download, remove, import and locate models.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::cache::ModelCache;
use crate::download::{self, Remote};
use crate::import::{self, Converter, Manifest};
use crate::{CatalogEntry, DownloadProgress, Family, HubError, ModelTask, WHISPER_LANGUAGES};

/// Imported models are named `local/<name>`.
const LOCAL_PREFIX: &str = "local/";
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The Hugging Face cache; None uses the one other tools use (`HF_HOME`, else
    /// `~/.cache/huggingface/hub`).
    pub cache_dir: Option<PathBuf>,
    /// The hub's address; None reads `HF_ENDPOINT`, else huggingface.co.
    pub endpoint: Option<String>,
    /// Where imported models are kept (inside Izwi's data folder).
    pub local_dir: PathBuf,
    /// Bytes per ranged request.
    pub chunk_size: usize,
    /// The models that can be downloaded; None reads the JSON list of entries in the
    /// file `IZWI_CATALOG` names (a mirror's, or a test's), else `crate::catalog()`.
    /// Entries that are not fully pinned are left out.
    pub catalog: Option<Vec<CatalogEntry>>,
}

impl HubConfig {
    pub fn new(local_dir: PathBuf) -> Self {
        Self {
            cache_dir: None,
            endpoint: None,
            local_dir,
            chunk_size: 10_000_000,
            catalog: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelSource {
    /// Fetched from `repo` at `revision` (a commit).
    Catalog {
        repo: String,
        revision: String,
    },
    Local {
        imported_from: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ModelStatus {
    NotInstalled,
    Installed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub family: Family,
    pub task: ModelTask,
    pub source: ModelSource,
    pub status: ModelStatus,
    /// The folder the model loads from, when installed.
    pub path: Option<PathBuf>,
    /// Download size (catalog) or size on disk (imports).
    pub size_bytes: u64,
    /// Bytes of it on disk now.
    pub disk_bytes: u64,
    /// What it transcribes or speaks: the catalog's list, or read from the model's
    /// own files for imports (Whisper: English-only or multilingual from its
    /// config.json; Piper: its .onnx.json).
    pub languages: Vec<String>,
    pub license: String,
    pub description: String,
    /// For an import that is a copy of a catalog model (its weights have the sha256
    /// the catalog pins), that model's id.
    pub catalog_id: Option<String>,
}

pub struct Hub {
    cache: ModelCache,
    remote: Remote,
    local_dir: PathBuf,
    catalog: Vec<CatalogEntry>,
}

impl Hub {
    pub fn new(config: HubConfig) -> Self {
        let cache_dir = config
            .cache_dir
            .unwrap_or_else(|| hf_hub::Cache::from_env().path().clone());
        let endpoint = config
            .endpoint
            .or_else(|| std::env::var("HF_ENDPOINT").ok())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let token = hf_hub::Cache::new(cache_dir.clone()).token();
        let catalog = config
            .catalog
            .unwrap_or_else(catalog_from_env)
            .into_iter()
            .filter(|e| {
                let pinned = e.is_pinned();
                if !pinned {
                    tracing::warn!(model = %e.id, "left out of the catalog: not pinned to a commit and each file's size and sha256");
                }
                pinned
            })
            .collect();
        Self {
            cache: ModelCache::new(cache_dir),
            remote: Remote {
                endpoint: endpoint.trim_end_matches('/').to_string(),
                token,
                chunk_size: config.chunk_size.max(1),
            },
            local_dir: config.local_dir,
            catalog,
        }
    }

    pub fn cache_dir(&self) -> &Path {
        self.cache.path()
    }

    pub fn local_dir(&self) -> &Path {
        &self.local_dir
    }

    /// The models that can be downloaded.
    pub fn catalog(&self) -> &[CatalogEntry] {
        &self.catalog
    }

    fn entry(&self, id: &str) -> Option<&CatalogEntry> {
        self.catalog.iter().find(|e| e.id == id)
    }

    /// The import named by `local/<name>`, with its folder.
    fn imported(&self, id: &str) -> Option<(PathBuf, Manifest)> {
        let name = id.strip_prefix(LOCAL_PREFIX)?;
        import::list(&self.local_dir)
            .into_iter()
            .find(|(_, m)| m.name == name)
    }

    /// The catalog, then imported models, each with its state on this machine.
    pub fn list(&self) -> Vec<ModelInfo> {
        let mut models: Vec<_> = self.catalog.iter().map(|e| self.catalog_info(e)).collect();
        models.extend(
            import::list(&self.local_dir)
                .into_iter()
                .map(|(path, m)| self.local_info(path, m)),
        );
        models
    }

    /// A catalog id, `local/<name>` of an import, or the path of a model folder (or
    /// Piper .onnx file) used where it is.
    pub fn info(&self, id: &str) -> Result<ModelInfo, HubError> {
        let listed = self.listed_info(id);
        let path = Path::new(id);
        // `local/…` names imports only, never a folder that happens to be there.
        if listed.is_err() && !id.starts_with(LOCAL_PREFIX) && path.exists() {
            return path_info(path);
        }
        listed
    }

    /// A model the hub lists, by its id (a catalog model or an import): never a path
    /// used in place, for callers that must not open files their requester names (the
    /// HTTP API's clients, the app's page).
    pub fn listed_info(&self, id: &str) -> Result<ModelInfo, HubError> {
        if let Some(entry) = self.entry(id) {
            return Ok(self.catalog_info(entry));
        }
        if let Some((path, manifest)) = self.imported(id) {
            return Ok(self.local_info(path, manifest));
        }
        Err(HubError::UnknownModel(id.to_string()))
    }

    /// The folder to load an installed model from.
    pub fn model_dir(&self, id: &str) -> Result<PathBuf, HubError> {
        self.info(id)?
            .path
            .ok_or_else(|| HubError::NotInstalled(id.to_string()))
    }

    /// Fetches a catalog model (what is already in the cache is kept) and returns its
    /// folder. Cancelling, or dropping the future, deletes the file in flight; an
    /// error leaves it to be resumed by the next download.
    pub async fn download(
        &self,
        id: &str,
        on_progress: impl Fn(&DownloadProgress) + Send + Sync + 'static,
        cancel: CancellationToken,
    ) -> Result<PathBuf, HubError> {
        let entry = self
            .entry(id)
            .ok_or_else(|| HubError::UnknownModel(id.to_string()))?;
        download::download(
            &self.cache,
            &self.remote,
            entry.clone(),
            Arc::new(on_progress),
            cancel,
        )
        .await
    }

    /// Deletes a downloaded or imported model's files; returns the bytes freed. Only
    /// the catalog model's own files in the cache (blobs another revision links to
    /// stay) or the import's folder inside the imports folder are ever deleted.
    pub fn remove(&self, id: &str) -> Result<u64, HubError> {
        if let Some(entry) = self.entry(id) {
            let mut freed = 0;
            for file in &entry.files {
                freed += self.cache.remove_file(entry, file)?;
            }
            return Ok(freed);
        }
        let Some((dir, _)) = self.imported(id) else {
            // A folder used in place, or anything else, is the user's.
            return Err(HubError::NotRemovable(id.to_string()));
        };
        let freed = dir_size(&dir);
        import::remove(&self.local_dir, &dir)?;
        Ok(freed)
    }

    /// Imports a local model folder (or Piper .onnx file) under `name` (by default the
    /// folder's name). `convert` turns a CTranslate2 Whisper folder into one Izwi loads.
    pub fn import(
        &self,
        src: &Path,
        name: Option<&str>,
        convert: Converter,
    ) -> Result<ModelInfo, HubError> {
        let manifest = import::import(&self.local_dir, src, name, convert)?;
        self.info(&format!("{LOCAL_PREFIX}{}", manifest.name))
    }

    /// Re-hashes an installed model's files: a catalog model's against the catalog's
    /// pins, an import's against what was recorded when it was imported.
    pub fn verify(&self, id: &str) -> Result<(), HubError> {
        if let Some(entry) = self.entry(id) {
            return self.cache.verify(entry);
        }
        let (dir, manifest) = self
            .imported(id)
            .ok_or_else(|| HubError::UnknownModel(id.to_string()))?;
        import::verify(&dir, &manifest, id)
    }

    fn catalog_info(&self, entry: &CatalogEntry) -> ModelInfo {
        let path = self.cache.installed_dir(entry);
        ModelInfo {
            id: entry.id.clone(),
            name: entry.name.clone(),
            family: entry.family,
            task: entry.task,
            source: ModelSource::Catalog {
                repo: entry.repo.clone(),
                revision: entry.commit.clone(),
            },
            status: if path.is_some() {
                ModelStatus::Installed
            } else {
                ModelStatus::NotInstalled
            },
            path,
            size_bytes: entry.size_bytes(),
            disk_bytes: self.cache.size_on_disk(entry),
            languages: entry.languages.clone(),
            license: entry.license.clone(),
            description: entry.description.clone(),
            catalog_id: None,
        }
    }

    fn local_info(&self, path: PathBuf, manifest: Manifest) -> ModelInfo {
        // Same weights as a catalog model: that model.
        let catalog_id = self
            .catalog
            .iter()
            .filter(|e| e.family == manifest.family)
            .find(|e| {
                e.weights()
                    .is_some_and(|w| manifest.files.iter().any(|f| f.sha256 == w.sha256))
            })
            .map(|e| e.id.clone());
        let mut info = local_info(path, manifest);
        info.catalog_id = catalog_id;
        info
    }
}

/// The catalog `IZWI_CATALOG` names, else the built-in one.
fn catalog_from_env() -> Vec<CatalogEntry> {
    let Some(path) = std::env::var_os("IZWI_CATALOG") else {
        return crate::catalog();
    };
    let read = std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()));
    match read {
        Ok(entries) => entries,
        Err(error) => {
            tracing::error!(path = %Path::new(&path).display(), %error, "IZWI_CATALOG is unreadable; using the built-in catalog");
            crate::catalog()
        }
    }
}

/// A model folder used in place, without importing it.
fn path_info(path: &Path) -> Result<ModelInfo, HubError> {
    let (family, task, dir) = import::usable_in_place(path)?;
    let manifest = Manifest {
        name: path.display().to_string(),
        family,
        task,
        imported_from: path.to_path_buf(),
        imported_at: 0,
        files: Vec::new(),
    };
    let mut info = local_info(dir, manifest);
    info.id = path.display().to_string();
    Ok(info)
}

/// The languages a Piper voice's `.onnx.json` gives (`language.family`, e.g. `en`):
/// the voice `path` names, or the one in the folder `path` (an import holds one).
fn piper_languages(path: &Path) -> Vec<String> {
    let read = || -> Option<String> {
        let config = if path.is_file() {
            let mut json = path.as_os_str().to_owned();
            json.push(".json");
            PathBuf::from(json)
        } else {
            std::fs::read_dir(path)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".onnx.json"))?
        };
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(config).ok()?).ok()?;
        let language = json.get("language")?;
        // The voice's own locale (`en_US`, `en_GB`: the accent is what tells voices apart),
        // as the catalog lists Piper voices; the bare family only when there is no code.
        let code = language.get("code").and_then(|c| c.as_str());
        let family = language.get("family").and_then(|f| f.as_str());
        Some(code.or(family)?.to_string())
    };
    read().into_iter().collect()
}

/// Whisper's languages from its config.json: English-only models have 51864 tokens,
/// multilingual ones more (large-v3's 51866 add Cantonese), as OpenAI's code decides.
fn whisper_languages(dir: &Path) -> Vec<String> {
    let vocab_size = std::fs::read(dir.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("vocab_size")?.as_u64());
    match vocab_size {
        None => Vec::new(),
        Some(n) if n < 51865 => vec!["en".to_string()],
        Some(n) => {
            let mut languages: Vec<_> = WHISPER_LANGUAGES.iter().map(|l| l.to_string()).collect();
            if n >= 51866 {
                languages.push("yue".to_string());
            }
            languages
        }
    }
}

/// The ISO 639-1 codes of the languages a Qwen3-TTS config.json names
/// (`talker_config.codec_language_id`: `english`, `chinese`, ...; dialects are not
/// languages of their own).
fn qwen3_tts_languages(dir: &Path) -> Vec<String> {
    const CODES: &[(&str, &str)] = &[
        ("chinese", "zh"),
        ("english", "en"),
        ("german", "de"),
        ("italian", "it"),
        ("portuguese", "pt"),
        ("spanish", "es"),
        ("japanese", "ja"),
        ("korean", "ko"),
        ("french", "fr"),
        ("russian", "ru"),
    ];
    let config = std::fs::read(dir.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let Some(named) = config.as_ref().and_then(|c| {
        c.get("talker_config")?
            .get("codec_language_id")?
            .as_object()
    }) else {
        return Vec::new();
    };
    CODES
        .iter()
        .filter(|(name, _)| named.contains_key(*name))
        .map(|(_, code)| code.to_string())
        .collect()
}

/// The bytes of a folder's files (and of its folders'), or of one file.
fn dir_size(dir: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    if !meta.is_dir() {
        return std::fs::metadata(dir).map(|m| m.len()).unwrap_or(0);
    }
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| dir_size(&e.path())).sum())
        .unwrap_or(0)
}

fn local_info(path: PathBuf, manifest: Manifest) -> ModelInfo {
    let disk_bytes = dir_size(&path);
    let (description, languages) = match manifest.family {
        Family::Whisper => (
            "Whisper model imported from a local folder",
            whisper_languages(&path),
        ),
        Family::Piper => (
            "Piper voice imported from a local file",
            piper_languages(&path),
        ),
        // A GGUF file does not say which languages its model writes well.
        Family::Llama => ("Chat model imported from a local GGUF file", Vec::new()),
        // Nor does a Voxtral checkpoint say which languages it was trained on.
        Family::VoxtralRealtime => (
            "Streaming speech recognition (Voxtral Realtime) imported from a local folder",
            Vec::new(),
        ),
        Family::Qwen3Tts => (
            "Text to speech (Qwen3-TTS) imported from a local folder",
            qwen3_tts_languages(&path),
        ),
        Family::Lfm2Audio => (
            "Speech in and out (LFM2-Audio) imported from a local folder",
            vec!["en".to_string()],
        ),
    };
    ModelInfo {
        id: format!("{LOCAL_PREFIX}{}", manifest.name),
        name: manifest.name,
        family: manifest.family,
        task: manifest.task,
        source: ModelSource::Local {
            imported_from: manifest.imported_from,
        },
        status: ModelStatus::Installed,
        path: Some(path),
        size_bytes: disk_bytes,
        disk_bytes,
        languages,
        license: "as its source's".to_string(),
        description: description.to_string(),
        catalog_id: None,
    }
}
