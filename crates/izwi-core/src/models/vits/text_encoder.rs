//! The text encoder (`enc_p`): phoneme embeddings through a transformer whose
//! self-attention adds learned terms for the relative position of key and query
//! within a window (±4 in VITS), then a projection to the mean and log-scale of each
//! phoneme's acoustic prior.

use candle_core::{DType, Result, Tensor, D};

use super::layers::{ChannelNorm, Conv1d};
use super::weights::Weights;
use crate::models::shared::activations::softmax_last_dim;

/// What the rest of the model needs from the text.
pub struct Encoded {
    /// Hidden states `[batch, hidden, phonemes]` (input of the duration predictor).
    pub x: Tensor,
    /// Prior mean and log standard deviation, `[batch, inter_channels, phonemes]`.
    pub m: Tensor,
    pub logs: Tensor,
}

pub struct TextEncoder {
    /// `[symbols, hidden]`
    emb: Tensor,
    layers: Vec<EncoderLayer>,
    proj: Conv1d,
}

struct EncoderLayer {
    attn: RelativeAttention,
    norm_1: ChannelNorm,
    ffn: Ffn,
    norm_2: ChannelNorm,
}

impl TextEncoder {
    pub fn load(w: &Weights) -> Result<Self> {
        let n_layers = w.count(|i| format!("enc_p.encoder.attn_layers.{i}"));
        let layers = (0..n_layers)
            .map(|i| {
                let p = "enc_p.encoder";
                Ok(EncoderLayer {
                    attn: RelativeAttention::load(w, &format!("{p}.attn_layers.{i}"))?,
                    norm_1: ChannelNorm::load(w, &format!("{p}.norm_layers_1.{i}"))?,
                    ffn: Ffn::load(w, &format!("{p}.ffn_layers.{i}"))?,
                    norm_2: ChannelNorm::load(w, &format!("{p}.norm_layers_2.{i}"))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            emb: w.get("enc_p.emb.weight"),
            layers,
            proj: Conv1d::load(w, "enc_p.proj")?,
        })
    }

    pub fn num_symbols(&self) -> Result<usize> {
        self.emb.dim(0)
    }

    /// `ids`: `[batch, phonemes]` (u32); `mask`: `[batch, 1, phonemes]`, 1 on real
    /// phonemes and 0 on padding.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Encoded> {
        let (batch, len) = ids.dims2()?;
        let hidden = self.emb.dim(1)?;
        let x = self.emb.index_select(&ids.flatten_all()?, 0)?;
        let x = (x.reshape((batch, len, hidden))? * (hidden as f64).sqrt())?;
        let mut x = x.transpose(1, 2)?.broadcast_mul(mask)?;
        // Query i may attend to key j when both are real phonemes.
        let pairs = mask.unsqueeze(2)?.broadcast_mul(&mask.unsqueeze(3)?)?;
        let attn_mask = pairs.to_dtype(DType::U8)?;
        for layer in &self.layers {
            let y = layer.attn.forward(&x, &attn_mask)?;
            x = layer.norm_1.forward(&(x + y)?)?;
            let y = layer.ffn.forward(&x, mask)?;
            x = layer.norm_2.forward(&(x + y)?)?;
        }
        let x = x.broadcast_mul(mask)?;
        let stats = self.proj.forward(&x)?.broadcast_mul(mask)?;
        let channels = stats.dim(1)? / 2;
        Ok(Encoded {
            m: stats.narrow(1, 0, channels)?,
            logs: stats.narrow(1, channels, channels)?,
            x,
        })
    }
}

/// Multi-head self-attention with relative-position keys and values (Shaw et al.),
/// as in VITS: `emb_rel_k`/`emb_rel_v` hold one embedding per offset in
/// [-window, window], shared by all heads; offsets outside the window contribute 0.
struct RelativeAttention {
    conv_q: Conv1d,
    conv_k: Conv1d,
    conv_v: Conv1d,
    conv_o: Conv1d,
    /// `[1 or heads, 2 * window + 1, head_dim]`
    emb_rel_k: Tensor,
    emb_rel_v: Tensor,
}

impl RelativeAttention {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let emb_rel_k = w.get(&format!("{p}.emb_rel_k"));
        let emb_rel_v = w.get(&format!("{p}.emb_rel_v"));
        let (_, offsets, head_dim) = emb_rel_k.dims3()?;
        if offsets % 2 == 0 || head_dim == 0 || emb_rel_v.dims() != emb_rel_k.dims() {
            candle_core::bail!(
                "{p}: relative embeddings of shapes {:?} and {:?}, not [heads, 2 * window + 1, head_dim]",
                emb_rel_k.dims(),
                emb_rel_v.dims()
            );
        }
        Ok(Self {
            conv_q: Conv1d::load(w, &format!("{p}.conv_q"))?,
            conv_k: Conv1d::load(w, &format!("{p}.conv_k"))?,
            conv_v: Conv1d::load(w, &format!("{p}.conv_v"))?,
            conv_o: Conv1d::load(w, &format!("{p}.conv_o"))?,
            emb_rel_k,
            emb_rel_v,
        })
    }

    /// `x`: `[batch, channels, time]`; `mask`: `[batch, 1, time, time]` (u8).
    fn forward(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, channels, len) = x.dims3()?;
        let head_dim = self.emb_rel_k.dim(2)?;
        let heads = channels / head_dim;
        let split = |t: Tensor| {
            t.reshape((batch, heads, head_dim, len))?
                .transpose(2, 3)?
                .contiguous()
        };
        let q = (split(self.conv_q.forward(x)?)? / (head_dim as f64).sqrt())?;
        let k = split(self.conv_k.forward(x)?)?;
        let v = split(self.conv_v.forward(x)?)?;

        let scores = q.matmul(&k.t()?)?;
        let rel_k = self
            .relative_embeddings(&self.emb_rel_k, len)?
            .unsqueeze(0)?;
        let rel_logits = q.broadcast_matmul(&rel_k.t()?)?;
        let scores = (scores + relative_to_absolute(&rel_logits)?)?;
        let fill = Tensor::full(-1e4f32, scores.shape(), scores.device())?;
        let scores = mask
            .broadcast_as(scores.shape())?
            .where_cond(&scores, &fill)?;
        let p = softmax_last_dim(&scores)?;

        let rel_v = self
            .relative_embeddings(&self.emb_rel_v, len)?
            .unsqueeze(0)?;
        let out = (p.matmul(&v)? + absolute_to_relative(&p)?.broadcast_matmul(&rel_v)?)?;
        let out = out.transpose(2, 3)?.reshape((batch, channels, len))?;
        self.conv_o.forward(&out)
    }

    /// The embeddings of offsets -(len-1) ..= len-1, zero outside the window:
    /// `[1 or heads, 2 * len - 1, head_dim]`.
    fn relative_embeddings(&self, emb: &Tensor, len: usize) -> Result<Tensor> {
        let window = emb.dim(1)? / 2;
        let pad = len.saturating_sub(window + 1);
        let start = (window + 1).saturating_sub(len);
        emb.pad_with_zeros(1, pad, pad)?
            .narrow(1, start, 2 * len - 1)
    }
}

/// `[b, h, l, 2l-1]` logits indexed by (query, offset) → `[b, h, l, l]` indexed by
/// (query, key), by VITS's pad-and-reshape skew.
fn relative_to_absolute(x: &Tensor) -> Result<Tensor> {
    let (b, h, l, _) = x.dims4()?;
    let x = x
        .pad_with_zeros(D::Minus1, 0, 1)?
        .reshape((b, h, l * 2 * l))?;
    x.pad_with_zeros(D::Minus1, 0, l - 1)?
        .reshape((b, h, l + 1, 2 * l - 1))?
        .narrow(2, 0, l)?
        .narrow(3, l - 1, l)?
        .contiguous()
}

/// The inverse skew: `[b, h, l, l]` weights by key → `[b, h, l, 2l-1]` by offset.
fn absolute_to_relative(x: &Tensor) -> Result<Tensor> {
    let (b, h, l, _) = x.dims4()?;
    let x = x
        .pad_with_zeros(D::Minus1, 0, l - 1)?
        .reshape((b, h, l * (2 * l - 1)))?;
    x.pad_with_zeros(D::Minus1, l, 0)?
        .reshape((b, h, l, 2 * l))?
        .narrow(3, 1, 2 * l - 1)?
        .contiguous()
}

/// Two convolutions with a ReLU between, padded to keep the length ("same").
struct Ffn {
    conv_1: Conv1d,
    conv_2: Conv1d,
    kernel: usize,
}

impl Ffn {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let conv_1 = Conv1d::load(w, &format!("{p}.conv_1"))?;
        let kernel = conv_1.kernel_size();
        Ok(Self {
            conv_1,
            conv_2: Conv1d::load(w, &format!("{p}.conv_2"))?,
            kernel,
        })
    }

    fn forward(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let same = |x: &Tensor| {
            x.broadcast_mul(mask)?.pad_with_zeros(
                D::Minus1,
                self.kernel.saturating_sub(1) / 2,
                self.kernel / 2,
            )
        };
        let x = self.conv_1.forward(&same(x)?)?.relu()?;
        let x = self.conv_2.forward(&same(&x)?)?;
        x.broadcast_mul(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// The skews against their definitions: rel[i, j - i + l - 1] ↔ abs[i, j].
    #[test]
    fn skews_map_offsets_to_keys_and_back() {
        let l = 4;
        let rel: Vec<f32> = (0..l * (2 * l - 1)).map(|v| v as f32).collect();
        let rel = Tensor::from_vec(rel, (1, 1, l, 2 * l - 1), &Device::Cpu).unwrap();
        let abs = relative_to_absolute(&rel).unwrap();
        let (rel_v, abs_v) = (
            rel.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            abs.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        for i in 0..l {
            for j in 0..l {
                assert_eq!(abs_v[i * l + j], rel_v[i * (2 * l - 1) + j + l - 1 - i]);
            }
        }
        let back = absolute_to_relative(&abs).unwrap();
        let back = back.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for i in 0..l {
            for r in 0..2 * l - 1 {
                let j = (i + r) as isize - (l as isize - 1);
                let want = if (0..l as isize).contains(&j) {
                    rel_v[i * (2 * l - 1) + r]
                } else {
                    0.0
                };
                assert_eq!(back[i * (2 * l - 1) + r], want);
            }
        }
    }
}
