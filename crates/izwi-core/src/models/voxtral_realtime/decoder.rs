//! The text decoder: a Mistral decoder on the engine's paged KV cache whose
//! feed-forward input is scaled by a function of the transcription delay.
//!
//! Each layer's `ada_rms_norm` maps the delay's sinusoidal embedding to a scale on the
//! normed feed-forward input (`x · (1 + ada(t))`). The delay is fixed for a model
//! instance, so the scales are computed once when it is built.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::DecoderConfig;
use crate::engine::{ForwardBatch, LayerKvCache};
use crate::models::shared::activations::gelu_erf;
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::rope::RotaryEmbedding;

struct Layer {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    input_norm: RmsNorm,
    post_attention_norm: RmsNorm,
    /// `1 + ada(t_cond)`: `[hidden]`.
    ffn_scale: Tensor,
}

pub struct TextDecoder {
    embed_tokens: Tensor,
    layers: Vec<Layer>,
    norm: RmsNorm,
    lm_head: Linear,
    rope: RotaryEmbedding,
    config: DecoderConfig,
    dtype: DType,
    device: Device,
}

/// The sinusoidal embedding of a delay of `delay_tokens` positions (`[hidden]`):
/// cosines then sines of `delay · 10000^(−i / (hidden/2))`.
fn delay_embedding(delay_tokens: usize, hidden: usize) -> Vec<f32> {
    let half = hidden / 2;
    let angles: Vec<f32> = (0..half)
        .map(|i| {
            let inv_freq = (-(10000f32.ln()) * i as f32 / half as f32).exp();
            delay_tokens as f32 * inv_freq
        })
        .collect();
    angles
        .iter()
        .map(|a| a.cos())
        .chain(angles.iter().map(|a| a.sin()))
        .collect()
}

impl TextDecoder {
    /// `vb` at the checkpoint's root (`language_model.*`, `lm_head`).
    pub fn load(config: &DecoderConfig, delay_tokens: usize, vb: &VarBuilder) -> Result<Self> {
        let c = config;
        let (h, q_width, kv_width) = (
            c.hidden_size,
            c.num_attention_heads * c.head_dim,
            c.num_key_value_heads * c.head_dim,
        );
        let lm = vb.pp("language_model");
        let model = lm.pp("model");
        let t_cond = Tensor::from_vec(delay_embedding(delay_tokens, h), (1, h), vb.device())?
            .to_dtype(vb.dtype())?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let l = model.pp(format!("layers.{i}"));
                let (a, m, ada) = (l.pp("self_attn"), l.pp("mlp"), l.pp("ada_rms_norm"));
                let ada_1 = Linear::load_no_bias(h, 32, ada.pp("linear1"))?;
                let ada_2 = Linear::load_no_bias(32, h, ada.pp("linear2"))?;
                let ffn_scale =
                    (ada_2.forward(&gelu_erf(&ada_1.forward(&t_cond)?)?)? + 1.0)?.squeeze(0)?;
                Ok(Layer {
                    q_proj: Linear::load_no_bias(h, q_width, a.pp("q_proj"))?,
                    k_proj: Linear::load_no_bias(h, kv_width, a.pp("k_proj"))?,
                    v_proj: Linear::load_no_bias(h, kv_width, a.pp("v_proj"))?,
                    o_proj: Linear::load_no_bias(q_width, h, a.pp("o_proj"))?,
                    gate_proj: Linear::load_no_bias(h, c.intermediate_size, m.pp("gate_proj"))?,
                    up_proj: Linear::load_no_bias(h, c.intermediate_size, m.pp("up_proj"))?,
                    down_proj: Linear::load_no_bias(c.intermediate_size, h, m.pp("down_proj"))?,
                    input_norm: rms_norm(h, c.rms_norm_eps, l.pp("input_layernorm"))?,
                    post_attention_norm: rms_norm(
                        h,
                        c.rms_norm_eps,
                        l.pp("post_attention_layernorm"),
                    )?,
                    ffn_scale,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let embed_tokens = model.pp("embed_tokens").get((c.vocab_size, h), "weight")?;
        let lm_head = if c.tie_word_embeddings {
            Linear::new(&embed_tokens, None)?
        } else {
            Linear::load_no_bias(h, c.vocab_size, lm.pp("lm_head"))?
        };
        let rope = RotaryEmbedding::new(
            c.head_dim,
            c.max_positions(),
            c.rope_theta()?,
            None,
            vb.dtype(),
            vb.device(),
        )?;
        Ok(Self {
            embed_tokens,
            layers,
            norm: rms_norm(h, c.rms_norm_eps, model.pp("norm"))?,
            lm_head,
            rope,
            config: c.clone(),
            dtype: vb.dtype(),
            device: vb.device().clone(),
        })
    }

    /// One engine step: `audio` (`[tokens, hidden]`) is added to the embeddings of the
    /// batch's tokens, row for row. Returns the logits of the sequences that want them.
    pub fn forward(
        &self,
        batch: &ForwardBatch,
        audio: &Tensor,
        kv_cache: &[LayerKvCache],
    ) -> Result<Tensor> {
        let c = &self.config;
        let kv_width = c.num_key_value_heads * c.head_dim;
        let meta = PagedAttentionMetadata::new(batch, kv_width, self.dtype, &self.device)?;
        let tokens: Vec<u32> = batch
            .sequences
            .iter()
            .flat_map(|s| s.tokens.iter().copied())
            .collect();
        let n = tokens.len();
        let ids = Tensor::from_vec(tokens, n, &self.device)?;
        let mut x = (self.embed_tokens.index_select(&ids, 0)? + audio)?;
        for (layer, cache) in self.layers.iter().zip(kv_cache) {
            let h = layer.input_norm.forward(&x)?;
            let q = layer
                .q_proj
                .forward(&h)?
                .reshape((n, c.num_attention_heads, c.head_dim))?;
            let k = layer
                .k_proj
                .forward(&h)?
                .reshape((n, c.num_key_value_heads, c.head_dim))?;
            let v = layer
                .v_proj
                .forward(&h)?
                .reshape((n, c.num_key_value_heads, c.head_dim))?;
            let q = self.rope.apply(&q.contiguous()?, &meta.positions)?;
            let k = self.rope.apply(&k.contiguous()?, &meta.positions)?;
            let attn = meta.attention(cache, &q, &k, &v.contiguous()?)?;
            x = (x + layer.o_proj.forward(&attn)?)?;
            let h = layer
                .post_attention_norm
                .forward(&x)?
                .broadcast_mul(&layer.ffn_scale)?;
            let gate = candle_nn::ops::silu(&layer.gate_proj.forward(&h)?)?;
            x = (&x
                + layer
                    .down_proj
                    .forward(&(gate * layer.up_proj.forward(&h)?)?)?)?;
        }
        let rows = x.index_select(&meta.logits_rows, 0)?;
        self.lm_head
            .forward(&self.norm.forward(&rows)?)?
            .to_dtype(DType::F32)
    }
}
