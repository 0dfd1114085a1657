//! LFM2 checkpoints in GGUF (llama.cpp's `lfm2` architecture): the config from the
//! file's metadata and tensors, the weights under llama.cpp's names, kept quantized or
//! expanded as for Llama files.

use std::sync::Arc;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::RmsNorm;

use super::config::Lfm2Config;
use super::model::{Lfm2, Lfm2Weights};
use crate::models::llama::{EosTokens, GgufWeights};
use crate::models::shared::decoder_weights::DecoderWeights;
use crate::models::shared::embedding::Embedding;
use crate::models::shared::gguf::GgufFile;
use crate::models::shared::linear::Linear;

impl Lfm2 {
    /// Loads an LFM2 GGUF file opened by the caller.
    pub fn from_gguf(file: &GgufFile, weights: GgufWeights, device: &Device) -> Result<Self> {
        let config = config_from_gguf(file, device)?;
        Self::build(
            config,
            &GgufSource {
                file,
                weights,
                device: device.clone(),
            },
        )
    }
}

fn config_from_gguf(file: &GgufFile, device: &Device) -> Result<Lfm2Config> {
    let arch = file.required_string("general.architecture")?;
    if arch != "lfm2" {
        candle_core::bail!("{}: a {arch} file, not an LFM2 one", file.path().display());
    }
    let int = |name: &str| -> Result<usize> {
        Ok(file.required_integer(&format!("lfm2.{name}"))? as usize)
    };
    let layers = int("block_count")?;
    // llama.cpp writes the key/value heads per layer (0 for a convolution layer).
    let kv_key = "lfm2.attention.head_count_kv";
    let kv_heads = match file.integer(kv_key) {
        Ok(Some(n)) => n as usize,
        _ => file.integers(kv_key)?.into_iter().max().unwrap_or(0) as usize,
    };
    // Which layers convolve, and the feed-forward width, from the tensors themselves.
    let layer_types = (0..layers)
        .map(|i| {
            if file.has_tensor(&format!("blk.{i}.shortconv.in_proj.weight")) {
                "conv"
            } else {
                "full_attention"
            }
            .to_owned()
        })
        .collect();
    let ff_dim = file.tensor("blk.0.ffn_gate.weight", device)?.shape().dims()[0];
    let vocab_size = match file.integer("lfm2.vocab_size")? {
        Some(n) => n as usize,
        None => file.tensor("token_embd.weight", device)?.shape().dims()[0],
    };
    Ok(Lfm2Config {
        vocab_size,
        hidden_size: int("embedding_length")?,
        intermediate_size: ff_dim,
        num_hidden_layers: layers,
        num_attention_heads: int("attention.head_count")?,
        num_key_value_heads: kv_heads,
        max_position_embeddings: file
            .integer("lfm2.context_length")?
            .map_or(128_000, |n| n as usize),
        norm_eps: file
            .float("lfm2.attention.layer_norm_rms_epsilon")?
            .unwrap_or(1e-5),
        rope_theta: file.float("lfm2.rope.freq_base")?.unwrap_or(1_000_000.0),
        rope_scaling: None,
        conv_bias: false,
        conv_kernel: int("shortconv.l_cache")?,
        block_multiple_of: 1,
        block_ffn_dim_multiplier: None,
        block_auto_adjust_ff_dim: false,
        full_attn_idxs: None,
        layer_types: Some(layer_types),
        tie_word_embeddings: !file.has_tensor("output.weight"),
        eos_token_id: file
            .integer("tokenizer.ggml.eos_token_id")?
            .map(|id| EosTokens::One(id as u32)),
    })
}

struct GgufSource<'a> {
    file: &'a GgufFile,
    weights: GgufWeights,
    device: Device,
}

/// llama.cpp's name of a tensor given its Hugging Face name.
fn gguf_name(hf: &str) -> Result<String> {
    let missing = || candle_core::Error::msg(format!("no GGUF name for {hf}"));
    let (stem, kind) = hf.rsplit_once('.').ok_or_else(missing)?;
    let stem = match stem {
        "model.embed_tokens" => "token_embd".to_owned(),
        // llama.cpp calls the final norm what transformers calls it.
        "model.embedding_norm" => "token_embd_norm".to_owned(),
        "lm_head" => "output".to_owned(),
        _ => {
            let rest = stem.strip_prefix("model.layers.").ok_or_else(missing)?;
            let (layer, part) = rest.split_once('.').ok_or_else(missing)?;
            let part = match part {
                "operator_norm" => "attn_norm",
                "ffn_norm" => "ffn_norm",
                "feed_forward.w1" => "ffn_gate",
                "feed_forward.w3" => "ffn_up",
                "feed_forward.w2" => "ffn_down",
                "self_attn.q_proj" => "attn_q",
                "self_attn.k_proj" => "attn_k",
                "self_attn.v_proj" => "attn_v",
                "self_attn.out_proj" => "attn_output",
                "self_attn.q_layernorm" => "attn_q_norm",
                "self_attn.k_layernorm" => "attn_k_norm",
                "conv.conv" => "shortconv.conv",
                "conv.in_proj" => "shortconv.in_proj",
                "conv.out_proj" => "shortconv.out_proj",
                _ => return Err(missing()),
            };
            format!("blk.{layer}.{part}")
        }
    };
    Ok(format!("{stem}.{kind}"))
}

impl GgufSource<'_> {
    /// The tensor of Hugging Face name `hf`, checked against `shape` up to dimensions of
    /// one (llama.cpp squeezes the convolution's `[channels, 1, kernel]` to
    /// `[channels, kernel]`).
    fn get(&self, hf: &str, shape: &[usize]) -> Result<candle_core::quantized::QTensor> {
        let name = gguf_name(hf)?;
        let tensor = self.file.tensor(&name, &self.device)?;
        let squeeze =
            |dims: &[usize]| -> Vec<usize> { dims.iter().copied().filter(|&d| d != 1).collect() };
        if squeeze(tensor.shape().dims()) != squeeze(shape) {
            candle_core::bail!(
                "{}: tensor `{name}` has shape {:?}, the model expects {shape:?}",
                self.file.path().display(),
                tensor.shape().dims()
            );
        }
        Ok(tensor)
    }
}

impl DecoderWeights for GgufSource<'_> {
    fn linear(&self, name: &str, in_dim: usize, out_dim: usize, bias: bool) -> Result<Linear> {
        let tensor = self.get(&format!("{name}.weight"), &[out_dim, in_dim])?;
        let bias = bias
            .then(|| self.tensor(&format!("{name}.bias"), &[out_dim]))
            .transpose()?;
        match self.weights {
            GgufWeights::Quantized => Linear::quantized(Arc::new(tensor), bias),
            GgufWeights::Dequantized => Linear::new(&tensor.dequantize(&self.device)?, bias),
        }
    }

    fn rms_norm(&self, name: &str, size: usize, eps: f64) -> Result<RmsNorm> {
        Ok(RmsNorm::new(
            self.tensor(&format!("{name}.weight"), &[size])?,
            eps,
        ))
    }

    fn embedding(&self, name: &str, vocab: usize, hidden: usize) -> Result<Embedding> {
        let tensor = self.get(&format!("{name}.weight"), &[vocab, hidden])?;
        Ok(match self.weights {
            GgufWeights::Quantized => Embedding::Quantized(Arc::new(tensor)),
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

impl Lfm2Weights for GgufSource<'_> {
    fn contains(&self, name: &str) -> bool {
        gguf_name(name).is_ok_and(|n| self.file.has_tensor(&n))
    }

    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        self.get(name, shape)?
            .dequantize(&self.device)?
            .reshape(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::gguf_name;

    #[test]
    fn names_follow_llama_cpp() {
        for (hf, gguf) in [
            ("model.embed_tokens.weight", "token_embd.weight"),
            ("model.embedding_norm.weight", "token_embd_norm.weight"),
            (
                "model.layers.3.conv.conv.weight",
                "blk.3.shortconv.conv.weight",
            ),
            (
                "model.layers.0.conv.in_proj.weight",
                "blk.0.shortconv.in_proj.weight",
            ),
            (
                "model.layers.2.self_attn.out_proj.weight",
                "blk.2.attn_output.weight",
            ),
            (
                "model.layers.2.self_attn.k_layernorm.weight",
                "blk.2.attn_k_norm.weight",
            ),
            (
                "model.layers.1.feed_forward.w3.weight",
                "blk.1.ffn_up.weight",
            ),
        ] {
            assert_eq!(gguf_name(hf).expect("named"), gguf);
        }
        assert!(gguf_name("model.layers.1.unknown.weight").is_err());
    }
}
