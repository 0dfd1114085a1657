//! `x · Wᵀ` for a few f32 rows against a weight kept in f16 on the CPU. Whisper's
//! checkpoints store f16; converted to f32 at load, every decode step streams twice the
//! bytes it needs (the decoder's weights and its 51865-token output projection are
//! read whole for a handful of rows, so the step is bound by memory, not arithmetic).
//! Kept in f16 and widened in registers, the arithmetic is the same f32 arithmetic
//! (f16 → f32 is exact) on half the memory traffic.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};
use half::f16;
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
use super::few_rows::few_rows_matmul;
#[cfg(target_arch = "x86_64")]
use super::few_rows::horizontal_sum;

/// Outputs computed by one parallel task.
const OUTPUTS_PER_TASK: usize = 256;

/// `t` (f16) as f32 on the CPU, 8 values per instruction where the CPU has F16C, the
/// work split over threads. Loading a model stored in f16 converts every weight;
/// candle's conversion goes one value at a time.
pub fn widen(t: &Tensor) -> Result<Tensor> {
    if t.device().is_cpu() && t.dtype() == DType::F16 {
        t.contiguous()?.apply_op1_no_bwd(&Widen)
    } else {
        t.to_dtype(DType::F32)
    }
}

struct Widen;

impl candle_core::CustomOp1 for Widen {
    fn name(&self) -> &'static str {
        "izwi-widen-f16"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f16>(storage, layout)?;
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(1 << 16)
            .zip(x.par_chunks(1 << 16))
            .for_each(|(out, x)| widen_slice(x, out));
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

fn widen_slice(x: &[f16], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { widen_f16c(x, out) };
    }
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.to_f32();
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn widen_f16c(x: &[f16], out: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = x.len().min(out.len());
    let chunks = n / 8;
    let (xp, op) = (x.as_ptr() as *const u16, out.as_mut_ptr());
    for c in 0..chunks {
        // SAFETY: c * 8 + 8 ≤ n, inside both slices.
        let v = _mm256_cvtph_ps(_mm_loadu_si128(xp.add(c * 8) as *const __m128i));
        _mm256_storeu_ps(op.add(c * 8), v);
    }
    for i in chunks * 8..n {
        out[i] = x[i].to_f32();
    }
}

/// `t` (f32) as f16 on the CPU, 8 values per instruction where the CPU has F16C
/// (rounding to nearest even, as candle's conversion does), the work split over
/// threads. Keeping Whisper's decoder weights in f16 narrows them back after loading;
/// candle converts one value at a time.
pub fn narrow(t: &Tensor) -> Result<Tensor> {
    if t.device().is_cpu() && t.dtype() == DType::F32 {
        t.contiguous()?.apply_op1_no_bwd(&Narrow)
    } else {
        t.to_dtype(DType::F16)
    }
}

struct Narrow;

impl candle_core::CustomOp1 for Narrow {
    fn name(&self) -> &'static str {
        "izwi-narrow-f32"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let mut out = vec![f16::ZERO; x.len()];
        out.par_chunks_mut(1 << 16)
            .zip(x.par_chunks(1 << 16))
            .for_each(|(out, x)| narrow_slice(x, out));
        Ok((CpuStorage::F16(out), layout.shape().clone()))
    }
}

fn narrow_slice(x: &[f32], out: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { narrow_f16c(x, out) };
    }
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f16::from_f32(v);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn narrow_f16c(x: &[f32], out: &mut [f16]) {
    use std::arch::x86_64::*;
    let n = x.len().min(out.len());
    let chunks = n / 8;
    let (xp, op) = (x.as_ptr(), out.as_mut_ptr() as *mut u16);
    for c in 0..chunks {
        // SAFETY: c * 8 + 8 ≤ n, inside both slices; f16 is a u16 in memory.
        let v = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(xp.add(c * 8)));
        _mm_storeu_si128(op.add(c * 8) as *mut __m128i, v);
    }
    for i in chunks * 8..n {
        out[i] = f16::from_f32(x[i]);
    }
}

/// Whether [`matmul_half_weight`] runs for these operands.
pub fn runs_on(x: &Tensor, weight: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32 && weight.dtype() == DType::F16
}

/// `x` `[rows, in]` (f32) times `weight` `[out, in]` (f16) transposed → `[rows, out]` f32.
pub fn matmul_half_weight(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    x.contiguous()?
        .apply_op2_no_bwd(&weight.contiguous()?, &HalfWeightMatmul)
}

struct HalfWeightMatmul;

impl CustomOp2 for HalfWeightMatmul {
    fn name(&self) -> &'static str {
        "izwi-half-weight-matmul"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        w: &CpuStorage,
        w_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        few_rows_matmul::<f16>(
            "half-weight matmul",
            (x, x_layout),
            (w, w_layout),
            OUTPUTS_PER_TASK,
            products,
        )
    }
}

/// Input rows handled together: each weight vector widened once serves every input
/// row of a pass. One weight row at a time: reading several rows side by side halved
/// the bandwidth from memory on an AMD EPYC (Zen 4), and the projection to the
/// vocabulary (53 MB in f16 for base) comes from memory every step.
const ROWS_PER_PASS: usize = 4;

/// `block[o * rows + r]` = weight row `o` of `w` (`[count, inputs]`) · row `r` of `x`.
fn products(w: &[f16], x: &[f32], inputs: usize, rows: usize, block: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        for (o, weights) in w.chunks_exact(inputs).enumerate() {
            for r in (0..rows).step_by(ROWS_PER_PASS) {
                let pass = ROWS_PER_PASS.min(rows - r);
                let x = &x[r * inputs..(r + pass) * inputs];
                let sums = &mut block[o * rows + r..o * rows + r + pass];
                // SAFETY: the CPU has the features the kernel is compiled for; `x`
                // holds `pass` input rows and `sums` `pass` values.
                unsafe {
                    match pass {
                        1 => pass_f16c::<1>(weights, x, sums),
                        2 => pass_f16c::<2>(weights, x, sums),
                        3 => pass_f16c::<3>(weights, x, sums),
                        _ => pass_f16c::<4>(weights, x, sums),
                    }
                }
            }
        }
        return;
    }
    for (o, w) in w.chunks_exact(inputs).enumerate() {
        for (r, x) in x.chunks_exact(inputs).enumerate() {
            block[o * rows + r] = w.iter().zip(x).map(|(w, x)| w.to_f32() * x).sum();
        }
    }
}

/// One weight row (`weight`, `[inputs]`) against `R` input rows (`x`, `[R, inputs]`):
/// `sums[r]` = weight · row `r`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn pass_f16c<const R: usize>(weight: &[f16], x: &[f32], sums: &mut [f32]) {
    use std::arch::x86_64::*;
    let inputs = weight.len();
    let chunks = inputs / 8;
    let wp = weight.as_ptr() as *const u16;
    let xp = x.as_ptr();
    let mut acc = [_mm256_setzero_ps(); R];
    for c in 0..chunks {
        let i = c * 8;
        // SAFETY: i + 8 ≤ inputs; input row r starts at r * inputs, inside `x`
        // (R rows); f16 is a u16 in memory.
        let w = _mm256_cvtph_ps(_mm_loadu_si128(wp.add(i) as *const __m128i));
        for (r, acc) in acc.iter_mut().enumerate() {
            *acc = _mm256_fmadd_ps(w, _mm256_loadu_ps(xp.add(r * inputs + i)), *acc);
        }
    }
    for r in 0..R {
        let x = &x[r * inputs..(r + 1) * inputs];
        let tail: f32 = (chunks * 8..inputs)
            .map(|i| weight[i].to_f32() * x[i])
            .sum();
        sums[r] = horizontal_sum(acc[r]) + tail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn widening_equals_candles_conversion() -> Result<()> {
        for len in [1usize, 7, 8, 9, 70_001] {
            let t = Tensor::randn(0f32, 3.0, len, &Device::Cpu)?.to_dtype(DType::F16)?;
            let ours = widen(&t)?.to_vec1::<f32>()?;
            let theirs = t.to_dtype(DType::F32)?.to_vec1::<f32>()?;
            assert_eq!(ours, theirs, "{len}");
        }
        Ok(())
    }

    #[test]
    fn narrowing_equals_candles_conversion() -> Result<()> {
        for len in [1usize, 7, 8, 9, 70_001] {
            // Values beyond f16's range and below its smallest normal included.
            let t = (Tensor::randn(0f32, 3.0, len, &Device::Cpu)? * 1e4)?;
            let tiny = (Tensor::randn(0f32, 1.0, len, &Device::Cpu)? * 1e-6)?;
            for t in [t, tiny] {
                let ours = narrow(&t)?.to_vec1::<f16>()?;
                let theirs = t.to_dtype(DType::F16)?.to_vec1::<f16>()?;
                let same = ours
                    .iter()
                    .zip(&theirs)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{len}");
            }
        }
        Ok(())
    }

    #[test]
    fn matches_candle_with_the_weight_widened_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for (rows, inputs, outputs) in [
            (0, 64, 5),
            (2, 0, 3),
            (1, 1, 1),
            (2, 9, 4),
            (3, 512, 51865),
            (4, 8, 5),
            (5, 17, 300),
            (9, 23, 7),
            (33, 64, 257),
        ] {
            let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?.to_dtype(DType::F16)?;
            let ours = matmul_half_weight(&x, &w)?;
            let theirs = x.matmul(&w.to_dtype(DType::F32)?.t()?)?;
            assert_eq!(ours.dims(), theirs.dims());
            if rows == 0 {
                continue;
            }
            let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
            // Sums of `inputs` products differ in their last bits by order (an empty
            // product is zero).
            let tolerance = 2e-6 * inputs as f32;
            assert!(diff <= tolerance, "{rows}x{inputs}x{outputs}: {diff}");
        }
        Ok(())
    }
}
