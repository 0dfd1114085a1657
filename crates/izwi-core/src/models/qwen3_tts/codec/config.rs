//! `speech_tokenizer/config.json` of the 12 Hz codec: the decoder's fields and the rates.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct CodecConfig {
    pub decoder_config: CodecDecoderConfig,
    pub output_sample_rate: u32,
    /// Output samples per frame.
    pub decode_upsample_rate: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CodecDecoderConfig {
    pub codebook_size: usize,
    pub codebook_dim: usize,
    pub hidden_size: usize,
    pub latent_dim: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    #[serde(default)]
    pub head_dim: Option<usize>,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub sliding_window: usize,
    pub num_quantizers: usize,
    pub upsample_rates: Vec<usize>,
    pub upsampling_ratios: Vec<usize>,
    pub decoder_dim: usize,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub hidden_act: Option<String>,
}

fn default_eps() -> f64 {
    1e-5
}
fn default_theta() -> f64 {
    10_000.0
}
fn default_positions() -> usize {
    8000
}

impl CodecDecoderConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads)
    }

    /// Output samples per frame: every upsampling stage multiplied.
    pub fn upsampling(&self) -> usize {
        self.upsample_rates
            .iter()
            .chain(&self.upsampling_ratios)
            .product()
    }
}
