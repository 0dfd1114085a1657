use serde::{Deserialize, Serialize};

/// The fields of a Hugging Face `LlamaConfig` (config.json) that the model uses, and
/// of the Qwen2 and Qwen3 configs, which differ from it only where [`Architecture`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlamaConfig {
    /// config.json's `model_type`; any other than these is refused when read.
    #[serde(default, rename = "model_type")]
    pub architecture: Architecture,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    #[serde(default)]
    pub head_dim: Option<usize>,
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// transformers before 5.0 keeps the RoPE base here...
    #[serde(default)]
    pub rope_theta: Option<f64>,
    /// ...and 5.x here, with the scaling type.
    #[serde(default)]
    pub rope_parameters: Option<RopeParameters>,
    /// Long-context RoPE scaling (transformers before 5.0); not supported.
    #[serde(default)]
    pub rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    pub attention_bias: bool,
    #[serde(default)]
    pub mlp_bias: bool,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default)]
    pub tie_word_embeddings: bool,
    #[serde(default)]
    pub eos_token_id: Option<EosTokens>,
}

/// The members of the Llama family this model builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    #[default]
    Llama,
    /// Llama with biases on the query, key and value projections.
    Qwen2,
    /// Llama with an RMSNorm over each query and key head before RoPE.
    Qwen3,
}

impl Architecture {
    pub fn qkv_bias(self) -> bool {
        self == Self::Qwen2
    }

    pub fn qk_norm(self) -> bool {
        self == Self::Qwen3
    }
}

/// `eos_token_id` is a number or a list of numbers in config.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EosTokens {
    One(u32),
    Many(Vec<u32>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RopeParameters {
    #[serde(default)]
    pub rope_theta: Option<f64>,
    #[serde(default)]
    pub rope_type: Option<String>,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_max_positions() -> usize {
    4096
}

impl LlamaConfig {
    pub fn num_kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or_else(|| self.hidden_size / self.num_attention_heads.max(1))
    }

    pub fn rope_theta(&self) -> f64 {
        self.rope_parameters
            .as_ref()
            .and_then(|p| p.rope_theta)
            .or(self.rope_theta)
            .unwrap_or(10_000.0)
    }

    /// Refuses checkpoints whose features this implementation lacks, rather than
    /// running them wrong.
    pub fn check_supported(&self) -> Result<(), String> {
        let rope_type = self
            .rope_parameters
            .as_ref()
            .and_then(|p| p.rope_type.as_deref());
        if !matches!(rope_type, None | Some("default")) {
            return Err(format!("RoPE type {rope_type:?} is not supported"));
        }
        if self.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err("RoPE scaling is not supported".into());
        }
        if self.num_attention_heads == 0 || self.num_kv_heads() == 0 || self.head_dim() == 0 {
            return Err(format!(
                "{} attention heads of {} dimensions with {} key/value heads: a model needs \
                 at least one of each",
                self.num_attention_heads,
                self.head_dim(),
                self.num_kv_heads()
            ));
        }
        if self.attention_bias || self.mlp_bias {
            return Err("attention or MLP biases are not supported".into());
        }
        if !self.num_attention_heads.is_multiple_of(self.num_kv_heads()) {
            return Err(format!(
                "{} attention heads cannot share {} key/value heads evenly",
                self.num_attention_heads,
                self.num_kv_heads()
            ));
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

    /// A few-hundred-kilobyte model for tests: 2 layers, 4 query heads sharing 2 KV heads.
    pub fn tiny() -> Self {
        Self {
            architecture: Architecture::Llama,
            vocab_size: 256,
            hidden_size: 64,
            intermediate_size: 128,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: Some(2),
            head_dim: None,
            rms_norm_eps: 1e-6,
            rope_theta: None,
            rope_parameters: None,
            rope_scaling: None,
            attention_bias: false,
            mlp_bias: false,
            max_position_embeddings: 1024,
            tie_word_embeddings: false,
            eos_token_id: Some(EosTokens::One(0)),
        }
    }

    /// About 50M parameters (the size of a small speech decoder), for benchmarks.
    pub fn bench() -> Self {
        Self {
            architecture: Architecture::Llama,
            vocab_size: 16_384,
            hidden_size: 768,
            intermediate_size: 2048,
            num_hidden_layers: 6,
            num_attention_heads: 12,
            num_key_value_heads: Some(4),
            head_dim: None,
            rms_norm_eps: 1e-6,
            rope_theta: None,
            rope_parameters: None,
            rope_scaling: None,
            attention_bias: false,
            mlp_bias: false,
            max_position_embeddings: 4096,
            tie_word_embeddings: true,
            eos_token_id: Some(EosTokens::One(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config with no heads is refused by name, not divided by.
    #[test]
    fn zero_attention_heads_are_refused() {
        let config: LlamaConfig = serde_json::from_str(
            r#"{"model_type": "llama", "vocab_size": 32, "hidden_size": 64,
                "intermediate_size": 128, "num_hidden_layers": 1,
                "num_attention_heads": 0, "rms_norm_eps": 1e-6,
                "max_position_embeddings": 64}"#,
        )
        .unwrap();
        let why = config.check_supported().unwrap_err();
        assert!(why.contains("at least one of each"), "{why}");
    }
}
