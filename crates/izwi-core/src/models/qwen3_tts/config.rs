//! The fields of a Qwen3-TTS `config.json` (and of its speech tokenizer's) that the
//! model uses.

use std::collections::HashMap;

use serde::Deserialize;

use super::speaker_encoder::SpeakerEncoderConfig;
use crate::models::llama::{Architecture, LlamaConfig};

/// `config.json` of a Qwen3-TTS checkpoint (`Qwen3TTSForConditionalGeneration`).
#[derive(Debug, Clone, Deserialize)]
pub struct Qwen3TtsConfig {
    pub talker_config: TalkerConfig,
    /// Base checkpoints' speaker encoder, for cloning.
    #[serde(default)]
    pub speaker_encoder_config: Option<SpeakerEncoderConfig>,
    /// `base`, `custom_voice` or `voice_design`.
    #[serde(default)]
    pub tts_model_type: Option<String>,
    #[serde(default)]
    pub tokenizer_type: Option<String>,
    pub im_start_token_id: u32,
    pub im_end_token_id: u32,
    pub tts_pad_token_id: u32,
    pub tts_bos_token_id: u32,
    pub tts_eos_token_id: u32,
}

/// The talker: a Qwen3 decoder over codec tokens, with the text embedding it is
/// conditioned on.
#[derive(Debug, Clone, Deserialize)]
pub struct TalkerConfig {
    pub code_predictor_config: CodePredictorConfig,
    /// Codec vocabulary: the codebook's codes, then control tokens.
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    pub num_code_groups: usize,
    pub text_hidden_size: usize,
    pub text_vocab_size: usize,
    pub codec_eos_token_id: u32,
    pub codec_think_id: u32,
    pub codec_nothink_id: u32,
    pub codec_think_bos_id: u32,
    pub codec_think_eos_id: u32,
    pub codec_pad_id: u32,
    pub codec_bos_id: u32,
    #[serde(default)]
    pub codec_language_id: HashMap<String, u32>,
    /// CustomVoice speakers: name to codec token.
    #[serde(default)]
    pub spk_id: HashMap<String, u32>,
    /// CustomVoice speakers: `false`, or the dialect (a `codec_language_id` key) the
    /// speaker speaks when the language is Chinese or left to the model.
    #[serde(default)]
    pub spk_is_dialect: HashMap<String, serde_json::Value>,
    #[serde(default)]
    pub hidden_act: Option<String>,
}

/// The code predictor: a small Qwen3 decoder that predicts codebooks 1.. of a frame from
/// the talker's hidden state and codebook 0.
#[derive(Debug, Clone, Deserialize)]
pub struct CodePredictorConfig {
    /// Codes per codebook.
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    pub num_code_groups: usize,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    10_000.0
}
fn default_positions() -> usize {
    32_768
}

impl TalkerConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or_else(|| self.hidden_size / self.num_attention_heads.max(1))
    }

    /// The talker's decoder layers are Qwen3's; this is their shape as the Llama
    /// family's config, so they are built by the same code.
    pub(crate) fn layers(&self) -> LlamaConfig {
        decoder_layers(
            self.vocab_size,
            self.hidden_size,
            self.intermediate_size,
            self.num_hidden_layers,
            (
                self.num_attention_heads,
                self.num_key_value_heads,
                self.head_dim(),
            ),
            self.rms_norm_eps,
            self.max_position_embeddings,
        )
    }

    /// Refuses what this implementation does not run, rather than running it wrong.
    pub fn check_supported(&self) -> Result<(), String> {
        if let Some(act) = &self.hidden_act {
            if act != "silu" {
                return Err(format!("activation {act} is not supported"));
            }
        }
        if self.num_code_groups != self.code_predictor_config.num_code_groups {
            return Err(format!(
                "the talker has {} codebooks and its code predictor {}",
                self.num_code_groups, self.code_predictor_config.num_code_groups
            ));
        }
        if self.num_code_groups < 2 || self.vocab_size <= self.code_predictor_config.vocab_size {
            return Err("the codec needs at least two codebooks and control tokens".into());
        }
        self.layers().check_supported()?;
        self.code_predictor_config.layers().check_supported()
    }
}

impl CodePredictorConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or_else(|| self.hidden_size / self.num_attention_heads.max(1))
    }

    pub(crate) fn layers(&self) -> LlamaConfig {
        decoder_layers(
            self.vocab_size,
            self.hidden_size,
            self.intermediate_size,
            self.num_hidden_layers,
            (
                self.num_attention_heads,
                self.num_key_value_heads,
                self.head_dim(),
            ),
            self.rms_norm_eps,
            self.max_position_embeddings,
        )
    }
}

fn decoder_layers(
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    (heads, kv_heads, head_dim): (usize, usize, usize),
    rms_norm_eps: f64,
    max_position_embeddings: usize,
) -> LlamaConfig {
    LlamaConfig {
        architecture: Architecture::Qwen3,
        vocab_size,
        hidden_size,
        intermediate_size,
        num_hidden_layers,
        num_attention_heads: heads,
        num_key_value_heads: Some(kv_heads),
        head_dim: Some(head_dim),
        rms_norm_eps,
        rope_theta: None,
        rope_parameters: None,
        rope_scaling: None,
        attention_bias: false,
        mlp_bias: false,
        max_position_embeddings,
        tie_word_embeddings: false,
        eos_token_id: None,
    }
}
