//! The causal audio encoder and its adapter, run as a stream.
//!
//! Two causal convolutions (the second halves the frame rate), then pre-norm
//! transformer layers whose attention looks back over a sliding window of frames, then
//! every `downsample_factor` frames are joined and projected to one decoder embedding.
//! Each stream keeps what the next chunk needs of the past: the last input columns of
//! each convolution and, per layer, the keys and values of the window's frames. Fed one
//! chunk at a time, it gives what the whole recording at once would (the convolutions
//! and attention are causal).

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::{EncoderConfig, VoxtralRealtimeConfig};
use crate::models::shared::activations::{gelu_erf, softmax_last_dim};
use crate::models::shared::linear::Linear;

/// A convolution over time applied without padding: the caller prepends the columns
/// the causal padding (or the previous chunk) provides.
struct Conv {
    weight: Tensor,
    bias: Tensor,
    stride: usize,
}

impl Conv {
    fn load(vb: VarBuilder, c_in: usize, c_out: usize, stride: usize) -> Result<Self> {
        Ok(Self {
            weight: vb.get((c_out, c_in, 3), "weight")?,
            bias: vb.get(c_out, "bias")?,
            stride,
        })
    }

    /// Columns of the input kept for the next chunk: kernel − stride.
    fn left_context(&self) -> usize {
        3 - self.stride
    }

    /// `x`: `[c_in, frames]` with the left context first; returns `[c_out, out]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = x.unsqueeze(0)?.conv1d(&self.weight, 0, self.stride, 1, 1)?;
        y.squeeze(0)?.broadcast_add(&self.bias.unsqueeze(1)?)
    }
}

struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
}

struct Mlp {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

struct Layer {
    attn: Attention,
    mlp: Mlp,
    attn_norm: RmsNorm,
    mlp_norm: RmsNorm,
}

impl Layer {
    fn load(c: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        let (h, width) = (c.hidden_size, c.num_attention_heads * c.head_dim);
        let a = vb.pp("self_attn");
        let m = vb.pp("mlp");
        Ok(Self {
            attn: Attention {
                q_proj: Linear::load(h, width, a.pp("q_proj"))?,
                k_proj: Linear::load_no_bias(h, width, a.pp("k_proj"))?,
                v_proj: Linear::load(h, width, a.pp("v_proj"))?,
                o_proj: Linear::load(width, h, a.pp("o_proj"))?,
            },
            mlp: Mlp {
                gate_proj: Linear::load_no_bias(h, c.intermediate_size, m.pp("gate_proj"))?,
                up_proj: Linear::load_no_bias(h, c.intermediate_size, m.pp("up_proj"))?,
                down_proj: Linear::load(c.intermediate_size, h, m.pp("down_proj"))?,
            },
            attn_norm: rms_norm(h, c.rms_norm_eps, vb.pp("self_attn_layer_norm"))?,
            mlp_norm: rms_norm(h, c.rms_norm_eps, vb.pp("final_layer_norm"))?,
        })
    }
}

/// What one stream carries from chunk to chunk (cheap to clone: tensors are shared).
#[derive(Clone)]
pub struct EncoderStream {
    /// The last mel columns, `[n_mels, 2]`, and the last first-convolution output
    /// column, `[hidden, 1]`: zeros before the first chunk, the causal padding.
    conv1_tail: Tensor,
    conv2_tail: Tensor,
    /// Per layer, the keys and values of the frames still inside the window:
    /// `[heads, frames, head_dim]`.
    past: Vec<Option<(Tensor, Tensor)>>,
    /// Encoder frames encoded so far: the position of the next.
    position: usize,
}

pub struct AudioEncoder {
    conv1: Conv,
    conv2: Conv,
    layers: Vec<Layer>,
    norm: RmsNorm,
    linear_1: Linear,
    linear_2: Linear,
    config: EncoderConfig,
    downsample: usize,
    inv_freq: Vec<f32>,
    dtype: DType,
    device: Device,
}

impl AudioEncoder {
    /// `vb` at the checkpoint's root (`audio_tower.*`, `multi_modal_projector.*`).
    pub fn load(config: &VoxtralRealtimeConfig, vb: &VarBuilder) -> Result<Self> {
        let c = config.audio_config.clone();
        let tower = vb.pp("audio_tower");
        let embedder = tower.pp("embedder");
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(&c, tower.pp(format!("layers.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let projector = vb.pp("multi_modal_projector");
        let joined = c.hidden_size * config.downsample_factor;
        let text = config.text_config.hidden_size;
        let theta = c.rope_theta()?;
        let inv_freq = (0..c.head_dim / 2)
            .map(|i| (1.0 / theta.powf(2.0 * i as f64 / c.head_dim as f64)) as f32)
            .collect();
        Ok(Self {
            conv1: Conv::load(embedder.pp("conv1"), c.num_mel_bins, c.hidden_size, 1)?,
            conv2: Conv::load(embedder.pp("conv2"), c.hidden_size, c.hidden_size, 2)?,
            layers,
            norm: rms_norm(c.hidden_size, c.rms_norm_eps, tower.pp("norm"))?,
            linear_1: Linear::load_no_bias(joined, text, projector.pp("linear_1"))?,
            linear_2: Linear::load_no_bias(text, text, projector.pp("linear_2"))?,
            downsample: config.downsample_factor,
            inv_freq,
            dtype: vb.dtype(),
            device: vb.device().clone(),
            config: c,
        })
    }

    pub fn new_stream(&self) -> Result<EncoderStream> {
        let c = &self.config;
        Ok(EncoderStream {
            conv1_tail: Tensor::zeros(
                (c.num_mel_bins, self.conv1.left_context()),
                self.dtype,
                &self.device,
            )?,
            conv2_tail: Tensor::zeros(
                (c.hidden_size, self.conv2.left_context()),
                self.dtype,
                &self.device,
            )?,
            past: vec![None; self.layers.len()],
            position: 0,
        })
    }

    /// Mel frames one decoder embedding is made of.
    pub fn mel_frames_per_embedding(&self) -> usize {
        2 * self.downsample
    }

    /// Encodes the next chunk of every stream together: `mels[i]` (`[frames, n_mels]`,
    /// a multiple of [`Self::mel_frames_per_embedding`] frames) continues `streams[i]`.
    /// Returns each stream's new decoder embeddings, `[frames / 8, text_hidden]`.
    pub fn encode(
        &self,
        streams: &mut [&mut EncoderStream],
        mels: &[Tensor],
    ) -> Result<Vec<Tensor>> {
        let per = self.mel_frames_per_embedding();
        let mut inputs = Vec::with_capacity(streams.len());
        for (stream, mel) in streams.iter_mut().zip(mels) {
            let frames = mel.dim(0)?;
            if frames % per != 0 {
                candle_core::bail!("{frames} mel frames are not a whole number of embeddings");
            }
            let mel = mel.to_dtype(self.dtype)?.t()?;
            let x = Tensor::cat(&[&stream.conv1_tail, &mel], 1)?;
            stream.conv1_tail = x.narrow(
                1,
                x.dim(1)? - self.conv1.left_context(),
                self.conv1.left_context(),
            )?;
            let x = gelu_erf(&self.conv1.forward(&x)?)?;
            let x = Tensor::cat(&[&stream.conv2_tail, &x], 1)?;
            stream.conv2_tail = x.narrow(
                1,
                x.dim(1)? - self.conv2.left_context(),
                self.conv2.left_context(),
            )?;
            let x = gelu_erf(&self.conv2.forward(&x)?)?;
            inputs.push(x.t()?.contiguous()?); // [frames / 2, hidden]
        }
        let lens: Vec<usize> = inputs.iter().map(|x| x.dim(0)).collect::<Result<_>>()?;
        let rope: Vec<(Tensor, Tensor)> = streams
            .iter()
            .zip(&lens)
            .map(|(s, &n)| self.rope_tables(s.position, n))
            .collect::<Result<_>>()?;
        let mut x = Tensor::cat(&inputs, 0)?;
        for (l, layer) in self.layers.iter().enumerate() {
            let h = layer.attn_norm.forward(&x)?;
            let (q, k, v) = (
                layer.attn.q_proj.forward(&h)?,
                layer.attn.k_proj.forward(&h)?,
                layer.attn.v_proj.forward(&h)?,
            );
            let mut outputs = Vec::with_capacity(streams.len());
            let mut row = 0;
            for (i, stream) in streams.iter_mut().enumerate() {
                let n = lens[i];
                let heads = |t: &Tensor| -> Result<Tensor> {
                    t.narrow(0, row, n)?.reshape((
                        n,
                        self.config.num_attention_heads,
                        self.config.head_dim,
                    ))
                };
                let (cos, sin) = &rope[i];
                let q = rotate(&heads(&q)?, cos, sin)?;
                let k = rotate(&heads(&k)?, cos, sin)?;
                let v = heads(&v)?.transpose(0, 1)?.contiguous()?;
                outputs.push(self.attend(&mut stream.past[l], stream.position, &q, &k, &v)?);
                row += n;
            }
            let x1 = (&x + layer.attn.o_proj.forward(&Tensor::cat(&outputs, 0)?)?)?;
            let h = layer.mlp_norm.forward(&x1)?;
            let gate = candle_nn::ops::silu(&layer.mlp.gate_proj.forward(&h)?)?;
            let mlp = layer
                .mlp
                .down_proj
                .forward(&(gate * layer.mlp.up_proj.forward(&h)?)?)?;
            x = (x1 + mlp)?;
        }
        let x = self.norm.forward(&x)?;
        let mut embeds = Vec::with_capacity(streams.len());
        let mut row = 0;
        for (stream, &n) in streams.iter_mut().zip(&lens) {
            stream.position += n;
            let joined = x.narrow(0, row, n)?.reshape((
                n / self.downsample,
                self.config.hidden_size * self.downsample,
            ))?;
            let h = gelu_erf(&self.linear_1.forward(&joined)?)?;
            embeds.push(self.linear_2.forward(&h)?);
            row += n;
        }
        Ok(embeds)
    }

    /// cos and sin of `n` positions from `start`: `[n, 1, head_dim / 2]` each.
    fn rope_tables(&self, start: usize, n: usize) -> Result<(Tensor, Tensor)> {
        let half = self.inv_freq.len();
        let angles: Vec<f32> = (start..start + n)
            .flat_map(|p| self.inv_freq.iter().map(move |f| p as f32 * f))
            .collect();
        let angles = Tensor::from_vec(angles, (n, 1, half), &self.device)?;
        Ok((
            angles.cos()?.to_dtype(self.dtype)?,
            angles.sin()?.to_dtype(self.dtype)?,
        ))
    }

    /// Attention of `n` new frames at `position..` over the window: `q`, `k`:
    /// `[n, heads, d]`, `v`: `[heads, n, d]`. Keeps the last `window − 1` frames' keys
    /// and values in `past`; returns `[n, heads * d]`.
    fn attend(
        &self,
        past: &mut Option<(Tensor, Tensor)>,
        position: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<Tensor> {
        let (n, heads, d) = q.dims3()?;
        let k = k.transpose(0, 1)?.contiguous()?;
        let (k, v) = match past.take() {
            Some((pk, pv)) => (Tensor::cat(&[&pk, &k], 1)?, Tensor::cat(&[&pv, v], 1)?),
            None => (k, v.clone()),
        };
        let total = k.dim(1)?;
        let first = position + n - total; // position of the first key
        let window = self.config.sliding_window;
        let mask: Vec<f32> = (0..n)
            .flat_map(|i| {
                (0..total).map(move |j| {
                    let (qp, kp) = (position + i, first + j);
                    if kp <= qp && qp - kp < window {
                        0.0
                    } else {
                        f32::NEG_INFINITY
                    }
                })
            })
            .collect();
        let mask = Tensor::from_vec(mask, (1, n, total), &self.device)?.to_dtype(self.dtype)?;
        let q = q.transpose(0, 1)?.contiguous()?;
        let scores = (q.matmul(&k.t()?)? * (1.0 / (d as f64).sqrt()))?.broadcast_add(&mask)?;
        let out = softmax_last_dim(&scores)?.matmul(&v)?; // [heads, n, d]
        let keep = total.min(window.saturating_sub(1));
        *past = Some((
            k.narrow(1, total - keep, keep)?,
            v.narrow(1, total - keep, keep)?,
        ));
        out.transpose(0, 1)?.reshape((n, heads * d))
    }
}

/// Hugging Face's rotate-half RoPE of `x` (`[n, heads, d]`) by per-row tables.
fn rotate(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let half = x.dim(D::Minus1)? / 2;
    let (x1, x2) = (
        x.narrow(D::Minus1, 0, half)?,
        x.narrow(D::Minus1, half, half)?,
    );
    let rotated_1 = (x1.broadcast_mul(cos)? - x2.broadcast_mul(sin)?)?;
    let rotated_2 = (x2.broadcast_mul(cos)? + x1.broadcast_mul(sin)?)?;
    Tensor::cat(&[rotated_1, rotated_2], D::Minus1)
}
