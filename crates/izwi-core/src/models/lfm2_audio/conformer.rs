//! LFM2-Audio's audio encoder: NeMo's FastConformer as liquid-audio ships it.
//!
//! Depthwise-striding subsampling (a 3x3 stride-2 convolution from one channel, then
//! depthwise 3x3 stride-2 and pointwise pairs, ReLU after each; `log2(factor)` halvings
//! of time and frequency; the channels and remaining frequencies flattened into a
//! linear to `d_model`), then Conformer layers (macaron feed-forwards at half weight,
//! Transformer-XL relative-position self-attention, a GLU / depthwise / batch-norm /
//! SiLU convolution module, a closing LayerNorm). One utterance at a time: every frame
//! is valid, so NeMo's padding masks change nothing.

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{layer_norm, LayerNorm, VarBuilder};

use super::config::ConformerConfig;
use crate::models::shared::activations::softmax_last_dim;
use crate::models::shared::linear::Linear;

const LN_EPS: f64 = 1e-5;
const BN_EPS: f64 = 1e-5;
/// NeMo's sinusoid base (`INF_VAL`).
const POSITION_BASE: f64 = 10000.0;

struct Conv2d {
    weight: Tensor,
    bias: Tensor,
    stride: usize,
    padding: usize,
    groups: usize,
}

impl Conv2d {
    fn load(
        vb: &VarBuilder,
        (out, inp, kernel): (usize, usize, usize),
        stride: usize,
        groups: usize,
    ) -> Result<Self> {
        Ok(Self {
            weight: vb.get((out, inp / groups, kernel, kernel), "weight")?,
            bias: vb.get(out, "bias")?,
            stride,
            padding: (kernel - 1) / 2,
            groups,
        })
    }

    /// `[batch, in, time, freq]` → `[batch, out, time', freq']`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = x.conv2d(&self.weight, self.padding, self.stride, 1, self.groups)?;
        y.broadcast_add(&self.bias.reshape((1, (), 1, 1))?)
    }
}

/// The depthwise-striding subsampling in front of the layers.
struct Subsampling {
    first: Conv2d,
    /// (depthwise, pointwise) per further halving.
    stages: Vec<(Conv2d, Conv2d)>,
    out: Linear,
}

impl Subsampling {
    fn load(config: &ConformerConfig, vb: VarBuilder) -> Result<Self> {
        let channels = config.conv_channels();
        let halvings = config.subsampling_factor.trailing_zeros() as usize;
        let conv = vb.pp("conv");
        let first = Conv2d::load(&conv.pp("0"), (channels, 1, 3), 2, 1)?;
        let mut stages = Vec::new();
        let mut freq = halve(config.feat_in);
        for i in 1..halvings {
            // Layer indices in NeMo's Sequential: conv, ReLU, then (dw, pw, ReLU)s.
            let dw = Conv2d::load(&conv.pp(3 * i - 1), (channels, channels, 3), 2, channels)?;
            let pw = Conv2d::load(&conv.pp(3 * i), (channels, channels, 1), 1, 1)?;
            stages.push((dw, pw));
            freq = halve(freq);
        }
        let out = Linear::load(channels * freq, config.d_model, vb.pp("out"))?;
        Ok(Self { first, stages, out })
    }

    /// Mel features `[feat_in, frames]` → `[frames', d_model]`.
    fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let x = mel.t()?.contiguous()?.unsqueeze(0)?.unsqueeze(0)?; // [1, 1, T, F]
        let mut x = self.first.forward(&x)?.relu()?;
        for (dw, pw) in &self.stages {
            x = pw.forward(&dw.forward(&x)?)?.relu()?;
        }
        // [1, C, T', F'] → [T', C·F']
        let (_, c, t, f) = x.dims4()?;
        let x = x
            .squeeze(0)?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((t, c * f))?;
        self.out.forward(&x)
    }
}

/// Output length of one stride-2, kernel-3, padding-1 convolution.
fn halve(n: usize) -> usize {
    n.div_ceil(2)
}

struct FeedForward {
    linear1: Linear,
    linear2: Linear,
}

impl FeedForward {
    fn load(d_model: usize, d_ff: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            linear1: Linear::load(d_model, d_ff, vb.pp("linear1"))?,
            linear2: Linear::load(d_ff, d_model, vb.pp("linear2"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.linear2.forward(&self.linear1.forward(x)?.silu()?)
    }
}

/// Self-attention with Transformer-XL relative positions: the score of query `i` for
/// key `j` adds `(q_i + v_bias) · W_pos · pe(i - j)` to `(q_i + u_bias) · k_j`.
struct RelPositionAttention {
    heads: usize,
    head_dim: usize,
    linear_q: Linear,
    linear_k: Linear,
    linear_v: Linear,
    linear_out: Linear,
    linear_pos: Linear,
    /// `[heads, 1, head_dim]`
    pos_bias_u: Tensor,
    pos_bias_v: Tensor,
}

impl RelPositionAttention {
    fn load(d_model: usize, heads: usize, vb: VarBuilder) -> Result<Self> {
        let head_dim = d_model / heads;
        Ok(Self {
            heads,
            head_dim,
            linear_q: Linear::load(d_model, d_model, vb.pp("linear_q"))?,
            linear_k: Linear::load(d_model, d_model, vb.pp("linear_k"))?,
            linear_v: Linear::load(d_model, d_model, vb.pp("linear_v"))?,
            linear_out: Linear::load(d_model, d_model, vb.pp("linear_out"))?,
            linear_pos: Linear::load_no_bias(d_model, d_model, vb.pp("linear_pos"))?,
            pos_bias_u: vb.get((heads, head_dim), "pos_bias_u")?.unsqueeze(1)?,
            pos_bias_v: vb.get((heads, head_dim), "pos_bias_v")?.unsqueeze(1)?,
        })
    }

    /// `x` `[T, d]`; `positions` `[2T - 1, d]`, the encodings of `T-1` down to `-(T-1)`.
    fn forward(&self, x: &Tensor, positions: &Tensor) -> Result<Tensor> {
        let t = x.dim(0)?;
        let heads = |y: Tensor, rows: usize| -> Result<Tensor> {
            y.reshape((rows, self.heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let q = heads(self.linear_q.forward(x)?, t)?; // [h, T, dk]
        let k = heads(self.linear_k.forward(x)?, t)?;
        let v = heads(self.linear_v.forward(x)?, t)?;
        let p = heads(self.linear_pos.forward(positions)?, 2 * t - 1)?; // [h, 2T-1, dk]
        let content = q
            .broadcast_add(&self.pos_bias_u)?
            .matmul(&k.t()?.contiguous()?)?;
        let by_offset = q
            .broadcast_add(&self.pos_bias_v)?
            .matmul(&p.t()?.contiguous()?)?; // [h, T, 2T-1]
                                             // Row i, key j reads the encoding of i - j, at index T-1-i+j.
        let index: Vec<u32> = (0..t)
            .flat_map(|i| (0..t).map(move |j| (t - 1 - i + j) as u32))
            .collect();
        let index = Tensor::from_vec(index, (1, t, t), x.device())?
            .broadcast_as((self.heads, t, t))?
            .contiguous()?;
        let position = by_offset.contiguous()?.gather(&index, D::Minus1)?;
        let scores = ((content + position)? / (self.head_dim as f64).sqrt())?;
        let attn = softmax_last_dim(&scores)?;
        let out = attn.matmul(&v)?.transpose(0, 1)?.reshape((t, ()))?;
        self.linear_out.forward(&out)
    }
}

/// Sinusoidal encodings of relative positions `t-1, t-2, …, -(t-1)`: `[2t - 1, d]`
/// (sines in even columns, cosines in odd), in float32 as NeMo computes them.
fn relative_positions(t: usize, d_model: usize, device: &Device) -> Result<Tensor> {
    let mut data = Vec::with_capacity((2 * t - 1) * d_model);
    // The scalar in double precision, the rest in float32, as torch does.
    let step = -(POSITION_BASE.ln() / d_model as f64) as f32;
    let rates: Vec<f32> = (0..d_model / 2)
        .map(|i| ((2 * i) as f32 * step).exp())
        .collect();
    for r in 0..2 * t - 1 {
        let pos = (t as f32 - 1.0) - r as f32;
        for rate in &rates {
            let angle = pos * rate;
            data.push(angle.sin());
            data.push(angle.cos());
        }
    }
    Tensor::from_vec(data, (2 * t - 1, d_model), device)
}

/// GLU, a centred depthwise convolution, batch norm (running statistics), SiLU.
struct ConvModule {
    pointwise1: Linear,
    /// `[kernel, d]`: tap `k`'s weight per channel.
    depthwise: Tensor,
    depthwise_bias: Tensor,
    /// Batch norm folded: `x · scale + shift`.
    bn_scale: Tensor,
    bn_shift: Tensor,
    pointwise2: Linear,
    kernel: usize,
}

impl ConvModule {
    fn load(d: usize, kernel: usize, vb: VarBuilder) -> Result<Self> {
        let pw = |name: &str, out: usize| -> Result<Linear> {
            let vb = vb.pp(name);
            let weight = vb.get((out, d, 1), "weight")?.squeeze(2)?;
            Linear::new(&weight, Some(vb.get(out, "bias")?))
        };
        let dw = vb.pp("depthwise_conv");
        let bn = vb.pp("batch_norm");
        let var = bn.get(d, "running_var")?;
        let scale = (bn.get(d, "weight")? / (var + BN_EPS)?.sqrt()?)?;
        let shift = (bn.get(d, "bias")? - (bn.get(d, "running_mean")? * &scale)?)?;
        Ok(Self {
            pointwise1: pw("pointwise_conv1", 2 * d)?,
            depthwise: dw
                .get((d, 1, kernel), "weight")?
                .squeeze(1)?
                .t()?
                .contiguous()?,
            depthwise_bias: dw.get(d, "bias")?,
            bn_scale: scale,
            bn_shift: shift,
            pointwise2: pw("pointwise_conv2", d)?,
            kernel,
        })
    }

    /// `[T, d]` → `[T, d]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (t, _) = x.dims2()?;
        let y = self.pointwise1.forward(x)?;
        let d = y.dim(1)? / 2;
        let glu = (y.narrow(1, 0, d)? * candle_nn::ops::sigmoid(&y.narrow(1, d, d)?)?)?;
        let pad = (self.kernel - 1) / 2;
        let padded = glu.pad_with_zeros(0, pad, pad)?;
        let mut acc = self
            .depthwise_bias
            .unsqueeze(0)?
            .broadcast_as((t, d))?
            .contiguous()?;
        for k in 0..self.kernel {
            let tap = self.depthwise.narrow(0, k, 1)?;
            acc = (acc + padded.narrow(0, k, t)?.broadcast_mul(&tap)?)?;
        }
        let normed = acc
            .broadcast_mul(&self.bn_scale.unsqueeze(0)?)?
            .broadcast_add(&self.bn_shift.unsqueeze(0)?)?;
        self.pointwise2.forward(&normed.silu()?)
    }
}

struct ConformerLayer {
    norm_ff1: LayerNorm,
    ff1: FeedForward,
    norm_attn: LayerNorm,
    attn: RelPositionAttention,
    norm_conv: LayerNorm,
    conv: ConvModule,
    norm_ff2: LayerNorm,
    ff2: FeedForward,
    norm_out: LayerNorm,
}

impl ConformerLayer {
    fn load(config: &ConformerConfig, vb: VarBuilder) -> Result<Self> {
        let d = config.d_model;
        let d_ff = d * config.ff_expansion_factor;
        Ok(Self {
            norm_ff1: layer_norm(d, LN_EPS, vb.pp("norm_feed_forward1"))?,
            ff1: FeedForward::load(d, d_ff, vb.pp("feed_forward1"))?,
            norm_attn: layer_norm(d, LN_EPS, vb.pp("norm_self_att"))?,
            attn: RelPositionAttention::load(d, config.n_heads, vb.pp("self_attn"))?,
            norm_conv: layer_norm(d, LN_EPS, vb.pp("norm_conv"))?,
            conv: ConvModule::load(d, config.conv_kernel_size, vb.pp("conv"))?,
            norm_ff2: layer_norm(d, LN_EPS, vb.pp("norm_feed_forward2"))?,
            ff2: FeedForward::load(d, d_ff, vb.pp("feed_forward2"))?,
            norm_out: layer_norm(d, LN_EPS, vb.pp("norm_out"))?,
        })
    }

    fn forward(&self, x: &Tensor, positions: &Tensor) -> Result<Tensor> {
        let x = (x + (self.ff1.forward(&self.norm_ff1.forward(x)?)? * 0.5)?)?;
        let x = (&x + self.attn.forward(&self.norm_attn.forward(&x)?, positions)?)?;
        let x = (&x + self.conv.forward(&self.norm_conv.forward(&x)?)?)?;
        let x = (&x + (self.ff2.forward(&self.norm_ff2.forward(&x)?)? * 0.5)?)?;
        self.norm_out.forward(&x)
    }
}

pub struct ConformerEncoder {
    subsampling: Subsampling,
    layers: Vec<ConformerLayer>,
    d_model: usize,
    feat_in: usize,
    factor: usize,
}

impl ConformerEncoder {
    /// From the checkpoint's `conformer.*` tensors (`vb` at `conformer`).
    pub fn load(config: &ConformerConfig, vb: VarBuilder) -> Result<Self> {
        config.validate()?;
        if vb.dtype() != DType::F32 {
            candle_core::bail!("the LFM2-Audio encoder runs in f32, not {:?}", vb.dtype());
        }
        let layers = (0..config.n_layers)
            .map(|i| ConformerLayer::load(config, vb.pp(format!("layers.{i}"))))
            .collect::<Result<_>>()?;
        Ok(Self {
            subsampling: Subsampling::load(config, vb.pp("pre_encode"))?,
            layers,
            d_model: config.d_model,
            feat_in: config.feat_in,
            factor: config.subsampling_factor,
        })
    }

    /// Encoder frames for `mel_frames` input frames.
    pub fn output_frames(&self, mel_frames: usize) -> usize {
        let mut n = mel_frames;
        for _ in 0..self.factor.trailing_zeros() {
            n = halve(n);
        }
        n
    }

    /// One utterance's mel `[feat_in, frames]` → `[frames', d_model]`.
    pub fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let (feat, frames) = mel.dims2()?;
        if feat != self.feat_in || frames == 0 {
            candle_core::bail!(
                "the encoder takes [{}, frames] mel features, not {:?}",
                self.feat_in,
                mel.dims()
            );
        }
        let mut x = self.subsampling.forward(mel)?;
        let positions = relative_positions(x.dim(0)?, self.d_model, mel.device())?;
        for layer in &self.layers {
            x = layer.forward(&x, &positions)?;
        }
        Ok(x)
    }
}
