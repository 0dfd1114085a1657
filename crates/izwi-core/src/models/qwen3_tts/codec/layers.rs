//! The codec decoder's convolutional pieces, each as the reference defines it: causal
//! convolutions (all padding on the left), transposed convolutions trimmed on the right,
//! SnakeBeta, ConvNeXt blocks and residual units. Tensors are `[1, channels, time]`.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Module, Result, Shape, Tensor};
use candle_nn::{layer_norm, LayerNorm, VarBuilder};
use rayon::prelude::*;

use crate::models::shared::activations::gelu_erf;
use crate::models::shared::cpu_slice::cpu_slice;
use crate::models::shared::linear::Linear;
use crate::models::shared::packed_conv::{self, PackedConv};
use crate::models::shared::vector_math;

/// A 1-D convolution that sees only the present and past: `(kernel - 1) · dilation`
/// zeros on the left, none on the right (every use here has stride 1).
pub struct CausalConv {
    kind: ConvKind,
    kernel: usize,
    dilation: usize,
}

enum ConvKind {
    /// candle's convolution, the bias added after.
    Dense { weight: Tensor, bias: Tensor },
    /// One filter per channel.
    Depthwise { weight: Tensor, bias: Tensor },
    /// Our packed convolution on CPUs with AVX-512 (the padding and bias inside it):
    /// the decoder's residual units are most of its arithmetic (docs/qwen3-tts.md).
    Packed(PackedConv),
}

impl CausalConv {
    pub fn load(
        vb: VarBuilder,
        (cin, cout): (usize, usize),
        kernel: usize,
        dilation: usize,
    ) -> Result<Self> {
        let weight = vb.get((cout, cin, kernel), "conv.weight")?;
        let bias = vb.get(cout, "conv.bias")?;
        let packs = weight.device().is_cpu() && packed_conv::available();
        Self::build(weight, bias, kernel, dilation, packs)
    }

    /// `packs`: whether the packed convolution may be used (tests try both).
    fn build(
        weight: Tensor,
        bias: Tensor,
        kernel: usize,
        dilation: usize,
        packs: bool,
    ) -> Result<Self> {
        let kind = if packs && weight.dtype() == DType::F32 {
            let pads = ((kernel - 1) * dilation, 0);
            ConvKind::Packed(PackedConv::pack(&weight, Some(&bias), dilation, pads)?)
        } else {
            ConvKind::Dense { weight, bias }
        };
        Ok(Self {
            kind,
            kernel,
            dilation,
        })
    }

    pub fn load_depthwise(vb: VarBuilder, channels: usize, kernel: usize) -> Result<Self> {
        Ok(Self {
            kind: ConvKind::Depthwise {
                weight: vb.get((channels, 1, kernel), "conv.weight")?,
                bias: vb.get(channels, "conv.bias")?,
            },
            kernel,
            dilation: 1,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let pad = (self.kernel - 1) * self.dilation;
        let (y, bias) = match &self.kind {
            ConvKind::Packed(conv) => return conv.forward(x),
            ConvKind::Dense { weight, bias } => {
                let x = x.pad_with_zeros(2, pad, 0)?;
                (x.conv1d(weight, 0, 1, self.dilation, 1)?, bias)
            }
            ConvKind::Depthwise { weight, bias } => {
                // One multiply-add per tap: candle's grouped convolution would run one
                // convolution per channel.
                let x = x.pad_with_zeros(2, pad, 0)?;
                let len = x.dim(2)? - pad;
                let mut y = None;
                for tap in 0..self.kernel {
                    let w = weight.narrow(2, tap, 1)?.reshape((1, (), 1))?;
                    let term = x.narrow(2, tap * self.dilation, len)?.broadcast_mul(&w)?;
                    y = Some(match y {
                        None => term,
                        Some(y) => (y + term)?,
                    });
                }
                let y = y.ok_or_else(|| candle_core::Error::msg("a convolution without taps"))?;
                (y, bias)
            }
        };
        y.broadcast_add(&bias.reshape((1, (), 1))?)
    }
}

/// A transposed convolution (upsampling by `stride`) with the `kernel - stride` samples
/// that would reach into the future cut from the right.
pub struct CausalTransConv {
    weight: Tensor,
    bias: Tensor,
    stride: usize,
    trim: usize,
}

impl CausalTransConv {
    pub fn load(
        vb: VarBuilder,
        (cin, cout): (usize, usize),
        kernel: usize,
        stride: usize,
    ) -> Result<Self> {
        Ok(Self {
            weight: vb.get((cin, cout, kernel), "conv.weight")?,
            bias: vb.get(cout, "conv.bias")?,
            stride,
            trim: kernel - stride,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = x.conv_transpose1d(&self.weight, 0, 0, self.stride, 1, 1)?;
        let y = y.narrow(2, 0, y.dim(2)? - self.trim)?;
        y.broadcast_add(&self.bias.reshape((1, (), 1))?)
    }
}

/// SnakeBeta: `x + sin²(x · e^α) / (e^β + 1e-9)`, per channel.
pub struct SnakeBeta {
    alpha: Tensor,
    inv_beta: Tensor,
    /// The same per channel as plain values, for the one-pass CPU kernel.
    op: SnakeOp,
}

impl SnakeBeta {
    pub fn load(vb: VarBuilder, channels: usize) -> Result<Self> {
        let alpha = vb.get(channels, "alpha")?.exp()?;
        let beta = vb.get(channels, "beta")?.exp()?;
        let inv_beta = (beta + 1e-9)?.recip()?;
        let op = SnakeOp {
            freq: alpha.to_dtype(DType::F32)?.to_vec1()?,
            scale: inv_beta.to_dtype(DType::F32)?.to_vec1()?,
        };
        Ok(Self {
            alpha: alpha.reshape((1, channels, 1))?,
            inv_beta: inv_beta.reshape((1, channels, 1))?,
            op,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.device().is_cpu() && x.dtype() == DType::F32 {
            return x.contiguous()?.apply_op1_no_bwd(&self.op);
        }
        let s = x.broadcast_mul(&self.alpha)?.sin()?.sqr()?;
        x + s.broadcast_mul(&self.inv_beta)?
    }
}

/// SnakeBeta over `[batch, channels, time]` in one pass per row, `sin²` vectorised
/// (candle's takes five passes over the tensor and calls libm's `sin` per value).
struct SnakeOp {
    freq: Vec<f32>,
    scale: Vec<f32>,
}

impl CustomOp1 for SnakeOp {
    fn name(&self) -> &'static str {
        "izwi-snake-beta"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let (_, channels, time) = layout.shape().dims3()?;
        if self.freq.len() != channels {
            candle_core::bail!(
                "a SnakeBeta of {} channels given {channels}",
                self.freq.len()
            );
        }
        let mut out = vec![0f32; x.len()];
        if let Some(rows_per_task) = ROW_VALUES_PER_TASK.checked_div(time) {
            let rows_per_task = rows_per_task.max(1);
            out.par_chunks_mut(rows_per_task * time)
                .zip(x.par_chunks(rows_per_task * time))
                .enumerate()
                .for_each(|(task, (out, x))| {
                    let rows = out.chunks_exact_mut(time).zip(x.chunks_exact(time));
                    for (i, (out, x)) in rows.enumerate() {
                        let c = (task * rows_per_task + i) % channels;
                        vector_math::snake(x, self.freq[c], self.scale[c], out);
                    }
                });
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// Values a parallel task of [`SnakeOp`] covers, at least (whole rows).
const ROW_VALUES_PER_TASK: usize = 16 * 1024;

/// ConvNeXt: depthwise causal convolution, LayerNorm, a GELU MLP, a learnt scale, residual.
pub struct ConvNeXt {
    dwconv: CausalConv,
    norm: LayerNorm,
    pwconv1: Linear,
    pwconv2: Linear,
    gamma: Tensor,
}

impl ConvNeXt {
    pub fn load(vb: VarBuilder, dim: usize) -> Result<Self> {
        Ok(Self {
            dwconv: CausalConv::load_depthwise(vb.pp("dwconv"), dim, 7)?,
            norm: layer_norm(dim, 1e-6, vb.pp("norm"))?,
            pwconv1: Linear::load(dim, 4 * dim, vb.pp("pwconv1"))?,
            pwconv2: Linear::load(4 * dim, dim, vb.pp("pwconv2"))?,
            gamma: vb.get(dim, "gamma")?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.dwconv.forward(x)?.squeeze(0)?.t()?;
        let h = self.norm.forward(&h)?;
        let h = self
            .pwconv2
            .forward(&gelu_erf(&self.pwconv1.forward(&h)?)?)?;
        let h = h.broadcast_mul(&self.gamma)?.t()?.unsqueeze(0)?;
        x + h
    }
}

/// SnakeBeta, a dilated causal convolution, SnakeBeta, a 1×1 convolution, residual.
pub struct ResidualUnit {
    act1: SnakeBeta,
    conv1: CausalConv,
    act2: SnakeBeta,
    conv2: CausalConv,
}

impl ResidualUnit {
    pub fn load(vb: VarBuilder, dim: usize, dilation: usize) -> Result<Self> {
        Ok(Self {
            act1: SnakeBeta::load(vb.pp("act1"), dim)?,
            conv1: CausalConv::load(vb.pp("conv1"), (dim, dim), 7, dilation)?,
            act2: SnakeBeta::load(vb.pp("act2"), dim)?,
            conv2: CausalConv::load(vb.pp("conv2"), (dim, dim), 1, 1)?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.conv1.forward(&self.act1.forward(x)?)?;
        let h = self.conv2.forward(&self.act2.forward(&h)?)?;
        x + h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::shared::max_abs_diff;
    use candle_core::Device;

    #[test]
    fn snake_beta_in_one_pass_equals_candles_ops() -> Result<()> {
        let dev = Device::Cpu;
        for (batch, channels, time) in [(1, 3, 1000), (2, 5, 7), (1, 4, 0), (1, 2, 20_000)] {
            let alpha = Tensor::randn(0f32, 0.5, channels, &dev)?;
            let beta = Tensor::randn(0f32, 0.5, channels, &dev)?;
            let vb = VarBuilder::from_tensors(
                [("alpha".to_string(), alpha), ("beta".to_string(), beta)].into(),
                DType::F32,
                &dev,
            );
            let snake = SnakeBeta::load(vb, channels)?;
            let x = (Tensor::randn(0f32, 1.0, (batch, channels, time), &dev)? * 4.0)?;
            let ours = snake.forward(&x)?;
            let s = x.broadcast_mul(&snake.alpha)?.sin()?.sqr()?;
            let theirs = (&x + s.broadcast_mul(&snake.inv_beta)?)?;
            assert_eq!(ours.dims(), theirs.dims());
            if time > 0 {
                let diff = max_abs_diff(&ours, &theirs)?;
                assert!(diff < 2e-6, "{batch}×{channels}×{time}: {diff}");
            }
        }
        Ok(())
    }

    #[test]
    fn the_packed_causal_convolution_equals_candles() -> Result<()> {
        if !packed_conv::available() {
            eprintln!("skipped: this CPU has no AVX-512");
            return Ok(());
        }
        let dev = Device::Cpu;
        // (inputs, outputs, kernel, dilation, time): a residual unit's dilated and
        // 1×1 convolutions, and one shorter than its receptive field.
        for (cin, cout, kernel, dilation, time) in [
            (24, 24, 7, 9, 300),
            (24, 24, 1, 1, 300),
            (40, 16, 7, 1, 37),
            (8, 8, 7, 3, 5),
        ] {
            let scale = 1.0 / ((cin * kernel) as f32).sqrt();
            let w = Tensor::randn(0f32, scale, (cout, cin, kernel), &dev)?;
            let b = Tensor::randn(0f32, 1.0, cout, &dev)?;
            let x = Tensor::randn(0f32, 1.0, (1, cin, time), &dev)?;
            let packed = CausalConv::build(w.clone(), b.clone(), kernel, dilation, true)?;
            assert!(matches!(packed.kind, ConvKind::Packed(_)));
            let dense = CausalConv::build(w, b, kernel, dilation, false)?;
            let (ours, theirs) = (packed.forward(&x)?, dense.forward(&x)?);
            assert_eq!(ours.dims(), [1, cout, time]);
            assert_eq!(ours.dims(), theirs.dims());
            let diff = max_abs_diff(&ours, &theirs)?;
            assert!(diff < 1e-5, "{cin}→{cout} k{kernel} d{dilation}: {diff}");
        }
        Ok(())
    }
}
