//! The text encoder (`enc_p`): phoneme embeddings through a transformer whose
//! self-attention adds learned terms for the relative position of key and query
//! within a window (±4 in VITS), then a projection to the mean and log-scale of each
//! phoneme's acoustic prior. Inside, tensors are time-major (`[batch, phonemes,
//! channels]`): the convolutions are [`TimeConv1d`]s (one gemm per tap on the CPU)
//! and the attention is one pass of our own over each head ([`relative_attention`]),
//! where candle took some twenty operations per layer.

use candle_core::{Result, Tensor};

use super::layers::TimeConv1d;
use super::weights::Weights;

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
    proj: TimeConv1d,
}

struct EncoderLayer {
    attn: RelativeAttention,
    norm_1: LayerNorm,
    ffn: Ffn,
    norm_2: LayerNorm,
}

impl TextEncoder {
    pub fn load(w: &Weights) -> Result<Self> {
        let n_layers = w.count(|i| format!("enc_p.encoder.attn_layers.{i}"));
        let layers = (0..n_layers)
            .map(|i| {
                let p = "enc_p.encoder";
                Ok(EncoderLayer {
                    attn: RelativeAttention::load(w, &format!("{p}.attn_layers.{i}"))?,
                    norm_1: LayerNorm::load(w, &format!("{p}.norm_layers_1.{i}")),
                    ffn: Ffn::load(w, &format!("{p}.ffn_layers.{i}"))?,
                    norm_2: LayerNorm::load(w, &format!("{p}.norm_layers_2.{i}")),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            emb: w.get("enc_p.emb.weight"),
            layers,
            proj: TimeConv1d::load(w, "enc_p.proj")?,
        })
    }

    pub fn num_symbols(&self) -> Result<usize> {
        self.emb.dim(0)
    }

    /// `ids`: `[batch, phonemes]` (u32); `mask`: `[batch, 1, phonemes]`, 1 on the real
    /// phonemes of each sentence, which come first, and 0 on the padding after them.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Encoded> {
        let (batch, len) = ids.dims2()?;
        let hidden = self.emb.dim(1)?;
        let lengths: Vec<usize> = mask
            .sum((1, 2))?
            .to_vec1::<f32>()?
            .into_iter()
            .map(|n| n as usize)
            .collect();
        let mask = mask.transpose(1, 2)?.contiguous()?;
        let x = self.emb.index_select(&ids.flatten_all()?, 0)?;
        let mut x =
            (x.reshape((batch, len, hidden))? * (hidden as f64).sqrt())?.broadcast_mul(&mask)?;
        for layer in &self.layers {
            let y = layer.attn.forward(&x, &lengths)?;
            x = layer.norm_1.forward(&(x + y)?)?;
            let y = layer.ffn.forward(&x, &mask)?;
            x = layer.norm_2.forward(&(x + y)?)?;
        }
        let x = x.broadcast_mul(&mask)?;
        let stats = self.proj.forward(&x)?.broadcast_mul(&mask)?;
        let channels = stats.dim(2)? / 2;
        let channel_major = |t: Tensor| t.transpose(1, 2)?.contiguous();
        Ok(Encoded {
            m: channel_major(stats.narrow(2, 0, channels)?)?,
            logs: channel_major(stats.narrow(2, channels, channels)?)?,
            x: channel_major(x)?,
        })
    }
}

/// Multi-head self-attention with relative-position keys and values (Shaw et al.),
/// as in VITS: `emb_rel_k`/`emb_rel_v` hold one embedding per offset in
/// [-window, window], shared by all heads or one set per head; offsets outside the
/// window contribute 0.
struct RelativeAttention {
    conv_q: TimeConv1d,
    conv_k: TimeConv1d,
    conv_v: TimeConv1d,
    conv_o: TimeConv1d,
    /// `[1 or heads, 2 * window + 1, head_dim]`, flattened.
    emb_rel_k: Vec<f32>,
    emb_rel_v: Vec<f32>,
    rel_heads: usize,
    window: usize,
    head_dim: usize,
}

impl RelativeAttention {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let emb_rel_k = w.get(&format!("{p}.emb_rel_k"));
        let emb_rel_v = w.get(&format!("{p}.emb_rel_v"));
        let (rel_heads, offsets, head_dim) = emb_rel_k.dims3()?;
        if offsets % 2 == 0 || head_dim == 0 || emb_rel_v.dims() != emb_rel_k.dims() {
            candle_core::bail!(
                "{p}: relative embeddings of shapes {:?} and {:?}, not [heads, 2 * window + 1, head_dim]",
                emb_rel_k.dims(),
                emb_rel_v.dims()
            );
        }
        Ok(Self {
            conv_q: TimeConv1d::load(w, &format!("{p}.conv_q"))?,
            conv_k: TimeConv1d::load(w, &format!("{p}.conv_k"))?,
            conv_v: TimeConv1d::load(w, &format!("{p}.conv_v"))?,
            conv_o: TimeConv1d::load(w, &format!("{p}.conv_o"))?,
            emb_rel_k: emb_rel_k.flatten_all()?.to_vec1()?,
            emb_rel_v: emb_rel_v.flatten_all()?.to_vec1()?,
            rel_heads,
            window: offsets / 2,
            head_dim,
        })
    }

    /// `x`: `[batch, time, channels]`; `lengths`: the real phonemes of each item.
    fn forward(&self, x: &Tensor, lengths: &[usize]) -> Result<Tensor> {
        let (batch, len, channels) = x.dims3()?;
        if channels % self.head_dim != 0 {
            candle_core::bail!(
                "{channels} channels do not split into heads of {}",
                self.head_dim
            );
        }
        let values =
            |conv: &TimeConv1d| -> Result<Vec<f32>> { conv.forward(x)?.flatten_all()?.to_vec1() };
        let shape = Shape {
            len,
            heads: channels / self.head_dim,
            head_dim: self.head_dim,
            rel_heads: self.rel_heads,
            window: self.window,
        };
        let out = relative_attention(
            &values(&self.conv_q)?,
            &values(&self.conv_k)?,
            &values(&self.conv_v)?,
            &self.emb_rel_k,
            &self.emb_rel_v,
            lengths,
            shape,
        )?;
        let out = Tensor::from_vec(out, (batch, len, channels), x.device())?;
        self.conv_o.forward(&out)
    }
}

/// The sizes [`relative_attention`] works with.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Time steps per item (padded).
    len: usize,
    heads: usize,
    head_dim: usize,
    /// 1 (shared by all heads) or `heads`.
    rel_heads: usize,
    window: usize,
}

/// Scaled dot-product attention of each head, plus relative-position terms:
/// `softmax_j((q_i·k_j + q_i·rk[j−i]) / √d)` weights `v_j + rv[j−i]`, `rk`/`rv` zero
/// beyond the window. `q`, `k`, `v`: `[batch, len, heads · head_dim]`; the tables
/// `[rel_heads, 2 · window + 1, head_dim]`. Item `b` attends over its first
/// `lengths[b]` steps; the padding after them gives 0.
fn relative_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    rel_k: &[f32],
    rel_v: &[f32],
    lengths: &[usize],
    s: Shape,
) -> Result<Vec<f32>> {
    let d = s.head_dim;
    let channels = s.heads * d;
    let offsets = 2 * s.window + 1;
    let size = lengths.len() * s.len * channels;
    if q.len() != size || k.len() != size || v.len() != size {
        candle_core::bail!("attention inputs of {} values, not {size}", q.len());
    }
    if !(s.rel_heads == 1 || s.rel_heads == s.heads)
        || rel_k.len() != s.rel_heads * offsets * d
        || rel_v.len() != rel_k.len()
    {
        candle_core::bail!(
            "relative tables of {} values for {} heads of {d} and window {}",
            rel_k.len(),
            s.heads,
            s.window
        );
    }
    let scale = 1.0 / (d as f32).sqrt();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| a * b).sum::<f32>();
    let mut out = vec![0f32; size];
    let mut p = vec![0f32; s.len];
    for (b, &n) in lengths.iter().enumerate() {
        let n = n.min(s.len);
        // Where step i of head h starts in q, k, v and out.
        let row = |i: usize, h: usize| (b * s.len + i) * channels + h * d;
        for h in 0..s.heads {
            // Where offset index r of this head's tables starts.
            let table = if s.rel_heads == 1 { 0 } else { h } * offsets * d;
            let rel = |r: usize| table + r * d;
            for i in 0..n {
                let qi = &q[row(i, h)..row(i, h) + d];
                // Keys j = i - window ..= i + window (offset index j - i + window).
                let first = i.saturating_sub(s.window);
                let last = (i + s.window + 1).min(n);
                for (j, pj) in p[..n].iter_mut().enumerate() {
                    *pj = dot(qi, &k[row(j, h)..row(j, h) + d]);
                }
                for (j, pj) in p.iter_mut().enumerate().take(last).skip(first) {
                    let r = rel(j + s.window - i);
                    *pj += dot(qi, &rel_k[r..r + d]);
                }
                let max = p[..n]
                    .iter()
                    .fold(f32::NEG_INFINITY, |m, &x| m.max(x * scale));
                let mut sum = 0.0;
                for pj in &mut p[..n] {
                    *pj = (*pj * scale - max).exp();
                    sum += *pj;
                }
                let o = &mut out[row(i, h)..row(i, h) + d];
                for (j, &pj) in p[..n].iter().enumerate() {
                    for (o, &vj) in o.iter_mut().zip(&v[row(j, h)..row(j, h) + d]) {
                        *o += pj * vj;
                    }
                }
                for (j, &pj) in p.iter().enumerate().take(last).skip(first) {
                    let r = rel(j + s.window - i);
                    for (o, &rv) in o.iter_mut().zip(&rel_v[r..r + d]) {
                        *o += pj * rv;
                    }
                }
                for o in o.iter_mut() {
                    *o /= sum;
                }
            }
        }
    }
    Ok(out)
}

/// Two convolutions with a ReLU between, padded to keep the length ("same").
struct Ffn {
    conv_1: TimeConv1d,
    conv_2: TimeConv1d,
    kernel: usize,
}

impl Ffn {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let kernel = w.get(&format!("{p}.conv_1.weight")).dim(2).unwrap_or(0);
        Ok(Self {
            conv_1: TimeConv1d::load(w, &format!("{p}.conv_1"))?,
            conv_2: TimeConv1d::load(w, &format!("{p}.conv_2"))?,
            kernel,
        })
    }

    /// `x`: `[batch, time, channels]`; `mask`: `[batch, time, 1]`.
    fn forward(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let same = |x: &Tensor| {
            x.broadcast_mul(mask)?.pad_with_zeros(
                1,
                self.kernel.saturating_sub(1) / 2,
                self.kernel / 2,
            )
        };
        let x = self.conv_1.forward(&same(x)?)?.relu()?;
        let x = self.conv_2.forward(&same(&x)?)?;
        x.broadcast_mul(mask)
    }
}

/// VITS's `LayerNorm` (over the channels of each time step, eps 1e-5), on time-major
/// input, where the channels are the last dimension.
struct LayerNorm {
    gamma: Tensor,
    beta: Tensor,
}

impl LayerNorm {
    fn load(w: &Weights, path: &str) -> Self {
        Self {
            gamma: w.get(&format!("{path}.gamma")),
            beta: w.get(&format!("{path}.beta")),
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        candle_nn::ops::layer_norm(&x.contiguous()?, &self.gamma, &self.beta, 1e-5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device, D};

    /// VITS's attention in candle operations (the pad-and-reshape skews of its
    /// PyTorch code), the reference for [`relative_attention`]. `q`, `k`, `v`:
    /// `[batch, heads, len, head_dim]`; `rel`: `[1 or heads, 2 · window + 1,
    /// head_dim]`; `mask`: `[batch, len]`.
    fn candle_attention(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        rel_k: &Tensor,
        rel_v: &Tensor,
        mask: &Tensor,
    ) -> Result<Tensor> {
        let (_, _, len, head_dim) = q.dims4()?;
        let q = (q / (head_dim as f64).sqrt())?;
        let relative = |emb: &Tensor| -> Result<Tensor> {
            let window = emb.dim(1)? / 2;
            let pad = len.saturating_sub(window + 1);
            let start = (window + 1).saturating_sub(len);
            emb.pad_with_zeros(1, pad, pad)?
                .narrow(1, start, 2 * len - 1)?
                .unsqueeze(0)
        };
        let to_absolute = |x: &Tensor| -> Result<Tensor> {
            let (b, h, l, _) = x.dims4()?;
            let x = x
                .pad_with_zeros(D::Minus1, 0, 1)?
                .reshape((b, h, l * 2 * l))?;
            x.pad_with_zeros(D::Minus1, 0, l - 1)?
                .reshape((b, h, l + 1, 2 * l - 1))?
                .narrow(2, 0, l)?
                .narrow(3, l - 1, l)?
                .contiguous()
        };
        let to_relative = |x: &Tensor| -> Result<Tensor> {
            let (b, h, l, _) = x.dims4()?;
            let x = x
                .pad_with_zeros(D::Minus1, 0, l - 1)?
                .reshape((b, h, l * (2 * l - 1)))?;
            x.pad_with_zeros(D::Minus1, l, 0)?
                .reshape((b, h, l, 2 * l))?
                .narrow(3, 1, 2 * l - 1)?
                .contiguous()
        };
        let scores = q.matmul(&k.t()?)?;
        let rel_logits = q.broadcast_matmul(&relative(rel_k)?.t()?)?;
        let scores = (scores + to_absolute(&rel_logits)?)?;
        let m = mask.unsqueeze(1)?;
        let pairs = m.unsqueeze(2)?.broadcast_mul(&m.unsqueeze(3)?)?;
        let fill = Tensor::full(-1e4f32, scores.shape(), scores.device())?;
        let scores = pairs
            .to_dtype(DType::U8)?
            .broadcast_as(scores.shape())?
            .where_cond(&scores, &fill)?;
        let p = candle_nn::ops::softmax_last_dim(&scores)?;
        p.matmul(v)? + to_relative(&p)?.broadcast_matmul(&relative(rel_v)?)?
    }

    #[test]
    fn relative_attention_matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        // (len, lengths, heads, head_dim, rel_heads, window)
        for (len, lengths, heads, head_dim, rel_heads, window) in [
            (1, vec![1], 1, 1, 1, 4),
            (3, vec![3, 2], 2, 5, 1, 4),
            (11, vec![11, 7, 1], 2, 3, 2, 4),
            (9, vec![4, 9], 3, 4, 1, 1),
            (37, vec![37], 2, 96, 1, 4),
        ] {
            let batch = lengths.len();
            let per_head = (batch, heads, len, head_dim);
            let q = Tensor::randn(0f32, 1.0, per_head, &dev)?;
            let k = Tensor::randn(0f32, 1.0, per_head, &dev)?;
            let v = Tensor::randn(0f32, 1.0, per_head, &dev)?;
            let table = (rel_heads, 2 * window + 1, head_dim);
            let rel_k = Tensor::randn(0f32, 1.0, table, &dev)?;
            let rel_v = Tensor::randn(0f32, 1.0, table, &dev)?;
            let mask: Vec<f32> = lengths
                .iter()
                .flat_map(|&n| (0..len).map(move |t| if t < n { 1.0 } else { 0.0 }))
                .collect();
            let mask = Tensor::from_vec(mask, (batch, len), &dev)?;
            let theirs = candle_attention(&q, &k, &v, &rel_k, &rel_v, &mask)?;
            // [b, h, l, d] → [b, l, h · d]
            let time_major =
                |t: &Tensor| -> Result<Vec<f32>> { t.transpose(1, 2)?.flatten_all()?.to_vec1() };
            let shape = Shape {
                len,
                heads,
                head_dim,
                rel_heads,
                window,
            };
            let ours = relative_attention(
                &time_major(&q)?,
                &time_major(&k)?,
                &time_major(&v)?,
                &rel_k.flatten_all()?.to_vec1()?,
                &rel_v.flatten_all()?.to_vec1()?,
                &lengths,
                shape,
            )?;
            let theirs = time_major(&theirs)?;
            let channels = heads * head_dim;
            for (b, &n) in lengths.iter().enumerate() {
                for t in 0..len {
                    for c in 0..channels {
                        let at = (b * len + t) * channels + c;
                        // The padding is masked out after the attention; ours is 0.
                        let want = if t < n { theirs[at] } else { 0.0 };
                        let diff = (ours[at] - want).abs();
                        assert!(diff < 1e-5, "{shape:?} item {b} step {t}: {diff}");
                    }
                }
            }
        }
        Ok(())
    }

    #[test]
    fn relative_attention_refuses_mismatched_sizes() {
        let shape = Shape {
            len: 2,
            heads: 2,
            head_dim: 2,
            rel_heads: 3,
            window: 1,
        };
        let x = vec![0f32; 8];
        let table = vec![0f32; 18];
        assert!(relative_attention(&x, &x, &x, &table, &table, &[2], shape).is_err());
        let shape = Shape {
            rel_heads: 1,
            ..shape
        };
        assert!(
            relative_attention(&x[..7], &x, &x, &table[..6], &table[..6], &[2], shape).is_err()
        );
    }
}
