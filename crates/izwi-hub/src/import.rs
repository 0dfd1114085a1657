//! Local models: folders a user already has, copied (or converted) into Izwi's models
//! folder. A Whisper folder in Hugging Face layout, a CTranslate2 Whisper folder
//! (faster-whisper's; converted by our importer) or a Piper voice (.onnx + .onnx.json).
//! An import is staged in a hidden folder and renamed into place once its manifest is
//! written, so an interrupted import is never listed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Family, HubError, ModelTask};

pub const MANIFEST: &str = "izwi-model.json";
const STAGING_PREFIX: &str = ".importing-";

/// What we record of an imported model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub family: Family,
    pub task: ModelTask,
    pub imported_from: PathBuf,
    /// Unix seconds.
    pub imported_at: u64,
}

enum Layout {
    WhisperHf,
    WhisperCtranslate2,
    /// The voice's .onnx file.
    Piper(PathBuf),
}

/// Imports `src` into `models_dir/<name>` and returns the name and manifest.
pub fn import(models_dir: &Path, src: &Path, name: Option<&str>) -> Result<Manifest, HubError> {
    let layout = detect(src)?;
    let name = match name {
        Some(n) => sanitize(n),
        None => sanitize(&default_name(src, &layout)),
    };
    if name.is_empty() {
        return Err(HubError::NotImportable {
            path: src.to_path_buf(),
            reason: "give it a name made of letters, digits, '.', '-' or '_'".into(),
        });
    }
    let target = models_dir.join(&name);
    if target.exists() {
        return Err(HubError::AlreadyImported(name));
    }
    std::fs::create_dir_all(models_dir).map_err(|e| HubError::io(models_dir, e))?;
    let staging = models_dir.join(format!("{STAGING_PREFIX}{name}"));
    if staging.exists() {
        // Left by an import that was interrupted.
        std::fs::remove_dir_all(&staging).map_err(|e| HubError::io(&staging, e))?;
    }
    let result = stage(src, &staging, &layout, &name);
    let manifest = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    std::fs::rename(&staging, &target).map_err(|e| HubError::io(&target, e))?;
    Ok(manifest)
}

fn stage(src: &Path, staging: &Path, layout: &Layout, name: &str) -> Result<Manifest, HubError> {
    let (family, task) = match layout {
        Layout::WhisperCtranslate2 => {
            izwi_core::models::whisper::ctranslate2::convert_ctranslate2(src, staging).map_err(
                |e| HubError::Convert {
                    path: src.to_path_buf(),
                    reason: format!("{e:#}"),
                },
            )?;
            (Family::Whisper, ModelTask::Transcribe)
        }
        Layout::WhisperHf => {
            std::fs::create_dir_all(staging).map_err(|e| HubError::io(staging, e))?;
            for entry in read_dir(src)? {
                let file_name = entry.file_name().unwrap_or_default().to_string_lossy();
                let wanted = file_name.ends_with(".json") || file_name.ends_with(".safetensors");
                if wanted && entry.is_file() {
                    copy(&entry, &staging.join(entry.file_name().unwrap_or_default()))?;
                }
            }
            (Family::Whisper, ModelTask::Transcribe)
        }
        Layout::Piper(onnx) => {
            std::fs::create_dir_all(staging).map_err(|e| HubError::io(staging, e))?;
            let json = piper_config(onnx);
            for file in [onnx, &json] {
                copy(file, &staging.join(file.file_name().unwrap_or_default()))?;
            }
            (Family::Piper, ModelTask::Speak)
        }
    };
    let manifest = Manifest {
        name: name.to_string(),
        family,
        task,
        imported_from: std::fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf()),
        imported_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    let path = staging.join(MANIFEST);
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| HubError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, json).map_err(|e| HubError::io(&path, e))?;
    Ok(manifest)
}

/// Whether `path` can be loaded where it is (not a CTranslate2 folder, which needs
/// converting): its family, task and the folder to load from.
pub fn usable_in_place(path: &Path) -> Result<(Family, ModelTask, PathBuf), HubError> {
    match detect(path)? {
        Layout::WhisperHf => Ok((Family::Whisper, ModelTask::Transcribe, path.to_path_buf())),
        Layout::Piper(onnx) => {
            let dir = onnx.parent().unwrap_or(Path::new(".")).to_path_buf();
            Ok((Family::Piper, ModelTask::Speak, dir))
        }
        Layout::WhisperCtranslate2 => Err(HubError::NotImportable {
            path: path.to_path_buf(),
            reason: "a CTranslate2 model must be converted first: `izwi models import` does it"
                .into(),
        }),
    }
}

fn detect(src: &Path) -> Result<Layout, HubError> {
    let not = |reason: &str| HubError::NotImportable {
        path: src.to_path_buf(),
        reason: reason.to_string(),
    };
    if !src.exists() {
        return Err(not("it does not exist"));
    }
    if src.is_file() {
        if src.extension().is_some_and(|e| e == "onnx") && piper_config(src).is_file() {
            return Ok(Layout::Piper(src.to_path_buf()));
        }
        return Err(not(
            "a file must be a Piper voice (.onnx with its .onnx.json beside it)",
        ));
    }
    let files = read_dir(src)?;
    let has = |name: &str| src.join(name).is_file();
    if has("model.bin") && has("config.json") {
        return Ok(Layout::WhisperCtranslate2);
    }
    if has("config.json") {
        let config = std::fs::read_to_string(src.join("config.json"))
            .map_err(|e| HubError::io(src.join("config.json"), e))?;
        let model_type = serde_json::from_str::<serde_json::Value>(&config)
            .ok()
            .and_then(|v| v.get("model_type")?.as_str().map(str::to_string));
        if model_type.as_deref() != Some("whisper") {
            return Err(not(&format!(
                "its config.json describes {}, not Whisper",
                model_type.as_deref().unwrap_or("an unknown model")
            )));
        }
        if !files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "safetensors"))
        {
            return Err(not("it has no .safetensors weights"));
        }
        if !has("tokenizer.json") {
            return Err(not("it has no tokenizer.json"));
        }
        return Ok(Layout::WhisperHf);
    }
    let voices: Vec<_> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "onnx") && piper_config(f).is_file())
        .collect();
    match voices.as_slice() {
        [one] => Ok(Layout::Piper((*one).clone())),
        [] => Err(not(
            "expected a Whisper folder (config.json, *.safetensors, tokenizer.json), a \
             CTranslate2 Whisper folder (model.bin, config.json) or a Piper voice \
             (.onnx + .onnx.json)",
        )),
        _ => Err(not(
            "it holds several Piper voices; import one .onnx file at a time",
        )),
    }
}

fn piper_config(onnx: &Path) -> PathBuf {
    let mut name = onnx.as_os_str().to_os_string();
    name.push(".json");
    PathBuf::from(name)
}

fn default_name(src: &Path, layout: &Layout) -> String {
    let path = match layout {
        Layout::Piper(onnx) => onnx.with_extension(""),
        _ => src.to_path_buf(),
    };
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Keeps names usable as folder names on every platform.
fn sanitize(name: &str) -> String {
    let cleaned: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    cleaned.trim_start_matches('.').to_string()
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, HubError> {
    let entries = std::fs::read_dir(dir).map_err(|e| HubError::io(dir, e))?;
    Ok(entries.flatten().map(|e| e.path()).collect())
}

/// A hard link where the file system allows it (no second copy of gigabytes), else a copy.
fn copy(from: &Path, to: &Path) -> Result<(), HubError> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to).map_err(|e| HubError::io(to, e))?;
    Ok(())
}

/// Imported models in `models_dir`, by name.
pub fn list(models_dir: &Path) -> Vec<(PathBuf, Manifest)> {
    let Ok(entries) = std::fs::read_dir(models_dir) else {
        return Vec::new();
    };
    let mut models: Vec<_> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join(MANIFEST)).ok()?;
            let manifest: Manifest = serde_json::from_str(&text).ok()?;
            Some((e.path(), manifest))
        })
        .collect();
    models.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe() {
        assert_eq!(sanitize(" my model/v2 "), "my-model-v2");
        assert_eq!(sanitize("../x"), "-x");
        assert_eq!(sanitize("..."), "");
    }
}
