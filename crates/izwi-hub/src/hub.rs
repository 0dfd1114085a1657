//! The hub as the runtime sees it: list, download, remove, import and locate models.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::cache::ModelCache;
use crate::download::{self, Remote};
use crate::import;
use crate::{CatalogEntry, DownloadProgress, Family, HubError, ModelTask};

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
    /// Bytes per ranged request, the granularity of resuming.
    pub chunk_size: usize,
}

impl HubConfig {
    pub fn new(local_dir: PathBuf) -> Self {
        Self {
            cache_dir: None,
            endpoint: None,
            local_dir,
            chunk_size: 10_000_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelSource {
    Catalog { repo: String, revision: String },
    Local { imported_from: PathBuf },
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
    /// Approximate download size (catalog) or size on disk (imports).
    pub size_bytes: u64,
    /// Bytes of it on disk now.
    pub disk_bytes: u64,
    pub languages: Vec<String>,
    pub license: String,
    pub description: String,
}

pub struct Hub {
    cache: ModelCache,
    remote: Remote,
    local_dir: PathBuf,
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
        let cache = ModelCache::new(cache_dir);
        let token = cache.hf_cache().token();
        Self {
            cache,
            remote: Remote {
                endpoint: endpoint.trim_end_matches('/').to_string(),
                token,
                chunk_size: config.chunk_size.max(1),
            },
            local_dir: config.local_dir,
        }
    }

    pub fn cache_dir(&self) -> &Path {
        self.cache.path()
    }

    pub fn local_dir(&self) -> &Path {
        &self.local_dir
    }

    /// The catalog, then imported models, each with its state on this machine.
    pub fn list(&self) -> Vec<ModelInfo> {
        let mut models: Vec<_> = crate::catalog()
            .iter()
            .map(|e| self.catalog_info(e))
            .collect();
        models.extend(
            import::list(&self.local_dir)
                .into_iter()
                .map(|(path, m)| local_info(path, m)),
        );
        models
    }

    /// A catalog id, `local/<name>` of an import, or the path of a model folder (or
    /// Piper .onnx file) used where it is.
    pub fn info(&self, id: &str) -> Result<ModelInfo, HubError> {
        if let Some(entry) = CatalogEntry::find(id) {
            return Ok(self.catalog_info(entry));
        }
        if let Some(info) = self.list().into_iter().find(|m| m.id == id) {
            return Ok(info);
        }
        let path = Path::new(id);
        if path.exists() {
            return path_info(path);
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
        let entry = CatalogEntry::find(id).ok_or_else(|| HubError::UnknownModel(id.to_string()))?;
        download::download(
            &self.cache,
            &self.remote,
            entry,
            Arc::new(on_progress),
            cancel,
        )
        .await
    }

    /// Deletes a model's files; returns the bytes freed. Blobs another revision links
    /// to stay.
    pub fn remove(&self, id: &str) -> Result<u64, HubError> {
        if let Some(entry) = CatalogEntry::find(id) {
            let mut freed = 0;
            for file in entry.files {
                freed += self.cache.remove_file(entry, file)?;
            }
            return Ok(freed);
        }
        if !id.starts_with(LOCAL_PREFIX) {
            // A folder used in place is the user's, not ours to delete.
            return Err(HubError::NotRemovable(id.to_string()));
        }
        let info = self.info(id)?;
        let dir = info
            .path
            .ok_or_else(|| HubError::NotInstalled(id.to_string()))?;
        std::fs::remove_dir_all(&dir).map_err(|e| HubError::io(&dir, e))?;
        Ok(info.disk_bytes)
    }

    /// Imports a local model folder (or Piper .onnx file) under `name` (by default the
    /// folder's name).
    pub fn import(&self, src: &Path, name: Option<&str>) -> Result<ModelInfo, HubError> {
        let manifest = import::import(&self.local_dir, src, name)?;
        self.info(&format!("{LOCAL_PREFIX}{}", manifest.name))
    }

    /// Re-hashes an installed catalog model's files against their checksums.
    pub fn verify(&self, id: &str) -> Result<(), HubError> {
        let entry = CatalogEntry::find(id).ok_or_else(|| HubError::UnknownModel(id.to_string()))?;
        self.cache.verify(entry)
    }

    fn catalog_info(&self, entry: &CatalogEntry) -> ModelInfo {
        let path = self.cache.installed_dir(entry);
        ModelInfo {
            id: entry.id.to_string(),
            name: entry.name.to_string(),
            family: entry.family,
            task: entry.task,
            source: ModelSource::Catalog {
                repo: entry.repo.to_string(),
                revision: entry.revision.to_string(),
            },
            status: if path.is_some() {
                ModelStatus::Installed
            } else {
                ModelStatus::NotInstalled
            },
            path,
            size_bytes: entry.size_bytes,
            disk_bytes: self.cache.size_on_disk(entry),
            languages: entry.languages.iter().map(|l| l.to_string()).collect(),
            license: entry.license.to_string(),
            description: entry.description.to_string(),
        }
    }
}

/// A model folder used in place, without importing it.
fn path_info(path: &Path) -> Result<ModelInfo, HubError> {
    let (family, task, dir) = import::usable_in_place(path)?;
    let manifest = import::Manifest {
        name: path.display().to_string(),
        family,
        task,
        imported_from: path.to_path_buf(),
        imported_at: 0,
    };
    let mut info = local_info(dir, manifest);
    info.id = path.display().to_string();
    Ok(info)
}

/// The language a Piper voice's `.onnx.json` gives (`language.code`, e.g. `en_US`).
fn piper_language(dir: &Path) -> Option<String> {
    let config = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".onnx.json"))?;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(config).ok()?).ok()?;
    Some(json.get("language")?.get("code")?.as_str()?.to_string())
}

fn local_info(path: PathBuf, manifest: import::Manifest) -> ModelInfo {
    let disk_bytes = std::fs::read_dir(&path)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    let (description, languages) = match manifest.family {
        Family::Whisper => ("Whisper model imported from a local folder", Vec::new()),
        Family::Piper => (
            "Piper voice imported from a local file",
            piper_language(&path).into_iter().collect(),
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
    }
}
