//! Llama-family checkpoints in GGUF (llama.cpp's format): the config from the file's
//! metadata and the weights from its tensors, kept quantized.

use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Result};
use candle_nn::RmsNorm;

use super::config::{Architecture, EosTokens, LlamaConfig};
use super::model::{Llama, LlamaWeights};
use crate::models::shared::decoder_weights::DecoderWeights;
use crate::models::shared::embedding::Embedding;
use crate::models::shared::gguf::GgufFile;
use crate::models::shared::linear::Linear;
use crate::models::shared::rope::RotaryPairs;

/// How to hold the quantized weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufWeights {
    /// As stored, multiplied by candle's quantized matmul (what the app runs).
    Quantized,
    /// Expanded to f32 at load: the same numbers transformers computes with when it
    /// reads a GGUF file, for parity tests.
    Dequantized,
}

impl Llama {
    /// Loads a Llama, Qwen2 or Qwen3 GGUF file (Llama 3.x, SmolLM, Qwen2.5, Qwen3...),
    /// opened by the caller, who may read its tokenizer and chat template from the
    /// same file.
    pub fn from_gguf(file: &GgufFile, weights: GgufWeights, device: &Device) -> Result<Self> {
        let config = config_from_gguf(file)?;
        Self::build(
            config.clone(),
            &GgufSource {
                file,
                weights,
                architecture: config.architecture,
                device: device.clone(),
            },
        )
    }

    /// Whether `file` is a model this loader can load, without loading its weights:
    /// the error says why not.
    pub fn check_gguf(file: &GgufFile) -> Result<()> {
        config_from_gguf(file).map(|_| ())
    }
}

/// The architectures whose GGUF layout this loader knows, by `general.architecture`.
const ARCHITECTURES: &[(&str, Architecture)] = &[
    ("llama", Architecture::Llama),
    ("qwen2", Architecture::Qwen2),
    ("qwen3", Architecture::Qwen3),
];

fn config_from_gguf(file: &GgufFile) -> Result<LlamaConfig> {
    let arch = file.required_string("general.architecture")?;
    let Some(&(_, architecture)) = ARCHITECTURES.iter().find(|(name, _)| *name == arch) else {
        let names: Vec<&str> = ARCHITECTURES.iter().map(|(name, _)| *name).collect();
        candle_core::bail!(
            "{}: the {arch} architecture is not supported (supported: {})",
            file.path().display(),
            names.join(", ")
        );
    };
    let key = |name: &str| format!("{arch}.{name}");
    let int = |name: &str| -> Result<usize> { Ok(file.required_integer(&key(name))? as usize) };
    let heads = int("attention.head_count")?;
    if heads == 0 {
        candle_core::bail!(
            "{}: {} is 0: a model needs at least one attention head",
            file.path().display(),
            key("attention.head_count")
        );
    }
    let hidden_size = int("embedding_length")?;
    let vocab_size = match file.integer(&key("vocab_size"))? {
        Some(n) => n as usize,
        None => file.strings("tokenizer.ggml.tokens")?.len(),
    };
    let head_dim = file
        .integer(&key("attention.key_length"))?
        .map(|n| n as usize)
        .filter(|&d| d != hidden_size / heads);
    if let Some(rope_dims) = file.integer(&key("rope.dimension_count"))? {
        let full = head_dim.unwrap_or(hidden_size / heads);
        if rope_dims as usize != full {
            candle_core::bail!(
                "{}: RoPE over {rope_dims} of {full} head dimensions is not supported",
                file.path().display()
            );
        }
    }
    let eos = ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"]
        .iter()
        .filter_map(|k| file.integer(k).transpose())
        .map(|id| id.map(|id| id as u32))
        .collect::<Result<Vec<_>>>()?;
    Ok(LlamaConfig {
        architecture,
        vocab_size,
        hidden_size,
        intermediate_size: int("feed_forward_length")?,
        num_hidden_layers: int("block_count")?,
        num_attention_heads: heads,
        num_key_value_heads: file
            .integer(&key("attention.head_count_kv"))?
            .map(|n| n as usize),
        head_dim,
        rms_norm_eps: file
            .float(&key("attention.layer_norm_rms_epsilon"))?
            .unwrap_or(1e-5),
        rope_theta: file.float(&key("rope.freq_base"))?,
        rope_parameters: None,
        rope_scaling: None,
        attention_bias: false,
        mlp_bias: false,
        max_position_embeddings: file
            .integer(&key("context_length"))?
            .map_or(4096, |n| n as usize),
        tie_word_embeddings: !file.has_tensor("output.weight"),
        eos_token_id: Some(EosTokens::Many(eos)),
    })
}

struct GgufSource<'a> {
    file: &'a GgufFile,
    weights: GgufWeights,
    architecture: Architecture,
    device: Device,
}

/// The GGUF name of a tensor given its Hugging Face name (without `.weight`/`.bias`).
fn gguf_name(hf: &str) -> Result<String> {
    let name = match hf {
        "model.embed_tokens" => "token_embd".to_string(),
        "model.norm" => "output_norm".to_string(),
        "lm_head" => "output".to_string(),
        _ => {
            let rest = hf
                .strip_prefix("model.layers.")
                .ok_or_else(|| candle_core::Error::msg(format!("no GGUF name for {hf}")))?;
            let (layer, part) = rest
                .split_once('.')
                .ok_or_else(|| candle_core::Error::msg(format!("no GGUF name for {hf}")))?;
            let part = match part {
                "input_layernorm" => "attn_norm",
                "post_attention_layernorm" => "ffn_norm",
                "self_attn.q_proj" => "attn_q",
                "self_attn.k_proj" => "attn_k",
                "self_attn.v_proj" => "attn_v",
                "self_attn.o_proj" => "attn_output",
                "self_attn.q_norm" => "attn_q_norm",
                "self_attn.k_norm" => "attn_k_norm",
                "mlp.gate_proj" => "ffn_gate",
                "mlp.up_proj" => "ffn_up",
                "mlp.down_proj" => "ffn_down",
                _ => candle_core::bail!("no GGUF name for {hf}"),
            };
            format!("blk.{layer}.{part}")
        }
    };
    Ok(name)
}

/// A quantized weight in the form the matmul runs fastest on this device. On the CPU,
/// candle has vectorised x86 dot products for Q4_0, Q8_0 and the K-quants only: Q4_1,
/// Q5_0 and Q5_1 run a scalar loop, which made SmolLM2 Q4_1's prompt take seconds
/// (docs/chat-models.md). Those are requantized to Q8_0 at load: 8.5 bits a weight
/// instead of 5 to 6, and an error under an eighth of the stored format's own.
fn for_matmul(tensor: QTensor, device: &Device) -> Result<QTensor> {
    let scalar_only = matches!(
        tensor.dtype(),
        GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1
    );
    if !device.is_cpu() || !scalar_only {
        return Ok(tensor);
    }
    QTensor::quantize(&tensor.dequantize(device)?, GgmlDType::Q8_0)
}

impl GgufSource<'_> {
    /// The tensor `{hf}.{kind}` (`kind` is `weight` or `bias`), checked against `shape`.
    fn tensor(&self, hf: &str, kind: &str, shape: &[usize]) -> Result<QTensor> {
        let name = format!("{}.{kind}", gguf_name(hf)?);
        let tensor = self.file.tensor(&name, &self.device)?;
        if tensor.shape().dims() != shape {
            candle_core::bail!(
                "{}: tensor `{name}` has shape {:?}, the metadata implies {shape:?}",
                self.file.path().display(),
                tensor.shape().dims()
            );
        }
        Ok(tensor)
    }
}

impl DecoderWeights for GgufSource<'_> {
    fn linear(&self, name: &str, in_dim: usize, out_dim: usize, bias: bool) -> Result<Linear> {
        let tensor = self.tensor(name, "weight", &[out_dim, in_dim])?;
        let bias = bias
            .then(|| {
                self.tensor(name, "bias", &[out_dim])?
                    .dequantize(&self.device)
            })
            .transpose()?;
        match self.weights {
            GgufWeights::Quantized => {
                Linear::quantized(Arc::new(for_matmul(tensor, &self.device)?), bias)
            }
            GgufWeights::Dequantized => Linear::new(&tensor.dequantize(&self.device)?, bias),
        }
    }

    fn rms_norm(&self, name: &str, size: usize, eps: f64) -> Result<RmsNorm> {
        let weight = self
            .tensor(name, "weight", &[size])?
            .dequantize(&self.device)?;
        Ok(RmsNorm::new(weight, eps))
    }

    fn embedding(&self, name: &str, vocab: usize, hidden: usize) -> Result<Embedding> {
        let tensor = self.tensor(name, "weight", &[vocab, hidden])?;
        Ok(match self.weights {
            // Also the output projection when the embeddings are tied.
            GgufWeights::Quantized => {
                Embedding::Quantized(Arc::new(for_matmul(tensor, &self.device)?))
            }
            GgufWeights::Dequantized => Embedding::Dense(tensor.dequantize(&self.device)?),
        })
    }

    fn dtype(&self) -> DType {
        DType::F32
    }

    fn device(&self) -> &Device {
        &self.device
    }
}

impl LlamaWeights for GgufSource<'_> {
    fn rotary_pairs(&self) -> RotaryPairs {
        match self.architecture {
            // llama.cpp's converter permutes Llama query/key rows for its interleaved
            // RoPE...
            Architecture::Llama => RotaryPairs::Interleaved,
            // ...and leaves Qwen's as they are, rotating halves (its NEOX RoPE).
            Architecture::Qwen2 | Architecture::Qwen3 => RotaryPairs::Halves,
        }
    }

    fn rope_freq_factors(&self, count: usize) -> Result<Option<Vec<f32>>> {
        if !self.file.has_tensor("rope_freqs.weight") {
            return Ok(None);
        }
        let factors = self.file.tensor("rope_freqs.weight", &self.device)?;
        let factors = factors.dequantize(&self.device)?.flatten_all()?.to_vec1()?;
        if factors.len() != count {
            candle_core::bail!(
                "{}: rope_freqs has {} factors, the heads want {count}",
                self.file.path().display(),
                factors.len()
            );
        }
        Ok(Some(factors))
    }
}
