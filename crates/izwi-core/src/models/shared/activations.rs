//! Softmax, exact GELU, tanh and WaveNet's gate with our own CPU kernels. On the CPU
//! with f32 they run [`vector_math`] over rows in parallel; on other devices and dtypes
//! they are candle's own ops, so Metal and CUDA are unchanged. Measured against
//! candle's versions in docs/speed.md: candle's CPU softmax computes `exp` through libm
//! one element at a time, which made it the largest single cost of Whisper's encoder
//! after the matmuls.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
use super::vector_math;

/// Softmax over the last dimension.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&Softmax)
    } else {
        candle_nn::ops::softmax_last_dim(x)
    }
}

/// `0.5 · x · (1 + erf(x / √2))`, candle's `gelu_erf`.
pub fn gelu_erf(x: &Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&GeluErf)
    } else {
        x.gelu_erf()
    }
}

/// `max(x, slope·x)`: leaky ReLU for slopes in [0, 1], in one pass over `x` (candle
/// needs two, a multiply and a maximum, each through its own allocation).
pub fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&LeakyRelu(slope as f32))
    } else {
        x.maximum(&(x * slope)?)
    }
}

/// `tanh(x)`.
pub fn tanh(x: &Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&Tanh)
    } else {
        x.tanh()
    }
}

/// WaveNet's gate on `[batch, 2·h, time]`: `tanh` of the first `h` channels times the
/// sigmoid of the last `h` → `[batch, h, time]`, in one pass.
pub fn gated_tanh(x: &Tensor) -> Result<Tensor> {
    let h = x.dim(1)? / 2;
    if x.device().is_cpu() && x.dtype() == DType::F32 && x.rank() == 3 {
        x.contiguous()?.apply_op1_no_bwd(&GatedTanh)
    } else {
        x.narrow(1, 0, h)?.tanh()? * candle_nn::ops::sigmoid(&x.narrow(1, h, h)?)?
    }
}

struct Tanh;

impl CustomOp1 for Tanh {
    fn name(&self) -> &'static str {
        "izwi-tanh"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        elementwise(storage, layout, vector_math::tanh_slice)
    }
}

struct GatedTanh;

impl CustomOp1 for GatedTanh {
    fn name(&self) -> &'static str {
        "izwi-gated-tanh"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let (batch, channels, time) = layout.shape().dims3()?;
        if channels % 2 != 0 {
            candle_core::bail!("a gate needs an even channel count, not {channels}");
        }
        // Each batch item's halves are contiguous blocks of h·time values.
        let half = channels / 2 * time;
        let mut out = vec![0f32; batch * half];
        if half == 0 {
            return Ok((
                CpuStorage::F32(out),
                Shape::from((batch, channels / 2, time)),
            ));
        }
        for (x, out) in x.chunks_exact(2 * half).zip(out.chunks_exact_mut(half)) {
            let (a, b) = x.split_at(half);
            out.par_chunks_mut(MIN_PARALLEL_ELEMENTS)
                .zip(a.par_chunks(MIN_PARALLEL_ELEMENTS))
                .zip(b.par_chunks(MIN_PARALLEL_ELEMENTS))
                .for_each(|((out, a), b)| vector_math::gated_tanh(a, b, out));
        }
        Ok((
            CpuStorage::F32(out),
            Shape::from((batch, channels / 2, time)),
        ))
    }
}

struct LeakyRelu(f32);

impl CustomOp1 for LeakyRelu {
    fn name(&self) -> &'static str {
        "izwi-leaky-relu"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let slope = self.0;
        elementwise(storage, layout, |x, out| {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v.max(slope * v);
            }
        })
    }
}

/// Elements handed to one parallel task, so small tensors are not split too finely.
const MIN_PARALLEL_ELEMENTS: usize = 1 << 14;

/// An op applied element by element: `f(x, out)` over parallel chunks of the input.
fn elementwise(
    storage: &CpuStorage,
    layout: &Layout,
    f: impl Fn(&[f32], &mut [f32]) + Sync,
) -> Result<(CpuStorage, Shape)> {
    let x = cpu_slice::<f32>(storage, layout)?;
    let mut out = vec![0f32; x.len()];
    out.par_chunks_mut(MIN_PARALLEL_ELEMENTS)
        .zip(x.par_chunks(MIN_PARALLEL_ELEMENTS))
        .for_each(|(out, x)| f(x, out));
    Ok((CpuStorage::F32(out), layout.shape().clone()))
}

struct Softmax;

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "izwi-softmax-last-dim"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let dim = layout.dims().last().copied().unwrap_or(1).max(1);
        let mut out = vec![0f32; x.len()];
        let rows_per_task = (MIN_PARALLEL_ELEMENTS / dim).max(1);
        out.par_chunks_mut(dim * rows_per_task)
            .zip(x.par_chunks(dim * rows_per_task))
            .for_each(|(out, x)| {
                for (o, row) in out.chunks_mut(dim).zip(x.chunks(dim)) {
                    softmax_row(row, o);
                }
            });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

fn softmax_row(row: &[f32], out: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        // Every position masked: candle gives NaN here; so do we, as 0/0.
        out.fill(f32::NAN);
        return;
    }
    let sum = vector_math::exp_shifted_sum(row, max, out);
    let inverse = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inverse;
    }
}

struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "izwi-gelu-erf"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        elementwise(storage, layout, vector_math::gelu_erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, IndexOp};

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
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

    /// Largest elementwise `|a − b| / |b|`. A softmax output is a ratio to a row sum, and
    /// sums of tens of thousands of terms differ in their last bits with the order of
    /// summation, so every output carries that relative error: an absolute bound fails
    /// on the occasional random row whose largest probability is near one.
    fn max_relative_diff(a: &Tensor, b: &Tensor) -> f32 {
        let a = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let b = b.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        a.iter()
            .zip(&b)
            .map(|(a, b)| (a - b).abs() / b.abs().max(f32::MIN_POSITIVE))
            .fold(0.0, f32::max)
    }

    #[test]
    fn softmax_matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for shape in [
            (1, 1, 1),
            (3, 5, 7),
            (2, 17, 1500),
            (8, 3, 65),
            (1, 1, 51865),
        ] {
            let x = (Tensor::randn(0f32, 4.0, shape, &dev)? - 2.0)?;
            let ours = softmax_last_dim(&x)?;
            let theirs = candle_nn::ops::softmax_last_dim(&x)?;
            // 1e-4 is 7× the worst of 600 random rows of the largest shapes.
            let diff = max_relative_diff(&ours, &theirs);
            assert!(diff < 1e-4, "{shape:?}: {diff}");
            // A transposed (non-contiguous) view goes through the same kernel.
            let t = x.transpose(1, 2)?;
            let diff = max_relative_diff(
                &softmax_last_dim(&t)?,
                &candle_nn::ops::softmax_last_dim(&t.contiguous()?)?,
            );
            assert!(diff < 1e-4, "{shape:?} transposed: {diff}");
        }
        Ok(())
    }

    #[test]
    fn softmax_of_masked_positions_is_zero() -> Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::new(&[[0f32, f32::NEG_INFINITY, 1.0]], &dev)?;
        let p = softmax_last_dim(&x)?;
        assert_eq!(p.i((0, 1))?.to_scalar::<f32>()?, 0.0);
        let sum = p.sum_all()?.to_scalar::<f32>()?;
        assert!((sum - 1.0).abs() < 1e-6);
        Ok(())
    }

    #[test]
    fn leaky_relu_matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for shape in [(1, 1), (3, 7), (20_000, 33)] {
            let x = Tensor::randn(0f32, 3.0, shape, &dev)?;
            for slope in [0.0, 0.01, 0.1] {
                let theirs = x.maximum(&(&x * slope)?)?;
                assert_eq!(
                    max_diff(&leaky_relu(&x, slope)?, &theirs),
                    0.0,
                    "{shape:?} {slope}"
                );
                let t = x.t()?;
                let theirs = t.maximum(&(&t * slope)?)?;
                assert_eq!(max_diff(&leaky_relu(&t, slope)?, &theirs), 0.0);
            }
        }
        Ok(())
    }

    #[test]
    fn tanh_and_gate_match_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for shape in [(1, 2, 1), (3, 6, 7), (2, 384, 275), (1, 10, 16_385)] {
            let x = Tensor::randn(0f32, 3.0, shape, &dev)?;
            assert!(max_diff(&tanh(&x)?, &x.tanh()?) < 2.5e-7, "{shape:?}");
            let h = shape.1 / 2;
            let theirs =
                (x.narrow(1, 0, h)?.tanh()? * candle_nn::ops::sigmoid(&x.narrow(1, h, h)?)?)?;
            let ours = gated_tanh(&x)?;
            assert_eq!(ours.dims(), theirs.dims());
            let diff = max_diff(&ours, &theirs);
            assert!(diff < 4e-7, "{shape:?}: {diff}");
            // A transposed (non-contiguous) view goes through the same kernel.
            let t = x.transpose(1, 2)?.contiguous()?.transpose(1, 2)?;
            assert_eq!(t.is_contiguous(), shape.2 == 1);
            assert_eq!(max_diff(&gated_tanh(&t)?, &ours), 0.0);
        }
        Ok(())
    }

    #[test]
    fn gelu_matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for shape in [(1, 1), (3, 7), (1500, 2048), (5, 16_385)] {
            let x = Tensor::randn(0f32, 3.0, shape, &dev)?;
            let diff = max_diff(&gelu_erf(&x)?, &x.gelu_erf()?);
            assert!(diff < 2e-6, "{shape:?}: {diff}");
            let t = x.t()?;
            let diff = max_diff(&gelu_erf(&t)?, &t.gelu_erf()?);
            assert!(diff < 2e-6, "{shape:?} transposed: {diff}");
        }
        Ok(())
    }
}
