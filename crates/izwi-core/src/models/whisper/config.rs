use std::path::Path;

use serde::{Deserialize, Serialize};

/// The fields of a Hugging Face `WhisperConfig` (config.json) that the model uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhisperConfig {
    pub vocab_size: usize,
    pub num_mel_bins: usize,
    pub d_model: usize,
    pub encoder_layers: usize,
    pub encoder_attention_heads: usize,
    pub encoder_ffn_dim: usize,
    pub decoder_layers: usize,
    pub decoder_attention_heads: usize,
    pub decoder_ffn_dim: usize,
    /// Encoder positions: 1500 for Whisper's 30-second window.
    pub max_source_positions: usize,
    /// Decoder positions: 448.
    pub max_target_positions: usize,
    #[serde(default)]
    pub scale_embedding: bool,
    #[serde(default = "default_activation")]
    pub activation_function: String,
    #[serde(default)]
    pub eos_token_id: Option<u32>,
}

fn default_activation() -> String {
    "gelu".into()
}

impl WhisperConfig {
    /// The decoder heads (layer, head) whose cross-attention follows the speech, for
    /// word timestamps: `alignment_heads` of the folder's generation_config.json, as
    /// OpenAI's checkpoints list them; without that list, every head of the decoder's
    /// second half (OpenAI's default).
    pub fn alignment_heads(&self, dir: &Path) -> Result<Vec<(usize, usize)>, String> {
        #[derive(Deserialize)]
        struct Generation {
            alignment_heads: Option<Vec<(usize, usize)>>,
        }
        let path = dir.join("generation_config.json");
        let listed = match std::fs::read_to_string(&path) {
            Ok(text) => {
                serde_json::from_str::<Generation>(&text)
                    .map_err(|e| format!("invalid {}: {e}", path.display()))?
                    .alignment_heads
            }
            Err(_) => None,
        };
        let mut heads = listed.unwrap_or_else(|| self.default_alignment_heads());
        if let Some((layer, head)) = heads
            .iter()
            .find(|&&(l, h)| l >= self.decoder_layers || h >= self.decoder_attention_heads)
        {
            return Err(format!(
                "{}: alignment head ({layer}, {head}) is outside the decoder's {} layers of {} heads",
                path.display(),
                self.decoder_layers,
                self.decoder_attention_heads
            ));
        }
        heads.sort_unstable();
        heads.dedup();
        Ok(heads)
    }

    pub fn default_alignment_heads(&self) -> Vec<(usize, usize)> {
        (self.decoder_layers / 2..self.decoder_layers)
            .flat_map(|l| (0..self.decoder_attention_heads).map(move |h| (l, h)))
            .collect()
    }

    /// Refuses what this implementation lacks rather than running it wrong.
    pub fn check_supported(&self) -> Result<(), String> {
        if self.activation_function != "gelu" {
            return Err(format!(
                "activation {} is not supported",
                self.activation_function
            ));
        }
        if self.scale_embedding {
            return Err("scale_embedding is not supported".into());
        }
        for (name, dim, heads) in [
            ("encoder", self.d_model, self.encoder_attention_heads),
            ("decoder", self.d_model, self.decoder_attention_heads),
        ] {
            if heads == 0 || dim % heads != 0 {
                return Err(format!(
                    "{name}: d_model {dim} does not split into {heads} heads"
                ));
            }
        }
        Ok(())
    }
}
