//! The checkpoint's `tekken.json` (Mistral's Tekken tokenizer, as mistral-common reads
//! it): the special tokens, the byte sequence of every other token, and the streaming
//! audio settings. Transcription only decodes text and builds its prompt from special
//! tokens, so no BPE encoder is needed.

use std::collections::HashMap;
use std::path::Path;

use base64::Engine;
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum TekkenError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid tekken.json {path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Deserialize)]
struct File {
    config: FileConfig,
    vocab: Vec<VocabEntry>,
    special_tokens: Vec<SpecialEntry>,
    audio: Option<StreamingAudio>,
}

#[derive(Deserialize)]
struct FileConfig {
    default_vocab_size: usize,
    default_num_special_tokens: usize,
}

#[derive(Deserialize)]
struct VocabEntry {
    rank: usize,
    token_bytes: String,
}

#[derive(Deserialize)]
struct SpecialEntry {
    rank: usize,
    token_str: String,
}

/// The streaming transcription settings of the tokenizer's `audio` section.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamingAudio {
    pub sampling_rate: usize,
    /// Decoder positions per second of audio.
    pub frame_rate: f64,
    pub audio_encoding_config: SpectrogramConfig,
    pub transcription_format: String,
    /// How far the text runs behind the audio by default.
    pub transcription_delay_ms: Option<f64>,
    /// Silent positions put before the audio.
    pub streaming_n_left_pad_tokens: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SpectrogramConfig {
    pub num_mel_bins: usize,
    pub hop_length: usize,
    pub window_size: usize,
}

impl StreamingAudio {
    /// Audio samples per decoder position.
    pub fn samples_per_token(&self) -> usize {
        (self.sampling_rate as f64 / self.frame_rate) as usize
    }

    /// Decoder positions in a delay of `ms` milliseconds.
    pub fn delay_tokens(&self, ms: f64) -> usize {
        let samples = (ms / 1000.0 * self.sampling_rate as f64) as usize;
        samples.div_ceil(self.samples_per_token())
    }
}

pub struct Tekken {
    /// Bytes of every token id; empty for special tokens.
    bytes: Vec<Vec<u8>>,
    num_special: usize,
    special: HashMap<String, u32>,
    audio: Option<StreamingAudio>,
}

impl Tekken {
    pub fn from_file(path: &Path) -> Result<Self, TekkenError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TekkenError::Read {
            path: shown.clone(),
            source,
        })?;
        let invalid = |message: String| TekkenError::Invalid {
            path: shown.clone(),
            message,
        };
        let file: File = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let num_special = file.config.default_num_special_tokens;
        let size = file.config.default_vocab_size;
        if size < num_special {
            return Err(invalid(format!(
                "vocabulary of {size} is smaller than its {num_special} special tokens"
            )));
        }
        let mut bytes = vec![Vec::new(); size];
        for entry in &file.vocab {
            let id = entry.rank + num_special;
            if id >= size {
                // The file's vocabulary may be longer than the model's; the rest is unused.
                continue;
            }
            bytes[id] = base64::engine::general_purpose::STANDARD
                .decode(&entry.token_bytes)
                .map_err(|e| invalid(format!("token {}: {e}", entry.rank)))?;
        }
        let special = file
            .special_tokens
            .iter()
            .filter(|t| t.rank < num_special)
            .map(|t| (t.token_str.clone(), t.rank as u32))
            .collect();
        Ok(Self {
            bytes,
            num_special,
            special,
            audio: file.audio,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    /// The id of a special token such as `<s>` or `[STREAMING_PAD]`.
    pub fn special(&self, name: &str) -> Option<u32> {
        self.special.get(name).copied()
    }

    pub fn is_special(&self, id: u32) -> bool {
        (id as usize) < self.num_special
    }

    pub fn audio(&self) -> Option<&StreamingAudio> {
        self.audio.as_ref()
    }

    /// The bytes the non-special tokens among `ids` stand for.
    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter()
            .filter_map(|&id| self.bytes.get(id as usize))
            .flatten()
            .copied()
            .collect()
    }

    /// The text of `ids`, special tokens left out; bytes that are not UTF-8 become U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        String::from_utf8_lossy(&self.decode_bytes(ids)).into_owned()
    }
}
