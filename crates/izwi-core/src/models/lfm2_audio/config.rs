//! LFM2-Audio's `config.json` as liquid-audio reads it (`LFM2AudioConfig`): the
//! preprocessor, the FastConformer encoder, the LFM2 backbone (`lfm`) and the
//! depthformer. Options liquid-audio's checkpoints do not use are refused by name.

use serde::Deserialize;

use crate::models::lfm2::Lfm2Config;

/// Audio-output tokens per codebook: Mimi's 2048 codes and end-of-audio.
pub const AUDIO_VOCAB: usize = 2049;
/// The end-of-audio code (in every codebook of the frame that ends the audio).
pub const END_OF_AUDIO: u32 = 2048;

#[derive(Debug, Clone, Deserialize)]
pub struct Lfm2AudioConfig {
    pub codebooks: usize,
    #[serde(default)]
    pub tie_audio_embeddings: bool,
    pub interleaved_n_text: usize,
    pub interleaved_n_audio: usize,
    pub preprocessor: PreprocessorConfig,
    pub encoder: ConformerConfig,
    pub lfm: Lfm2Config,
    pub depthformer: DepthformerConfig,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PreprocessorConfig {
    pub sample_rate: usize,
    pub normalize: String,
    pub window_size: f64,
    pub window_stride: f64,
    pub window: String,
    pub features: usize,
    pub n_fft: usize,
    pub log: bool,
    pub frame_splicing: usize,
    #[serde(default)]
    pub pad_to: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ConformerConfig {
    pub feat_in: usize,
    #[serde(default = "minus_one")]
    pub feat_out: i64,
    pub n_layers: usize,
    pub d_model: usize,
    pub subsampling: String,
    pub subsampling_factor: usize,
    pub subsampling_conv_channels: i64,
    #[serde(default)]
    pub causal_downsampling: bool,
    #[serde(default)]
    pub reduction: Option<String>,
    pub ff_expansion_factor: usize,
    pub self_attention_model: String,
    pub n_heads: usize,
    #[serde(default)]
    pub att_context_size: Option<Vec<i64>>,
    #[serde(default)]
    pub xscaling: bool,
    #[serde(default = "yes")]
    pub untie_biases: bool,
    pub conv_kernel_size: usize,
    pub conv_norm_type: String,
    #[serde(default)]
    pub conv_context_size: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DepthformerConfig {
    pub layers: usize,
    pub dim: usize,
    #[serde(default = "yes")]
    pub tie: bool,
}

fn minus_one() -> i64 {
    -1
}
fn yes() -> bool {
    true
}

impl PreprocessorConfig {
    pub fn validate(&self) -> candle_core::Result<()> {
        let supported = self.normalize == "per_feature"
            && self.window == "hann"
            && self.log
            && self.frame_splicing == 1
            && self.pad_to == 0;
        if !supported {
            candle_core::bail!(
                "unsupported LFM2-Audio preprocessor (normalize {:?}, window {:?}, log {}, \
                 frame_splicing {}, pad_to {}): only per_feature, hann, log, 1, 0",
                self.normalize,
                self.window,
                self.log,
                self.frame_splicing,
                self.pad_to
            );
        }
        Ok(())
    }
}

impl ConformerConfig {
    pub fn validate(&self) -> candle_core::Result<()> {
        let unsupported = |what: &str| {
            Err(candle_core::Error::msg(format!(
                "unsupported LFM2-Audio encoder: {what}"
            )))
        };
        if self.subsampling != "dw_striding" || !self.subsampling_factor.is_power_of_two() {
            return unsupported(&format!(
                "subsampling {:?} x{}",
                self.subsampling, self.subsampling_factor
            ));
        }
        if self.causal_downsampling {
            return unsupported("causal_downsampling");
        }
        if self.reduction.is_some() {
            return unsupported("reduction");
        }
        if self.self_attention_model != "rel_pos" {
            return unsupported(&format!(
                "self_attention_model {:?}",
                self.self_attention_model
            ));
        }
        if self
            .att_context_size
            .as_ref()
            .is_some_and(|c| c.iter().any(|&v| v != -1))
        {
            return unsupported("a limited att_context_size");
        }
        if self.xscaling {
            return unsupported("xscaling");
        }
        if !self.untie_biases {
            return unsupported("tied position biases");
        }
        if self.conv_norm_type != "batch_norm" {
            return unsupported(&format!("conv_norm_type {:?}", self.conv_norm_type));
        }
        if self.conv_context_size.is_some() || self.conv_kernel_size.is_multiple_of(2) {
            return unsupported("a non-centred convolution context");
        }
        if self.feat_out > 0 && self.feat_out as usize != self.d_model {
            return unsupported("feat_out other than d_model");
        }
        if !self.d_model.is_multiple_of(self.n_heads) {
            return unsupported("d_model not a multiple of n_heads");
        }
        Ok(())
    }

    pub fn conv_channels(&self) -> usize {
        if self.subsampling_conv_channels <= 0 {
            self.d_model
        } else {
            self.subsampling_conv_channels as usize
        }
    }
}
