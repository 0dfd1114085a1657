use serde::{Deserialize, Serialize};

use crate::models::llama::EosTokens;

/// The fields of a Hugging Face `Lfm2Config` (config.json) that the model uses. Liquid's
/// checkpoints also carry their original names for some (`block_ff_dim`, `theta`,
/// `tie_embedding`); both are read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lfm2Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    #[serde(alias = "block_ff_dim")]
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub norm_eps: f64,
    #[serde(default = "default_theta", alias = "theta")]
    pub rope_theta: f64,
    /// Long-context RoPE scaling; not supported.
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    pub conv_bias: bool,
    /// The short convolution's kernel size.
    #[serde(default = "default_conv_kernel", rename = "conv_L_cache")]
    pub conv_kernel: usize,
    #[serde(default = "default_multiple_of")]
    pub block_multiple_of: usize,
    #[serde(default)]
    pub block_ffn_dim_multiplier: Option<f64>,
    #[serde(default = "yes")]
    pub block_auto_adjust_ff_dim: bool,
    /// Which layers attend (older configs); the others convolve.
    #[serde(default)]
    pub full_attn_idxs: Option<Vec<usize>>,
    /// `"full_attention"` or `"conv"` per layer (newer configs; wins over
    /// `full_attn_idxs`).
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
    #[serde(default = "yes", alias = "tie_embedding")]
    pub tie_word_embeddings: bool,
    #[serde(default)]
    pub eos_token_id: Option<EosTokens>,
}

/// What one layer of the backbone mixes its sequence with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    Attention,
    Conv,
}

fn default_max_positions() -> usize {
    128_000
}
fn default_eps() -> f64 {
    1e-5
}
fn default_theta() -> f64 {
    1_000_000.0
}
fn default_conv_kernel() -> usize {
    3
}
fn default_multiple_of() -> usize {
    256
}
fn yes() -> bool {
    true
}

impl Lfm2Config {
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads.max(1)
    }

    /// The kind of every layer, from `layer_types` or else `full_attn_idxs` (all
    /// attention when neither is given, as transformers reads it).
    pub fn layer_kinds(&self) -> Result<Vec<LayerKind>, String> {
        if let Some(types) = &self.layer_types {
            if types.len() != self.num_hidden_layers {
                return Err(format!(
                    "{} layer types for {} layers",
                    types.len(),
                    self.num_hidden_layers
                ));
            }
            return types
                .iter()
                .map(|t| match t.as_str() {
                    "full_attention" => Ok(LayerKind::Attention),
                    "conv" => Ok(LayerKind::Conv),
                    other => Err(format!("unknown LFM2 layer type {other:?}")),
                })
                .collect();
        }
        Ok((0..self.num_hidden_layers)
            .map(|i| match &self.full_attn_idxs {
                Some(idxs) if !idxs.contains(&i) => LayerKind::Conv,
                _ => LayerKind::Attention,
            })
            .collect())
    }

    /// The feed-forward width the checkpoint's weights have: two thirds of the stated
    /// size, scaled and rounded up to `block_multiple_of` when `block_auto_adjust_ff_dim`
    /// (as transformers computes it).
    pub fn ff_dim(&self) -> usize {
        if !self.block_auto_adjust_ff_dim {
            return self.intermediate_size;
        }
        let mut size = 2 * self.intermediate_size / 3;
        if let Some(multiplier) = self.block_ffn_dim_multiplier {
            size = (multiplier * size as f64) as usize;
            size = size.div_ceil(self.block_multiple_of) * self.block_multiple_of;
        }
        size
    }

    /// Refuses checkpoints whose features this implementation lacks.
    pub fn check_supported(&self) -> Result<(), String> {
        if self.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err("RoPE scaling is not supported".into());
        }
        if self.conv_kernel < 2 {
            return Err(format!(
                "a convolution kernel of {} is not supported",
                self.conv_kernel
            ));
        }
        if self.num_key_value_heads == 0
            || !self
                .num_attention_heads
                .is_multiple_of(self.num_key_value_heads)
        {
            return Err(format!(
                "{} attention heads cannot share {} key/value heads evenly",
                self.num_attention_heads, self.num_key_value_heads
            ));
        }
        let kinds = self.layer_kinds()?;
        if !kinds.contains(&LayerKind::Attention) {
            return Err("an LFM2 without attention layers is not supported".into());
        }
        Ok(())
    }

    pub fn eos_token_ids(&self) -> Vec<u32> {
        match &self.eos_token_id {
            None => Vec::new(),
            Some(EosTokens::One(id)) => vec![*id],
            Some(EosTokens::Many(ids)) => ids.clone(),
        }
    }

    /// LFM2-350M's shape (for benchmarks on random weights): 16 layers, 6 of them
    /// attention.
    pub fn lfm2_350m() -> Self {
        let attention = [2, 5, 8, 10, 12, 14];
        Self {
            vocab_size: 65_536,
            hidden_size: 1024,
            intermediate_size: 6656,
            num_hidden_layers: 16,
            num_attention_heads: 16,
            num_key_value_heads: 8,
            max_position_embeddings: 128_000,
            norm_eps: 1e-5,
            rope_theta: 1_000_000.0,
            rope_scaling: None,
            conv_bias: false,
            conv_kernel: 3,
            block_multiple_of: 256,
            block_ffn_dim_multiplier: Some(1.0),
            block_auto_adjust_ff_dim: true,
            full_attn_idxs: None,
            layer_types: Some(
                (0..16)
                    .map(|i| {
                        if attention.contains(&i) {
                            "full_attention"
                        } else {
                            "conv"
                        }
                        .to_owned()
                    })
                    .collect(),
            ),
            tie_word_embeddings: true,
            eos_token_id: Some(EosTokens::One(7)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_types_win_over_attention_indices() {
        let mut config = Lfm2Config::lfm2_350m();
        config.full_attn_idxs = Some(vec![0]);
        let kinds = config.layer_kinds().expect("kinds");
        assert_eq!(kinds[2], LayerKind::Attention);
        assert_eq!(kinds[0], LayerKind::Conv);
        config.layer_types = None;
        let kinds = config.layer_kinds().expect("kinds");
        assert_eq!(kinds[0], LayerKind::Attention);
        assert_eq!(kinds[2], LayerKind::Conv);
    }

    #[test]
    fn the_feed_forward_width_is_adjusted_as_transformers_does() {
        // LFM2-350M states 6656 and ships w1 of 4608 rows.
        assert_eq!(Lfm2Config::lfm2_350m().ff_dim(), 4608);
    }

    #[test]
    fn original_key_names_are_read() {
        let json = r#"{"vocab_size": 10, "hidden_size": 8, "block_ff_dim": 24,
            "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
            "theta": 5000.0, "tie_embedding": false, "full_attn_idxs": [1],
            "conv_L_cache": 4}"#;
        let config: Lfm2Config = serde_json::from_str(json).expect("config");
        assert_eq!(config.intermediate_size, 24);
        assert_eq!(config.rope_theta, 5000.0);
        assert!(!config.tie_word_embeddings);
        assert_eq!(config.conv_kernel, 4);
        assert_eq!(
            config.layer_kinds().expect("kinds"),
            vec![LayerKind::Conv, LayerKind::Attention]
        );
    }
}
