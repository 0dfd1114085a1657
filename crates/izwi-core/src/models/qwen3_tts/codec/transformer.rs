//! The codec decoder's transformer: causal attention within a sliding window, RoPE, no
//! query/key norms, and a learnt scale on each residual branch.

use candle_core::{Module, Result, Tensor, D};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::CodecDecoderConfig;
use crate::models::shared::linear::Linear;
use crate::models::shared::rope::RotaryEmbedding;

/// Self-attention with RoPE and grouped key/value heads, no query/key norms; the
/// codec's decoder and encoder attend alike.
pub(super) struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
}

impl Attention {
    /// `(heads, kv_heads, head_dim)`; projections with a bias when `bias`.
    pub fn load(
        vb: VarBuilder,
        hidden: usize,
        (heads, kv_heads, d): (usize, usize, usize),
        bias: bool,
    ) -> Result<Self> {
        let linear = |i, o, vb: VarBuilder| {
            if bias {
                Linear::load(i, o, vb)
            } else {
                Linear::load_no_bias(i, o, vb)
            }
        };
        Ok(Self {
            q_proj: linear(hidden, heads * d, vb.pp("q_proj"))?,
            k_proj: linear(hidden, kv_heads * d, vb.pp("k_proj"))?,
            v_proj: linear(hidden, kv_heads * d, vb.pp("v_proj"))?,
            o_proj: linear(heads * d, hidden, vb.pp("o_proj"))?,
            heads,
            kv_heads,
            head_dim: d,
        })
    }

    /// `x`: `[time, hidden]`; `mask`: `[time, time]`, added to the scores.
    pub fn forward(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
        mask: &Tensor,
    ) -> Result<Tensor> {
        let len = x.dim(0)?;
        let (heads, kv_heads, d) = (self.heads, self.kv_heads, self.head_dim);
        let q = self.q_proj.forward(x)?.reshape((len, heads, d))?;
        let k = self.k_proj.forward(x)?.reshape((len, kv_heads, d))?;
        let v = self.v_proj.forward(x)?.reshape((len, kv_heads, d))?;
        let q = rope.apply(&q, positions)?.transpose(0, 1)?.contiguous()?;
        let k = rope.apply(&k, positions)?.transpose(0, 1)?.contiguous()?;
        let v = v.transpose(0, 1)?.contiguous()?;
        let groups = heads / kv_heads;
        let repeat = |t: &Tensor| -> Result<Tensor> {
            t.unsqueeze(1)?
                .broadcast_as((kv_heads, groups, len, d))?
                .reshape((heads, len, d))
        };
        let (k, v) = (repeat(&k)?, repeat(&v)?);
        let scores = (q.matmul(&k.t()?)? * (1.0 / (d as f64).sqrt()))?.broadcast_add(mask)?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let out = probs
            .matmul(&v)?
            .transpose(0, 1)?
            .reshape((len, heads * d))?;
        self.o_proj.forward(&out)
    }
}

struct Layer {
    input_layernorm: RmsNorm,
    attn: Attention,
    attn_scale: Tensor,
    post_attention_layernorm: RmsNorm,
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    mlp_scale: Tensor,
}

pub struct CodecTransformer {
    input_proj: Linear,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output_proj: Linear,
    rope: RotaryEmbedding,
    window: usize,
}

impl CodecTransformer {
    pub fn load(vb: VarBuilder, c: &CodecDecoderConfig) -> Result<Self> {
        let (hidden, d) = (c.hidden_size, c.head_dim());
        let (heads, kv_heads) = (c.num_attention_heads, c.num_key_value_heads);
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("layers.{i}"));
                let attn = vb.pp("self_attn");
                let mlp = vb.pp("mlp");
                Ok(Layer {
                    input_layernorm: rms_norm(hidden, c.rms_norm_eps, vb.pp("input_layernorm"))?,
                    attn: Attention::load(attn, hidden, (heads, kv_heads, d), false)?,
                    attn_scale: vb.get(hidden, "self_attn_layer_scale.scale")?,
                    post_attention_layernorm: rms_norm(
                        hidden,
                        c.rms_norm_eps,
                        vb.pp("post_attention_layernorm"),
                    )?,
                    gate_proj: Linear::load_no_bias(
                        hidden,
                        c.intermediate_size,
                        mlp.pp("gate_proj"),
                    )?,
                    up_proj: Linear::load_no_bias(hidden, c.intermediate_size, mlp.pp("up_proj"))?,
                    down_proj: Linear::load_no_bias(
                        c.intermediate_size,
                        hidden,
                        mlp.pp("down_proj"),
                    )?,
                    mlp_scale: vb.get(hidden, "mlp_layer_scale.scale")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            input_proj: Linear::load(c.latent_dim, hidden, vb.pp("input_proj"))?,
            layers,
            norm: rms_norm(hidden, c.rms_norm_eps, vb.pp("norm"))?,
            output_proj: Linear::load(hidden, c.latent_dim, vb.pp("output_proj"))?,
            rope: RotaryEmbedding::new(
                d,
                c.max_position_embeddings,
                c.rope_theta,
                None,
                vb.dtype(),
                vb.device(),
            )?,
            window: c.sliding_window,
        })
    }

    /// `x`: `[time, latent]` → `[time, latent]`; positions start at 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let len = x.dim(0)?;
        let positions = Tensor::arange(0u32, len as u32, x.device())?;
        let mask = self.mask(len, x)?;
        let mut x = self.input_proj.forward(x)?;
        for layer in &self.layers {
            let h = layer.input_layernorm.forward(&x)?;
            let h = layer.attn.forward(&h, &self.rope, &positions, &mask)?;
            x = (x + h.broadcast_mul(&layer.attn_scale)?)?;
            let h = layer.post_attention_layernorm.forward(&x)?;
            let gate = candle_nn::ops::silu(&layer.gate_proj.forward(&h)?)?;
            let h = layer
                .down_proj
                .forward(&(gate * layer.up_proj.forward(&h)?)?)?;
            x = (x + h.broadcast_mul(&layer.mlp_scale)?)?;
        }
        self.output_proj.forward(&self.norm.forward(&x)?)
    }

    /// 0 where position `i` sees `j` (`i - window < j <= i`), -inf elsewhere.
    fn mask(&self, len: usize, like: &Tensor) -> Result<Tensor> {
        let window = self.window;
        let mask: Vec<f32> = (0..len)
            .flat_map(|i| {
                (0..len).map(move |j| {
                    if j <= i && i - j < window {
                        0.0
                    } else {
                        f32::NEG_INFINITY
                    }
                })
            })
            .collect();
        Tensor::from_vec(mask, (len, len), like.device())?.to_dtype(like.dtype())
    }
}
