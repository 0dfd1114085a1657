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
