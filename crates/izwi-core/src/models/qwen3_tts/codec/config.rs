//! `speech_tokenizer/config.json` of the 12 Hz codec: the encoder's and the decoder's
//! fields and the rates.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct CodecConfig {
    pub decoder_config: CodecDecoderConfig,
    pub output_sample_rate: u32,
    /// Output samples per frame.
    pub decode_upsample_rate: usize,
    #[serde(default)]
    pub encoder_config: Option<CodecEncoderConfig>,
    /// Codebooks of the encoder's codes that the talker uses.
    #[serde(default = "default_valid_quantizers")]
    pub encoder_valid_num_quantizers: usize,
    #[serde(default = "default_rate")]
    pub input_sample_rate: u32,
    /// Input samples per frame.
    #[serde(default = "default_downsample")]
    pub encode_downsample_rate: usize,
}

/// The encoder's config: a Mimi encoder (SEANet convolutions, a transformer, a ×2
/// downsampling and a split residual quantizer), with `MimiConfig`'s defaults.
#[derive(Debug, Clone, Deserialize)]
pub struct CodecEncoderConfig {
    #[serde(default = "default_rate")]
    pub sampling_rate: u32,
    #[serde(default = "one")]
    pub audio_channels: usize,
    #[serde(default = "default_encoder_hidden")]
    pub hidden_size: usize,
    #[serde(default = "default_filters")]
    pub num_filters: usize,
    #[serde(default = "one")]
    pub num_residual_layers: usize,
    #[serde(default = "default_ratios")]
    pub upsampling_ratios: Vec<usize>,
    #[serde(default = "default_kernel")]
    pub kernel_size: usize,
    #[serde(default = "three")]
    pub last_kernel_size: usize,
    #[serde(default = "three")]
    pub residual_kernel_size: usize,
    #[serde(default = "two")]
    pub dilation_growth_rate: usize,
    #[serde(default = "yes")]
    pub use_causal_conv: bool,
    #[serde(default = "default_pad_mode")]
    pub pad_mode: String,
    #[serde(default = "two")]
    pub compress: usize,
    #[serde(default)]
    pub use_conv_shortcut: bool,
    #[serde(default = "default_codebook_size")]
    pub codebook_size: usize,
    #[serde(default = "default_vq_dim")]
    pub codebook_dim: usize,
    #[serde(default = "default_vq_dim")]
    pub vector_quantization_hidden_dimension: usize,
    #[serde(default = "default_encoder_quantizers")]
    pub num_quantizers: usize,
    #[serde(default = "one")]
    pub num_semantic_quantizers: usize,
    #[serde(default = "default_encoder_layers")]
    pub num_hidden_layers: usize,
    #[serde(default = "default_encoder_intermediate")]
    pub intermediate_size: usize,
    #[serde(default = "default_encoder_layers")]
    pub num_attention_heads: usize,
    #[serde(default = "default_encoder_layers")]
    pub num_key_value_heads: usize,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_gelu")]
    pub hidden_act: String,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub norm_eps: f64,
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    #[serde(default)]
    pub attention_bias: bool,
    /// The frame rate after the downsampling (12.5 Hz); saved as `_frame_rate`.
    #[serde(default, alias = "_frame_rate")]
    pub frame_rate: Option<f64>,
}

impl CodecEncoderConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or_else(|| self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Samples per step of the convolutions' output.
    pub fn hop(&self) -> usize {
        self.upsampling_ratios.iter().product()
    }
}

fn default_valid_quantizers() -> usize {
    16
}
fn default_rate() -> u32 {
    24_000
}
fn default_downsample() -> usize {
    1920
}
fn one() -> usize {
    1
}
fn two() -> usize {
    2
}
fn three() -> usize {
    3
}
fn yes() -> bool {
    true
}
fn default_encoder_hidden() -> usize {
    512
}
fn default_filters() -> usize {
    64
}
fn default_ratios() -> Vec<usize> {
    vec![8, 6, 5, 4]
}
fn default_kernel() -> usize {
    7
}
fn default_pad_mode() -> String {
    "constant".into()
}
fn default_codebook_size() -> usize {
    2048
}
fn default_vq_dim() -> usize {
    256
}
fn default_encoder_quantizers() -> usize {
    32
}
fn default_encoder_layers() -> usize {
    8
}
fn default_encoder_intermediate() -> usize {
    2048
}
fn default_gelu() -> String {
    "gelu".into()
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
            .unwrap_or_else(|| self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Output samples per frame: every upsampling stage multiplied.
    pub fn upsampling(&self) -> usize {
        self.upsample_rates
            .iter()
            .chain(&self.upsampling_ratios)
            .product()
    }
}
