//! Local models: folders a user already has, copied (or converted) into Izwi's models
//! folder. A Whisper folder in Hugging Face layout (a snapshot of the Hugging Face
//! cache too, whose files are links into its blobs), a CTranslate2 Whisper folder
//! (faster-whisper's; converted by a converter the caller gives) or a Piper voice
//! (.onnx + .onnx.json), a Voxtral Realtime or Qwen3-TTS folder, or a chat model in one
//! GGUF file. Files are copied byte for byte, following links, so an
//! import never shares a file with its source and works after the source is gone.
//! Each file's size and sha256 go into the manifest, to verify the import later.
//! An import is staged in a hidden folder and renamed into place once its manifest
//! is written, so an interrupted import is never listed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Family, HubError, ModelTask};

pub const MANIFEST: &str = "izwi-model.json";
const STAGING_PREFIX: &str = ".importing-";

/// Converts a CTranslate2 Whisper folder (first path) into a Hugging Face layout
/// folder (second path, created by it); the error says why it could not.
pub type Converter<'a> = &'a dyn Fn(&Path, &Path) -> Result<(), String>;

/// What we record of an imported model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub family: Family,
    pub task: ModelTask,
    pub imported_from: PathBuf,
    /// Unix seconds.
    pub imported_at: u64,
    /// Each file as it was imported (imports made before this was recorded have none).
    #[serde(default)]
    pub files: Vec<ImportedFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedFile {
    /// Its name in the import's folder.
    pub name: String,
    pub size: u64,
    pub sha256: String,
}

enum Layout {
    WhisperHf,
    VoxtralRealtime,
    /// A Qwen3-TTS checkpoint with its `speech_tokenizer/` codec.
    Qwen3Tts,
    /// An LFM2-Audio checkpoint; LFM2.5-Audio's adds `audio_detokenizer/`.
    Lfm2Audio,
    WhisperCtranslate2,
    /// The voice's .onnx file.
    Piper(PathBuf),
    /// A chat model's .gguf file.
    Gguf(PathBuf),
}

/// Imports `src` into `models_dir/<name>` and returns its manifest.
pub fn import(
    models_dir: &Path,
    src: &Path,
    name: Option<&str>,
    convert: Converter,
) -> Result<Manifest, HubError> {
    let layout = detect(src)?;
    let name = match name {
        Some(n) => sanitize(n),
        None => sanitize(&default_name(src, &layout)),
    };
    if name.is_empty() {
        return Err(HubError::NotImportable {
            path: src.to_path_buf(),
            reason: "give it a name (--name) made of letters, digits, '.', '-' or '_'".into(),
        });
    }
    let target = models_dir.join(&name);
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(HubError::AlreadyImported(name));
    }
    std::fs::create_dir_all(models_dir).map_err(|e| HubError::io(models_dir, e))?;
    let staging = models_dir.join(format!("{STAGING_PREFIX}{name}"));
    if std::fs::symlink_metadata(&staging).is_ok() {
        // Left by an import that was interrupted.
        std::fs::remove_dir_all(&staging).map_err(|e| HubError::io(&staging, e))?;
    }
    let manifest = match stage(src, &staging, &layout, &name, convert) {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    std::fs::rename(&staging, &target).map_err(|e| HubError::io(&target, e))?;
    Ok(manifest)
}

fn stage(
    src: &Path,
    staging: &Path,
    layout: &Layout,
    name: &str,
    convert: Converter,
) -> Result<Manifest, HubError> {
    let (family, task, files) = match layout {
        Layout::WhisperCtranslate2 => {
            convert(src, staging).map_err(|reason| HubError::Convert {
                path: src.to_path_buf(),
                reason,
            })?;
            let mut files = Vec::new();
            for path in read_dir(staging)? {
                if path.is_file() {
                    let (size, sha256) = hash_file(&path)?;
                    files.push(imported(&path, size, sha256));
                }
            }
            (Family::Whisper, ModelTask::Transcribe, files)
        }
        Layout::WhisperHf => (
            Family::Whisper,
            ModelTask::Transcribe,
            copy_hf_folder(src, staging)?,
        ),
        Layout::VoxtralRealtime => (
            Family::VoxtralRealtime,
            ModelTask::Transcribe,
            copy_hf_folder(src, staging)?,
        ),
        Layout::Qwen3Tts => {
            let mut files = copy_hf_folder(src, staging)?;
            // Qwen2's tokenizer files beside tokenizer.json (or instead of it).
            let merges = src.join("merges.txt");
            if merges.is_file() {
                files.push(copy(&merges, &staging.join("merges.txt"))?);
            }
            let codec = staging.join(SPEECH_TOKENIZER);
            for mut file in copy_hf_folder(&src.join(SPEECH_TOKENIZER), &codec)? {
                file.name = format!("{SPEECH_TOKENIZER}/{}", file.name);
                files.push(file);
            }
            (Family::Qwen3Tts, ModelTask::Speak, files)
        }
        Layout::Lfm2Audio => {
            let mut files = copy_hf_folder(src, staging)?;
            let detokenizer = src.join(AUDIO_DETOKENIZER);
            if detokenizer.is_dir() {
                let to = staging.join(AUDIO_DETOKENIZER);
                for mut file in copy_hf_folder(&detokenizer, &to)? {
                    file.name = format!("{AUDIO_DETOKENIZER}/{}", file.name);
                    files.push(file);
                }
            }
            (Family::Lfm2Audio, ModelTask::Transcribe, files)
        }
        Layout::Piper(onnx) => {
            std::fs::create_dir_all(staging).map_err(|e| HubError::io(staging, e))?;
            let json = piper_config(onnx);
            let mut files = Vec::new();
            for file in [onnx, &json] {
                files.push(copy(
                    file,
                    &staging.join(file.file_name().unwrap_or_default()),
                )?);
            }
            (Family::Piper, ModelTask::Speak, files)
        }
        Layout::Gguf(file) => {
            std::fs::create_dir_all(staging).map_err(|e| HubError::io(staging, e))?;
            let to = staging.join(file.file_name().unwrap_or_default());
            (Family::Llama, ModelTask::Chat, vec![copy(file, &to)?])
        }
    };
    let mut files = files;
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let manifest = Manifest {
        name: name.to_string(),
        family,
        task,
        imported_from: std::fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf()),
        imported_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        files,
    };
    let path = staging.join(MANIFEST);
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| HubError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, json).map_err(|e| HubError::io(&path, e))?;
    Ok(manifest)
}

/// Copies a Hugging Face folder's configuration (`.json`) and weights (`.safetensors`).
fn copy_hf_folder(src: &Path, staging: &Path) -> Result<Vec<ImportedFile>, HubError> {
    std::fs::create_dir_all(staging).map_err(|e| HubError::io(staging, e))?;
    let mut files = Vec::new();
    for entry in read_dir(src)? {
        let file_name = entry.file_name().unwrap_or_default().to_string_lossy();
        // Mistral's own `consolidated*.safetensors` hold the same weights under other
        // names; only the Hugging Face files are loaded.
        let wanted = file_name.ends_with(".json")
            || (file_name.ends_with(".safetensors") && !file_name.starts_with("consolidated"));
        if wanted && entry.is_file() {
            let to = staging.join(entry.file_name().unwrap_or_default());
            files.push(copy(&entry, &to)?);
        }
    }
    Ok(files)
}

/// Whether `path` can be loaded where it is (not a CTranslate2 folder, which needs
/// converting): its family, task and the folder to load from (a chat model's file; a
/// Piper voice's `.onnx`, since one folder often holds several voices).
pub fn usable_in_place(path: &Path) -> Result<(Family, ModelTask, PathBuf), HubError> {
    match detect(path)? {
        Layout::WhisperHf => Ok((Family::Whisper, ModelTask::Transcribe, path.to_path_buf())),
        Layout::VoxtralRealtime => Ok((
            Family::VoxtralRealtime,
            ModelTask::Transcribe,
            path.to_path_buf(),
        )),
        Layout::Qwen3Tts => Ok((Family::Qwen3Tts, ModelTask::Speak, path.to_path_buf())),
        Layout::Lfm2Audio => Ok((Family::Lfm2Audio, ModelTask::Transcribe, path.to_path_buf())),
        Layout::Piper(onnx) => Ok((Family::Piper, ModelTask::Speak, onnx)),
        Layout::Gguf(file) => Ok((Family::Llama, ModelTask::Chat, file)),
        Layout::WhisperCtranslate2 => Err(HubError::NotImportable {
            path: path.to_path_buf(),
            reason: "a CTranslate2 model must be converted first: `izwi models import` does it"
                .into(),
        }),
    }
}

/// Whether `path` begins as every GGUF file does.
fn is_gguf(path: &Path) -> std::io::Result<bool> {
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(path)?;
    match file.read_exact(&mut magic) {
        Ok(()) => Ok(&magic == b"GGUF"),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
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
        if src.extension().is_some_and(|e| e == "gguf") {
            return match is_gguf(src) {
                Ok(true) => Ok(Layout::Gguf(src.to_path_buf())),
                Ok(false) => Err(not("it is named .gguf but is not a GGUF file")),
                Err(e) => Err(HubError::io(src, e)),
            };
        }
        return Err(not(
            "a file must be a Piper voice (.onnx with its .onnx.json beside it) or a chat \
             model (.gguf)",
        ));
    }
    let files = read_dir(src)?;
    // `is_file` follows links: a link whose target is gone is not a file.
    let has = |name: &str| src.join(name).is_file();
    if has("model.bin") && has("config.json") {
        return Ok(Layout::WhisperCtranslate2);
    }
    if has("config.json") {
        let config = std::fs::read_to_string(src.join("config.json"))
            .map_err(|e| HubError::io(src.join("config.json"), e))?;
        let config = serde_json::from_str::<serde_json::Value>(&config).ok();
        let model_type = config
            .as_ref()
            .and_then(|v| v.get("model_type")?.as_str().map(str::to_string));
        let lfm2_audio = config
            .as_ref()
            .and_then(|v| v.get("architectures")?.as_array().cloned())
            .is_some_and(|a| a.iter().any(|a| a.as_str() == Some("LFM2AudioModel")));
        let has_weights = files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "safetensors") && f.is_file());
        if model_type.as_deref() == Some("voxtral_realtime") {
            if !has_weights {
                return Err(not("it has no .safetensors weights"));
            }
            if !has("tekken.json") {
                return Err(not("it has no tekken.json (the Voxtral tokenizer)"));
            }
            return Ok(Layout::VoxtralRealtime);
        }
        if model_type.as_deref() == Some("qwen3_tts") {
            return detect_qwen3_tts(src, has_weights);
        }
        if lfm2_audio {
            return detect_lfm2_audio(src);
        }
        if model_type.as_deref() != Some("whisper") {
            return Err(not(&format!(
                "its config.json describes {}, not Whisper, Voxtral Realtime, Qwen3-TTS or \
                 LFM2-Audio",
                model_type.as_deref().unwrap_or("an unknown model")
            )));
        }
        if !files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "safetensors") && f.is_file())
        {
            return Err(not(
                "it has no .safetensors weights (or their links point to files that are gone)",
            ));
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
             Voxtral Realtime folder (config.json, *.safetensors, tekken.json), a \
             Qwen3-TTS folder (config.json, *.safetensors, speech_tokenizer/), a \
             CTranslate2 Whisper folder (model.bin, config.json) or a Piper voice \
             (.onnx + .onnx.json)",
        )),
        _ => Err(not(
            "it holds several Piper voices; import one .onnx file at a time",
        )),
    }
}

/// The folder of an LFM2.5-Audio checkpoint that holds its audio detokenizer.
const AUDIO_DETOKENIZER: &str = "audio_detokenizer";

/// An LFM2-Audio folder has `model*.safetensors` weights, tokenizer.json and the Mimi
/// codec's weights beside them; LFM2.5-Audio's decodes speech with the detokenizer in
/// `audio_detokenizer/` instead (config.json and weights).
fn detect_lfm2_audio(src: &Path) -> Result<Layout, HubError> {
    let not = |reason: &str| HubError::NotImportable {
        path: src.to_path_buf(),
        reason: reason.to_string(),
    };
    let weights = |dir: &Path, prefix: &str| {
        read_dir(dir).unwrap_or_default().iter().any(|f| {
            f.is_file()
                && f.extension().is_some_and(|e| e == "safetensors")
                && f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
    };
    if !weights(src, "model") {
        return Err(not("it has no model*.safetensors weights"));
    }
    if !src.join("tokenizer.json").is_file() {
        return Err(not("it has no tokenizer.json"));
    }
    let detokenizer = src.join(AUDIO_DETOKENIZER);
    let has_detokenizer = detokenizer.join("config.json").is_file() && weights(&detokenizer, "");
    if !has_detokenizer && !src.join(LFM2_AUDIO_MIMI).is_file() {
        return Err(not(&format!(
            "it has neither the Mimi codec ({LFM2_AUDIO_MIMI}) nor an {AUDIO_DETOKENIZER}/ \
             folder (config.json and weights)"
        )));
    }
    Ok(Layout::Lfm2Audio)
}

/// The Mimi codec's weights in an LFM2-Audio folder (liquid-audio's name for them).
const LFM2_AUDIO_MIMI: &str = "tokenizer-e351c8d8-checkpoint125.safetensors";

/// The folder of a Qwen3-TTS checkpoint that holds its codec (the speech tokenizer).
const SPEECH_TOKENIZER: &str = "speech_tokenizer";

/// A Qwen3-TTS folder has weights, a text tokenizer (tokenizer.json, or Qwen2's
/// vocab.json and merges.txt) and its codec in `speech_tokenizer/`.
fn detect_qwen3_tts(src: &Path, has_weights: bool) -> Result<Layout, HubError> {
    let not = |reason: &str| HubError::NotImportable {
        path: src.to_path_buf(),
        reason: reason.to_string(),
    };
    let has = |name: &str| src.join(name).is_file();
    if !has_weights {
        return Err(not("it has no .safetensors weights"));
    }
    let bpe = has("vocab.json") && has("merges.txt");
    if !(has("tokenizer.json") || bpe) {
        return Err(not(
            "it has no text tokenizer (tokenizer.json, or vocab.json and merges.txt)",
        ));
    }
    let codec = src.join(SPEECH_TOKENIZER);
    let codec_weights = read_dir(&codec)
        .unwrap_or_default()
        .iter()
        .any(|f| f.extension().is_some_and(|e| e == "safetensors") && f.is_file());
    if !codec.join("config.json").is_file() || !codec_weights {
        return Err(not(
            "it has no speech_tokenizer/ folder with the codec's config.json and weights",
        ));
    }
    Ok(Layout::Qwen3Tts)
}

fn piper_config(onnx: &Path) -> PathBuf {
    let mut name = onnx.as_os_str().to_os_string();
    name.push(".json");
    PathBuf::from(name)
}

fn default_name(src: &Path, layout: &Layout) -> String {
    let path = match layout {
        Layout::Piper(onnx) | Layout::Gguf(onnx) => onnx.with_extension(""),
        // `.` or `foo/..` name no folder until resolved.
        _ => src.canonicalize().unwrap_or_else(|_| src.to_path_buf()),
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

fn imported(path: &Path, size: u64, sha256: String) -> ImportedFile {
    ImportedFile {
        name: path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        size,
        sha256,
    }
}

/// Copies the bytes `from` names (following links) into a new file `to`, hashing them
/// on the way. Never a hard link: the import must not share a file with its source.
fn copy(from: &Path, to: &Path) -> Result<ImportedFile, HubError> {
    let mut input = std::fs::File::open(from).map_err(|e| HubError::io(from, e))?;
    let mut output = std::fs::File::create_new(to).map_err(|e| HubError::io(to, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(|e| HubError::io(from, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        output
            .write_all(&buf[..n])
            .map_err(|e| HubError::io(to, e))?;
        size += n as u64;
    }
    output.sync_all().map_err(|e| HubError::io(to, e))?;
    Ok(imported(to, size, hex(&hasher.finalize())))
}

fn hash_file(path: &Path) -> Result<(u64, String), HubError> {
    let size = std::fs::metadata(path)
        .map_err(|e| HubError::io(path, e))?
        .len();
    Ok((size, crate::verify::sha256_file(path)?))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Imported models in `models_dir`, by name: only real folders directly inside it
/// (a link planted there is not an import).
pub fn list(models_dir: &Path) -> Vec<(PathBuf, Manifest)> {
    let Ok(entries) = std::fs::read_dir(models_dir) else {
        return Vec::new();
    };
    let mut models: Vec<_> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join(MANIFEST)).ok()?;
            let manifest: Manifest = serde_json::from_str(&text).ok()?;
            Some((e.path(), manifest))
        })
        .collect();
    models.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    models
}

/// Deletes the import folder `dir` after checking it is a real folder directly inside
/// `models_dir` (canonically: no link, no `..` leads elsewhere).
pub fn remove(models_dir: &Path, dir: &Path) -> Result<(), HubError> {
    let refuse = || HubError::NotRemovable(dir.display().to_string());
    let meta = std::fs::symlink_metadata(dir).map_err(|e| HubError::io(dir, e))?;
    if !meta.is_dir() {
        return Err(refuse());
    }
    let root = std::fs::canonicalize(models_dir).map_err(|e| HubError::io(models_dir, e))?;
    let real = std::fs::canonicalize(dir).map_err(|e| HubError::io(dir, e))?;
    if real.parent() != Some(root.as_path())
        || real != root.join(dir.file_name().unwrap_or_default())
    {
        return Err(refuse());
    }
    std::fs::remove_dir_all(&real).map_err(|e| HubError::io(&real, e))
}

/// Re-hashes an import's files against what its manifest recorded.
pub fn verify(dir: &Path, manifest: &Manifest, id: &str) -> Result<(), HubError> {
    if manifest.files.is_empty() {
        let path = dir.join(MANIFEST);
        return Err(HubError::Io {
            path,
            source: std::io::Error::other(format!(
                "{id} was imported by an older Izwi that kept no checksums; remove it and \
                 import it again to be able to verify it"
            )),
        });
    }
    for file in &manifest.files {
        crate::verify::check(&dir.join(&file.name), &file.name, file.size, &file.sha256)?;
    }
    Ok(())
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
