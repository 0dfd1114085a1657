//! The checkpoint's `config.json` (transformers' `VoxtralRealtimeConfig`), the fields the
//! model uses.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct VoxtralRealtimeConfig {
    pub audio_config: EncoderConfig,
    pub text_config: DecoderConfig,
    /// Encoder frames joined into one decoder position.
    #[serde(default = "default_downsample")]
    pub downsample_factor: usize,
    /// Mel frames per decoder position.
    #[serde(default = "default_audio_length_per_tok")]
    pub audio_length_per_tok: usize,
    #[serde(default = "default_delay")]
    pub default_num_delay_tokens: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EncoderConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub head_dim: usize,
    pub num_mel_bins: usize,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// Frames each encoder frame attends to, itself included.
    pub sliding_window: usize,
    #[serde(default)]
    pub rope_parameters: Option<RopeParameters>,
    #[serde(default)]
    pub rope_theta: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DecoderConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    pub max_position_embeddings: usize,
    /// Positions each token attends to; the model runs only sequences this long.
    #[serde(default)]
    pub sliding_window: Option<usize>,
    #[serde(default)]
    pub rope_parameters: Option<RopeParameters>,
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(default = "yes")]
    pub tie_word_embeddings: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RopeParameters {
    #[serde(default)]
    pub rope_type: Option<String>,
    pub rope_theta: Option<f64>,
}

/// The RoPE base of a sub-config (transformers 5.x keeps it in `rope_parameters`), or
/// an error naming a scaling type we do not implement.
fn rope_theta(
    parameters: &Option<RopeParameters>,
    theta: Option<f64>,
) -> Result<f64, candle_core::Error> {
    if let Some(kind) = parameters.as_ref().and_then(|p| p.rope_type.as_deref()) {
        if kind != "default" {
            candle_core::bail!("RoPE type {kind:?} is not supported");
        }
    }
    Ok(parameters
        .as_ref()
        .and_then(|p| p.rope_theta)
        .or(theta)
        .unwrap_or(1_000_000.0))
}

impl EncoderConfig {
    pub fn rope_theta(&self) -> candle_core::Result<f64> {
        rope_theta(&self.rope_parameters, self.rope_theta)
    }
}

impl DecoderConfig {
    pub fn rope_theta(&self) -> candle_core::Result<f64> {
        rope_theta(&self.rope_parameters, self.rope_theta)
    }

    /// The longest sequence the decoder runs: its positions, and no further than its
    /// attention window (positions beyond it would need a sliding-window cache).
    pub fn max_positions(&self) -> usize {
        self.sliding_window
            .map_or(self.max_position_embeddings, |w| {
                w.min(self.max_position_embeddings)
            })
    }
}

fn default_downsample() -> usize {
    4
}

fn default_audio_length_per_tok() -> usize {
    8
}

fn default_delay() -> usize {
    6
}

fn default_eps() -> f64 {
    1e-5
}

fn yes() -> bool {
    true
}
