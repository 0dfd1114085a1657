//! Layers every part of VITS uses: 1-D convolutions (plain, transposed) whose
//! hyperparameters come from the ONNX graph, and layer norm over the channel axis.
//! Tensors are `[batch, channels, time]` as in PyTorch, except in the vocoder, which
//! works time-major (`[batch, time, channels]`, see [`TimeConv1d`]).

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, D};

use super::weights::{ConvAttrs, Weights};
use crate::models::shared::activations::leaky_relu;
use crate::models::shared::bf16_weights::{self, Input, PackedBf16};
use crate::models::shared::cpu_slice::cpu_slice;
use crate::models::shared::packed_conv::{self, PackedConv};
use crate::models::shared::tap_conv;

/// Size of the im2col matrix built per slice of time. Built whole, it would reach tens
/// of megabytes in the vocoder: a fresh mapping each time (glibc maps blocks above
/// 32 MB anew), whose page faults alone measured as slow as the matmul. Slices this
/// size are recycled by the allocator, and no larger one speeds the matmul up.
const COLUMN_BYTES: usize = 4 << 20;

/// A `torch.nn.Conv1d`, computed in whichever of these ways is fastest for its shape:
/// - stride 1, no groups, on a CPU with AVX-512: our packed convolution
///   ([`packed_conv`]: the weight packed at load, the input read in place);
/// - 1×1: one matmul;
/// - depthwise: a shifted multiply-add per tap (candle would run one convolution per
///   channel);
/// - stride 1: im2col and a matmul, a slice of time at a time (see [`COLUMN_BYTES`]),
///   the im2col matrix built from whole shifted rows (candle's convolution builds it
///   element by element, which costs more than its matmul);
/// - otherwise candle's convolution.
pub struct Conv1d {
    kind: ConvKind,
    /// `[1, out, 1]`, to broadcast over batch and time.
    bias: Option<Tensor>,
    attrs: ConvAttrs,
}

enum ConvKind {
    /// Stride 1, no groups, on a CPU with AVX-512; the bias is packed with it.
    Packed(PackedConv),
    /// `[out, in]`
    Pointwise(Tensor),
    /// `[kernel]` tensors of shape `[1, channels, 1]`
    Depthwise(Vec<Tensor>),
    /// Stride 1, no groups: `[out, in * kernel]`, multiplied with the im2col matrix.
    Unfolded { weight: Tensor, kernel: usize },
    /// Anything else: `[out, in / groups, kernel]`
    General(Tensor),
    /// The weight is absent. Loading the voice fails in [`Weights::finish`] with every
    /// absent name, so this is never run.
    Missing,
}

impl Conv1d {
    /// The convolution at module path `path`: `{path}.weight`, `{path}.bias` if any.
    pub fn load(w: &Weights, path: &str) -> Result<Self> {
        let attrs = w.conv_attrs(path);
        // Taken, not cloned: a packed convolution copies it and lets it go.
        let Some(weight) = w.take(&format!("{path}.weight")) else {
            return Ok(Self {
                kind: ConvKind::Missing,
                bias: None,
                attrs,
            });
        };
        let bias = w.get_optional(&format!("{path}.bias"));
        Self::new(weight, bias, attrs)
    }

    /// A convolution only some voices have (the speaker conditioning of
    /// multi-speaker voices).
    pub fn load_optional(w: &Weights, path: &str) -> Result<Option<Self>> {
        if w.has_module(path) {
            Self::load(w, path).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn kernel_size(&self) -> usize {
        match &self.kind {
            ConvKind::Packed(conv) => conv.taps(),
            ConvKind::Pointwise(_) => 1,
            ConvKind::Depthwise(taps) => taps.len(),
            ConvKind::Unfolded { kernel, .. } => *kernel,
            ConvKind::General(w) => w.dim(2).unwrap_or(0),
            ConvKind::Missing => 0,
        }
    }

    fn new(weight: Tensor, bias: Option<Tensor>, attrs: ConvAttrs) -> Result<Self> {
        let packs = weight.device().is_cpu() && packed_conv::available();
        Self::build(weight, bias, attrs, packs)
    }

    /// `packs`: whether the packed convolution may be chosen (tests try both).
    fn build(weight: Tensor, bias: Option<Tensor>, attrs: ConvAttrs, packs: bool) -> Result<Self> {
        let (out, in_per_group, kernel) = weight.dims3()?;
        if kernel == 0 {
            candle_core::bail!("a convolution with an empty kernel");
        }
        let unit = attrs.stride == 1 && attrs.dilation == 1 && attrs.pads == (0, 0);
        if packs && attrs.groups == 1 && attrs.stride == 1 {
            let conv = PackedConv::pack(&weight, bias.as_ref(), attrs.dilation, attrs.pads)?;
            return Ok(Self {
                kind: ConvKind::Packed(conv),
                bias: None,
                attrs,
            });
        }
        let kind = if kernel == 1 && attrs.groups == 1 && unit {
            ConvKind::Pointwise(weight.squeeze(2)?)
        } else if in_per_group == 1 && attrs.groups == out && attrs.stride == 1 {
            let taps = (0..kernel)
                .map(|k| weight.narrow(2, k, 1)?.reshape((1, out, 1)))
                .collect::<Result<_>>()?;
            ConvKind::Depthwise(taps)
        } else if attrs.groups == 1 && attrs.stride == 1 {
            ConvKind::Unfolded {
                weight: weight.reshape((out, in_per_group * kernel))?,
                kernel,
            }
        } else {
            ConvKind::General(weight)
        };
        let bias = bias.map(|b| b.reshape((1, out, 1))).transpose()?;
        Ok(Self { kind, bias, attrs })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let a = &self.attrs;
        let y = match &self.kind {
            ConvKind::Packed(conv) => conv.forward(x)?,
            ConvKind::Pointwise(w) => w.broadcast_matmul(&x.contiguous()?)?,
            ConvKind::Depthwise(taps) => {
                let x = x.pad_with_zeros(D::Minus1, a.pads.0, a.pads.1)?;
                let span = (taps.len() - 1) * a.dilation;
                let len = x.dim(D::Minus1)?.saturating_sub(span);
                let mut y = x.narrow(D::Minus1, 0, len)?.broadcast_mul(&taps[0])?;
                for (k, tap) in taps.iter().enumerate().skip(1) {
                    let shifted = x.narrow(D::Minus1, k * a.dilation, len)?;
                    y = (y + shifted.broadcast_mul(tap)?)?;
                }
                y
            }
            ConvKind::Unfolded { weight, kernel } => {
                let x = x.pad_with_zeros(D::Minus1, a.pads.0, a.pads.1)?;
                let (batch, channels, padded) = x.dims3()?;
                let len = padded.saturating_sub((kernel - 1) * a.dilation);
                let slice = (COLUMN_BYTES / 4 / (channels * kernel)).max(1);
                let slices = (0..len)
                    .step_by(slice)
                    .map(|start| {
                        let n = slice.min(len - start);
                        // Row (c, k) of the im2col matrix is channel c shifted by tap k;
                        // concatenating the shifted views along time lays them out so.
                        let taps: Vec<Tensor> = (0..*kernel)
                            .map(|k| x.narrow(D::Minus1, start + k * a.dilation, n))
                            .collect::<Result<_>>()?;
                        let columns = Tensor::cat(&taps, D::Minus1)?;
                        weight.broadcast_matmul(&columns.reshape((batch, channels * kernel, n))?)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Tensor::cat(&slices, D::Minus1)?
            }
            ConvKind::General(w) if a.pads.0 == a.pads.1 => {
                x.conv1d(w, a.pads.0, a.stride, a.dilation, a.groups)?
            }
            ConvKind::General(w) => x
                .pad_with_zeros(D::Minus1, a.pads.0, a.pads.1)?
                .conv1d(w, 0, a.stride, a.dilation, a.groups)?,
            ConvKind::Missing => candle_core::bail!("a convolution has no weights"),
        };
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// A stride-1, ungrouped `torch.nn.Conv1d` on time-major input: `[batch, time, in]` →
/// `[batch, time', out]`. The vocoder runs on long sequences and few channels, where
/// the matmul is up to twice as fast this way round (time as the matmul's rows). On
/// the CPU it is one accumulating gemm per tap over views of the input
/// ([`tap_conv`]); elsewhere im2col, each shifted copy of the input one contiguous
/// block.
pub struct TimeConv1d {
    /// `[kernel * in, out]`, rows ordered (tap, input channel).
    weight: Tensor,
    /// The weight packed in bf16 instead ([`TimeConv1d::with_bf16`]).
    packed: Option<PackedBf16>,
    /// `[out]`
    bias: Option<Tensor>,
    kernel: usize,
    dilation: usize,
    pads: (usize, usize),
}

impl TimeConv1d {
    pub fn load(w: &Weights, path: &str) -> Result<Self> {
        let attrs = w.conv_attrs(path);
        if attrs.stride != 1 || attrs.groups != 1 {
            candle_core::bail!("{path}: a vocoder convolution with stride or groups");
        }
        let weight = w.get(&format!("{path}.weight"));
        // An absent weight (reported by Weights::finish) stays as its stand-in.
        let (weight, kernel) = match weight.dims3() {
            Ok((out, input, kernel)) => {
                let w = weight.permute((2, 1, 0))?.contiguous()?;
                (w.reshape((kernel * input, out))?, kernel)
            }
            Err(_) => (weight, 0),
        };
        Ok(Self {
            weight,
            packed: None,
            bias: w.get_optional(&format!("{path}.bias")),
            kernel,
            dilation: attrs.dilation,
            pads: attrs.pads,
        })
    }

    /// The same convolution with its weight packed in bf16 where the CPU multiplies
    /// bf16 natively ([`bf16_weights`]), for 16 output channels or more (fewer would
    /// leave most of the kernel's 32 columns idle); unchanged elsewhere. The f32
    /// weight is let go. Inputs are rounded to bf16 on the way in.
    pub fn with_bf16(self) -> Result<Self> {
        let outputs = self.weight.dim(1).unwrap_or(0);
        let suits = self.kernel > 0
            && outputs >= 16
            && self.weight.device().is_cpu()
            && bf16_weights::available();
        if !suits {
            return Ok(self);
        }
        let packed = PackedBf16::pack_taps(&self.weight, self.kernel, self.bias.as_ref())?;
        Ok(Self {
            weight: Tensor::zeros(0, self.weight.dtype(), self.weight.device())?,
            packed: Some(packed),
            ..self
        })
    }

    /// The packed weight over each batch item: padding, the activation, bias and
    /// residual in the kernel's own passes.
    fn packed_forward(
        &self,
        packed: &PackedBf16,
        x: &Tensor,
        slope: Option<f32>,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        let input = Input {
            pads: self.pads,
            slope,
        };
        let items = (0..x.dim(0)?)
            .map(|b| {
                let residual = residual.map(|r| r.get(b)).transpose()?;
                packed.conv(&x.get(b)?, self.dilation, input, residual.as_ref())
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&items, 0)
    }

    /// `residual + conv(leaky_relu(x, slope))`: in one pass where the weight is packed
    /// in bf16, in separate steps elsewhere.
    pub fn forward_leaky(
        &self,
        x: &Tensor,
        slope: f64,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        if let Some(packed) = &self.packed {
            return self.packed_forward(packed, x, Some(slope as f32), residual);
        }
        let y = self.forward(&leaky_relu(x, slope)?)?;
        match residual {
            Some(r) => y + r,
            None => Ok(y),
        }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(packed) = &self.packed {
            return self.packed_forward(packed, x, None, None);
        }
        let x = x.pad_with_zeros(1, self.pads.0, self.pads.1)?;
        let (batch, padded, channels) = x.dims3()?;
        let span = self.kernel.saturating_sub(1) * self.dilation;
        let len = padded.saturating_sub(span);
        let slice = (COLUMN_BYTES / 4 / (channels * self.kernel).max(1)).max(1);
        let items = (0..batch)
            .map(|b| {
                let x = x.get(b)?;
                if tap_conv::runs_on(&x) && self.kernel > 0 {
                    return tap_conv::tap_conv(&x, &self.weight, self.kernel, self.dilation);
                }
                let slices = (0..len)
                    .step_by(slice)
                    .map(|start| {
                        let n = slice.min(len - start);
                        // Row t of the im2col matrix: the input at t, t + d, ... side
                        // by side; each tap is one contiguous block of rows.
                        let taps: Vec<Tensor> = (0..self.kernel)
                            .map(|k| x.narrow(0, start + k * self.dilation, n))
                            .collect::<Result<_>>()?;
                        Tensor::cat(&taps, 1)?.matmul(&self.weight)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Tensor::cat(&slices, 0)
            })
            .collect::<Result<Vec<_>>>()?;
        let y = Tensor::stack(&items, 0)?;
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// A `torch.nn.ConvTranspose1d` (the vocoder's upsampling), time-major like
/// [`TimeConv1d`] and computed as one: output sample `u·stride + r` is a plain
/// convolution of the input at `u, u-1, ...` with the kernel taps `r, r+stride, ...`,
/// so a [`TimeConv1d`] whose `stride × out` output channels are the phases `r` gives
/// the output with its phases interleaved, which is time-major order. No col2im.
pub struct ConvTranspose1d {
    /// Kernel `ceil(kernel / stride)`, output `[stride * out]` ordered (phase, channel).
    phases: TimeConv1d,
    stride: usize,
    kernel: usize,
    pads: (usize, usize),
}

impl ConvTranspose1d {
    pub fn load(w: &Weights, path: &str) -> Result<Self> {
        let attrs = w.conv_attrs(path);
        if attrs.dilation != 1 || attrs.groups != 1 || attrs.stride == 0 {
            candle_core::bail!("{path}: an upsampling with dilation, groups or stride 0");
        }
        let s = attrs.stride;
        let weight = w.get(&format!("{path}.weight"));
        let bias = w.get_optional(&format!("{path}.bias"));
        // An absent weight (reported by Weights::finish) stays as its stand-in.
        let (weight, kernel, taps) = match weight.dims3() {
            Ok((input, out, kernel)) => {
                let taps = kernel.div_ceil(s);
                // [in, out, taps * s] → [tap from the last, in, phase, out]
                let w4 = weight
                    .pad_with_zeros(2, 0, taps * s - kernel)?
                    .reshape((input, out, taps, s))?
                    .permute((2, 0, 3, 1))?
                    .contiguous()?
                    .flip(&[0])?;
                (w4.reshape((taps * input, s * out))?, kernel, taps)
            }
            Err(_) => (weight, 0, 0),
        };
        let phases = TimeConv1d {
            weight,
            packed: None,
            bias: bias.map(|b| b.repeat(s)).transpose()?,
            kernel: taps,
            dilation: 1,
            pads: (taps.saturating_sub(1), taps.saturating_sub(1)),
        };
        Ok(Self {
            phases,
            stride: s,
            kernel,
            pads: attrs.pads,
        })
    }

    /// The same upsampling with its weight in bf16 ([`TimeConv1d::with_bf16`]).
    pub fn with_bf16(self) -> Result<Self> {
        Ok(Self {
            phases: self.phases.with_bf16()?,
            ..self
        })
    }

    /// How many output samples each input sample becomes.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The upsampling of `leaky_relu(x, slope)` (HiFi-GAN activates before each):
    /// `[batch, time, in]` → `[batch, time', out]`, `time * stride` long when, as in
    /// HiFi-GAN, the kernel exceeds the stride by the two paddings.
    pub fn forward_leaky(&self, x: &Tensor, slope: f64) -> Result<Tensor> {
        self.interleave(x.dim(1)?, self.phases.forward_leaky(x, slope, None)?)
    }

    /// The phases' output (`[batch, steps, stride * out]`) of an input `len` long as
    /// the upsampled signal.
    fn interleave(&self, len: usize, y: Tensor) -> Result<Tensor> {
        let (batch, steps, channels) = y.dims3()?;
        let out = channels / self.stride;
        let y = y.reshape((batch, steps * self.stride, out))?;
        // The full transposed convolution is (len - 1)·stride + kernel long; its
        // padding only trims it.
        let full = (len.saturating_sub(1) * self.stride + self.kernel).min(steps * self.stride);
        let trimmed = full.saturating_sub(self.pads.0 + self.pads.1);
        y.narrow(1, self.pads.0.min(full), trimmed)?.contiguous()
    }
}

/// VITS's `LayerNorm`: normalizes each time step over the channels (eps 1e-5).
pub struct ChannelNorm {
    gamma: Tensor,
    beta: Tensor,
    /// Our kernel with its own copy of gamma and beta, made at load, on the CPU in f32
    /// (boxed: a norm stays the size of its two tensors in the modules holding it).
    cpu: Option<Box<ChannelNormOp>>,
}

impl ChannelNorm {
    pub fn load(w: &Weights, path: &str) -> Result<Self> {
        Self::new(
            w.get(&format!("{path}.gamma")),
            w.get(&format!("{path}.beta")),
        )
    }

    fn new(gamma: Tensor, beta: Tensor) -> Result<Self> {
        let cpu = if gamma.device().is_cpu() && gamma.dtype() == DType::F32 {
            Some(Box::new(ChannelNormOp {
                gamma: gamma.flatten_all()?.to_vec1::<f32>()?,
                beta: beta.flatten_all()?.to_vec1::<f32>()?,
            }))
        } else {
            None
        };
        Ok(Self { gamma, beta, cpu })
    }

    /// Layer norm over the channels of `[batch, channels, time]`. On the CPU in f32 it
    /// is a kernel of our own over the rows as they lie; candle's needs the channels
    /// last, and the two transposes cost more than the norm.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match &self.cpu {
            Some(op) if x.device().is_cpu() && x.dtype() == DType::F32 => {
                x.contiguous()?.apply_op1_no_bwd(op.as_ref())
            }
            _ => {
                let x = x.transpose(1, 2)?.contiguous()?;
                candle_nn::ops::layer_norm(&x, &self.gamma, &self.beta, CHANNEL_NORM_EPS)?
                    .transpose(1, 2)?
                    .contiguous()
            }
        }
    }
}

/// VITS's `LayerNorm` epsilon.
const CHANNEL_NORM_EPS: f32 = 1e-5;

struct ChannelNormOp {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl CustomOp1 for ChannelNormOp {
    fn name(&self) -> &'static str {
        "izwi-channel-norm"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let (_, channels, time) = layout.shape().dims3()?;
        if self.gamma.len() != channels || self.beta.len() != channels {
            candle_core::bail!("a channel norm of {} given {channels}", self.gamma.len());
        }
        let mut out = vec![0f32; x.len()];
        if time > 0 {
            for (x, out) in x
                .chunks_exact(channels * time)
                .zip(out.chunks_exact_mut(channels * time))
            {
                self.item(x, time, out);
            }
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

impl ChannelNormOp {
    /// One batch item, `[channels, time]`: each time step's mean summed over the
    /// channel rows, then the variance around it (closer than candle's E[x²] − mean²),
    /// then every row scaled.
    fn item(&self, x: &[f32], time: usize, out: &mut [f32]) {
        let n = (x.len() / time) as f32;
        let mut mean = vec![0f32; time];
        for row in x.chunks_exact(time) {
            mean.iter_mut().zip(row).for_each(|(m, &v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mut scale = vec![0f32; time];
        for row in x.chunks_exact(time) {
            for ((s, &v), &m) in scale.iter_mut().zip(row).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        scale
            .iter_mut()
            .for_each(|s| *s = 1.0 / (*s / n + CHANNEL_NORM_EPS).sqrt());
        for (c, (row, out)) in x
            .chunks_exact(time)
            .zip(out.chunks_exact_mut(time))
            .enumerate()
        {
            let (g, b) = (self.gamma[c], self.beta[c]);
            for (((o, &v), &m), &s) in out.iter_mut().zip(row).zip(&mean).zip(&scale) {
                *o = (v - m) * s * g + b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn attrs(pads: (usize, usize), dilation: usize, groups: usize) -> ConvAttrs {
        ConvAttrs {
            stride: 1,
            pads,
            dilation,
            groups,
        }
    }

    fn close(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }

    #[test]
    fn fast_paths_equal_candle_convolution() {
        fast_paths_equal_candle_convolution_when(false);
        if packed_conv::available() {
            fast_paths_equal_candle_convolution_when(true);
        }
    }

    /// Each path chosen by shape, or (`packs`) the packed convolution for all but the
    /// grouped and strided ones.
    fn fast_paths_equal_candle_convolution_when(packs: bool) {
        let kind_is = |conv: &Conv1d, other: fn(&ConvKind) -> bool| {
            if packs {
                matches!(conv.kind, ConvKind::Packed(_))
            } else {
                other(&conv.kind)
            }
        };
        let new = |w: &Tensor, b: Option<Tensor>, a| Conv1d::build(w.clone(), b, a, packs);
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 1., (2, 6, 11), &dev).unwrap();
        let bias = Tensor::randn(0f32, 1., 6, &dev).unwrap();
        let b = bias.reshape((1, 6, 1)).unwrap();
        // 1×1
        let w = Tensor::randn(0f32, 1., (6, 6, 1), &dev).unwrap();
        let conv = new(&w, Some(bias.clone()), attrs((0, 0), 1, 1)).unwrap();
        assert!(kind_is(&conv, |k| matches!(k, ConvKind::Pointwise(_))));
        let want = x.conv1d(&w, 0, 1, 1, 1).unwrap().broadcast_add(&b).unwrap();
        assert!(close(&conv.forward(&x).unwrap(), &want) < 1e-5);
        // depthwise, dilated
        let w = Tensor::randn(0f32, 1., (6, 1, 3), &dev).unwrap();
        let conv = new(&w, Some(bias.clone()), attrs((3, 3), 3, 6)).unwrap();
        assert!(matches!(conv.kind, ConvKind::Depthwise(_)));
        let want = x.conv1d(&w, 3, 1, 3, 6).unwrap().broadcast_add(&b).unwrap();
        assert!(close(&conv.forward(&x).unwrap(), &want) < 1e-5);
        // im2col, dilated
        let w = Tensor::randn(0f32, 1., (5, 6, 7), &dev).unwrap();
        let conv = new(&w, None, attrs((6, 6), 2, 1)).unwrap();
        assert!(kind_is(&conv, |k| matches!(k, ConvKind::Unfolded { .. })));
        let want = x.conv1d(&w, 6, 1, 2, 1).unwrap();
        assert!(close(&conv.forward(&x).unwrap(), &want) < 1e-4);
        // long enough to be cut into slices of time
        let long = Tensor::randn(0f32, 1., (1, 6, 30000), &dev).unwrap();
        let want = long.conv1d(&w, 6, 1, 2, 1).unwrap();
        assert!(close(&conv.forward(&long).unwrap(), &want) < 1e-4);
        // uneven padding
        let w = Tensor::randn(0f32, 1., (6, 6, 4), &dev).unwrap();
        let conv = new(&w, None, attrs((1, 2), 1, 1)).unwrap();
        let padded = x.pad_with_zeros(2, 1, 2).unwrap();
        let want = padded.conv1d(&w, 0, 1, 1, 1).unwrap();
        assert!(close(&conv.forward(&x).unwrap(), &want) < 1e-4);
        // grouped, strided: candle's
        let w = Tensor::randn(0f32, 1., (4, 3, 3), &dev).unwrap();
        let strided = ConvAttrs {
            stride: 2,
            ..attrs((1, 1), 1, 2)
        };
        let conv = new(&w, None, strided).unwrap();
        assert!(matches!(conv.kind, ConvKind::General(_)));
        let want = x.conv1d(&w, 1, 2, 1, 2).unwrap();
        assert!(close(&conv.forward(&x).unwrap(), &want) < 1e-5);
    }

    #[test]
    fn channel_norm_equals_candle_layer_norm() {
        let dev = Device::Cpu;
        for (batch, channels, time) in [(1, 1, 1), (2, 192, 37), (1, 7, 300), (3, 5, 1)] {
            let x =
                (Tensor::randn(0f32, 2., (batch, channels, time), &dev).unwrap() + 0.5).unwrap();
            let norm = ChannelNorm::new(
                Tensor::randn(0f32, 1., channels, &dev).unwrap(),
                Tensor::randn(0f32, 1., channels, &dev).unwrap(),
            )
            .unwrap();
            assert!(norm.cpu.is_some());
            let want = candle_nn::ops::layer_norm(
                &x.transpose(1, 2).unwrap().contiguous().unwrap(),
                &norm.gamma,
                &norm.beta,
                CHANNEL_NORM_EPS,
            )
            .unwrap()
            .transpose(1, 2)
            .unwrap();
            let ours = norm.forward(&x).unwrap();
            assert!(close(&ours, &want) < 1e-5, "{batch}×{channels}×{time}");
            // A non-contiguous input gives the same.
            let t = x
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap()
                .transpose(1, 2)
                .unwrap();
            assert!(close(&norm.forward(&t).unwrap(), &ours) == 0.0);
        }
    }

    /// `[b, c, t]` ↔ `[b, t, c]`
    fn flip_major(x: &Tensor) -> Tensor {
        x.transpose(1, 2).unwrap().contiguous().unwrap()
    }

    #[test]
    fn time_major_convolutions_equal_candle_s() {
        let dev = Device::Cpu;
        // transposed: piper's (kernel 16, stride 8, padding 4) and an odd kernel
        for (kernel, stride, pad) in [(16, 8, 4), (7, 3, 1)] {
            let x = Tensor::randn(0f32, 1., (2, 4, 5), &dev).unwrap();
            let w = Tensor::randn(0f32, 1., (4, 3, kernel), &dev).unwrap();
            let bias = Tensor::randn(0f32, 1., 3, &dev).unwrap();
            let mut weights = Weights::for_tests();
            weights.insert("up.weight", w.clone());
            weights.insert("up.bias", bias.clone());
            weights.insert_conv(
                "up",
                ConvAttrs {
                    stride,
                    pads: (pad, pad),
                    dilation: 1,
                    groups: 1,
                },
            );
            let up = ConvTranspose1d::load(&weights, "up").unwrap();
            // A slope of 1: no activation.
            let y = flip_major(&up.forward_leaky(&flip_major(&x), 1.0).unwrap());
            // item by item: candle 0.11.1 mixes up the items of a batch here
            for b in 0..2 {
                let want = x
                    .narrow(0, b, 1)
                    .unwrap()
                    .conv_transpose1d(&w, pad, 0, stride, 1, 1)
                    .unwrap()
                    .broadcast_add(&bias.reshape((1, 3, 1)).unwrap())
                    .unwrap();
                assert_eq!(y.narrow(0, b, 1).unwrap().dims(), want.dims());
                assert!(close(&y.narrow(0, b, 1).unwrap(), &want) < 1e-5);
            }
        }
        // dilated, long enough to be cut into slices of time
        let x = Tensor::randn(0f32, 1., (2, 6, 30000), &dev).unwrap();
        let w = Tensor::randn(0f32, 1., (5, 6, 7), &dev).unwrap();
        let mut weights = Weights::for_tests();
        weights.insert("conv.weight", w.clone());
        weights.insert_conv("conv", attrs((18, 18), 6, 1));
        let conv = TimeConv1d::load(&weights, "conv").unwrap();
        let y = flip_major(&conv.forward(&flip_major(&x)).unwrap());
        let want = x.conv1d(&w, 18, 1, 6, 1).unwrap();
        assert!(close(&y, &want) < 1e-4);
    }
}
