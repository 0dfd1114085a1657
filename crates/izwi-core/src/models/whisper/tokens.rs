//! Whisper's tokenizer and its special tokens.

use std::path::Path;

use serde::Deserialize;
use tokenizers::Tokenizer;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("cannot load the Whisper tokenizer {path}: {message}")]
    Load { path: String, message: String },
    #[error("the Whisper tokenizer has no {0} token")]
    MissingToken(&'static str),
    #[error("cannot read {path}: {message}")]
    Config { path: String, message: String },
    #[error("tokenizer failure: {0}")]
    Tokenizer(String),
}

/// Token ids with a role in Whisper's decoding.
#[derive(Debug, Clone)]
pub struct SpecialTokens {
    pub eot: u32,
    pub sot: u32,
    pub sot_prev: u32,
    pub transcribe: u32,
    pub translate: u32,
    pub no_timestamps: u32,
    pub no_speech: u32,
    /// `<|0.00|>`; every id from here up is a timestamp, 0.02 s apart.
    pub timestamp_begin: u32,
    /// Language codes and their tokens, in the model's order; empty for English-only
    /// models.
    pub languages: Vec<(String, u32)>,
    /// Tokens never to generate (non-speech symbols), from generation_config.json.
    pub suppress: Vec<u32>,
    /// Tokens not to generate first (a blank, end of text).
    pub begin_suppress: Vec<u32>,
}

impl SpecialTokens {
    /// The special tokens of a vocabulary, looked up by name (`id_of`) and by id
    /// (`token_of`), with no suppress lists. Language tokens sit between
    /// start-of-transcript and translate; English-only models have none.
    pub fn find(
        id_of: impl Fn(&str) -> Option<u32>,
        token_of: impl Fn(u32) -> Option<String>,
        multilingual: bool,
    ) -> Result<Self, TokenizerError> {
        let id = |token: &'static str| id_of(token).ok_or(TokenizerError::MissingToken(token));
        let sot = id("<|startoftranscript|>")?;
        let translate = id("<|translate|>")?;
        let no_timestamps = id("<|notimestamps|>")?;
        let languages = if multilingual {
            (sot + 1..translate)
                .filter_map(|t| {
                    let token = token_of(t)?;
                    let code = token.strip_prefix("<|")?.strip_suffix("|>")?;
                    Some((code.to_string(), t))
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Self {
            eot: id("<|endoftext|>")?,
            sot,
            sot_prev: id("<|startofprev|>")?,
            transcribe: id("<|transcribe|>")?,
            translate,
            no_timestamps,
            no_speech: id("<|nospeech|>").or_else(|_| id("<|nocaptions|>"))?,
            timestamp_begin: no_timestamps + 1,
            languages,
            suppress: Vec::new(),
            begin_suppress: Vec::new(),
        })
    }
}

#[derive(Deserialize)]
struct ModelConfig {
    vocab_size: usize,
}

#[derive(Deserialize, Default)]
struct GenerationConfig {
    #[serde(default)]
    suppress_tokens: Vec<u32>,
    #[serde(default)]
    begin_suppress_tokens: Vec<u32>,
}

pub struct WhisperTokenizer {
    tokenizer: Tokenizer,
    pub special: SpecialTokens,
}

/// Whether the model in `dir` knows many languages, from its config alone (cheap:
/// callers check a request before loading the model). OpenAI's rule: the multilingual
/// vocabulary is one token larger. English-only tokenizers list the language tokens
/// too, so only the model's size tells.
pub fn is_multilingual_dir(dir: &Path) -> Result<bool, TokenizerError> {
    let config_path = dir.join("config.json");
    let config: ModelConfig = std::fs::read_to_string(&config_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        .map_err(|message| TokenizerError::Config {
            path: config_path.display().to_string(),
            message,
        })?;
    Ok(config.vocab_size >= 51865)
}

impl WhisperTokenizer {
    /// Loads `tokenizer.json`, `config.json` and, when present, `generation_config.json`
    /// of a model folder.
    pub fn from_dir(dir: &Path) -> Result<Self, TokenizerError> {
        let path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&path).map_err(|e| TokenizerError::Load {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let gen_path = dir.join("generation_config.json");
        let generation: GenerationConfig = match std::fs::read_to_string(&gen_path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| TokenizerError::Config {
                path: gen_path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(_) => GenerationConfig::default(),
        };
        let special = SpecialTokens {
            suppress: generation.suppress_tokens,
            begin_suppress: generation.begin_suppress_tokens,
            ..SpecialTokens::find(
                |token| tokenizer.token_to_id(token),
                |id| tokenizer.id_to_token(id),
                is_multilingual_dir(dir)?,
            )?
        };
        Ok(Self { tokenizer, special })
    }

    pub fn is_multilingual(&self) -> bool {
        !self.special.languages.is_empty()
    }

    pub fn language_token(&self, code: &str) -> Option<u32> {
        self.special
            .languages
            .iter()
            .find(|(c, _)| c == code)
            .map(|&(_, t)| t)
    }

    pub fn language_code(&self, token: u32) -> Option<&str> {
        self.special
            .languages
            .iter()
            .find(|&&(_, t)| t == token)
            .map(|(c, _)| c.as_str())
    }

    /// Text of ordinary tokens (special and timestamp tokens are skipped).
    pub fn decode(&self, tokens: &[u32]) -> Result<String, TokenizerError> {
        let text: Vec<u32> = tokens
            .iter()
            .copied()
            .filter(|&t| t < self.special.eot)
            .collect();
        self.tokenizer
            .decode(&text, true)
            .map_err(|e| TokenizerError::Tokenizer(e.to_string()))
    }

    /// Tokens of plain text (an initial prompt, say), without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| TokenizerError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }
}
