//! `x · Wᵀ` for a few f32 rows against a weight kept in a 16-bit float (f16 or bf16) on
//! the CPU. Whisper's checkpoints store f16, Qwen3-TTS's bf16; converted to f32 at load,
//! every decode step streams twice the bytes it needs (a decoder's weights are read
//! whole for a handful of rows, so the step is bound by memory, not arithmetic). Kept
//! in 16 bits and widened in registers, the arithmetic is the same f32 arithmetic
//! (f16 → f32 and bf16 → f32 are exact) on half the memory traffic. bf16 `Linear`
//! weights come here only on CPUs without AVX512-BF16; elsewhere they are packed for
//! `bf16_weights` (see `Linear::with_half_weight`).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
use super::few_rows::few_rows_matmul;
#[cfg(target_arch = "x86_64")]
use super::few_rows::horizontal_sum;

/// Outputs computed by one parallel task (a multiple of TILE_WEIGHTS).
const OUTPUTS_PER_TASK: usize = 255;

/// `t` (f16 or bf16) as f32 on the CPU, the work split over threads (f16 8 values per
/// instruction where the CPU has F16C). Loading a model stored in 16 bits converts
/// every weight; candle's conversion goes one value at a time.
pub fn widen(t: &Tensor) -> Result<Tensor> {
    if t.device().is_cpu() && matches!(t.dtype(), DType::F16 | DType::BF16) {
        t.contiguous()?.apply_op1_no_bwd(&Widen)
    } else {
        t.to_dtype(DType::F32)
    }
}

struct Widen;

impl candle_core::CustomOp1 for Widen {
    fn name(&self) -> &'static str {
        "izwi-widen-16"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let out = match storage {
            CpuStorage::BF16(_) => {
                let x = cpu_slice::<bf16>(storage, layout)?;
                let mut out = vec![0f32; x.len()];
                out.par_chunks_mut(1 << 16)
                    .zip(x.par_chunks(1 << 16))
                    .for_each(|(out, x)| {
                        // A bf16 is the top half of an f32.
                        let bits: &[u16] = x.reinterpret_cast();
                        for (o, &v) in out.iter_mut().zip(bits) {
                            *o = f32::from_bits(u32::from(v) << 16);
                        }
                    });
                out
            }
            _ => {
                let x = cpu_slice::<f16>(storage, layout)?;
                let mut out = vec![0f32; x.len()];
                out.par_chunks_mut(1 << 16)
                    .zip(x.par_chunks(1 << 16))
                    .for_each(|(out, x)| widen_slice(x, out));
                out
            }
        };
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

/// `t` (f32) as `dtype` (f16 or bf16) on the CPU, rounding to nearest even as candle's
/// conversion does, the work split over threads (f16 8 values per instruction where the
/// CPU has F16C). Keeping a decoder's weights in 16 bits narrows them back after
/// loading; candle converts one value at a time.
pub fn narrow(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if !(t.device().is_cpu() && t.dtype() == DType::F32) {
        return t.to_dtype(dtype);
    }
    match dtype {
        DType::F16 => t.contiguous()?.apply_op1_no_bwd(&Narrow),
        DType::BF16 => t.contiguous()?.apply_op1_no_bwd(&NarrowBf16),
        other => t.to_dtype(other),
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

struct NarrowBf16;

impl candle_core::CustomOp1 for NarrowBf16 {
    fn name(&self) -> &'static str {
        "izwi-narrow-f32-bf16"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = cpu_slice::<f32>(storage, layout)?;
        let mut out = vec![bf16::ZERO; x.len()];
        out.par_chunks_mut(1 << 16)
            .zip(x.par_chunks(1 << 16))
            .for_each(|(out, x)| {
                for (o, &v) in out.iter_mut().zip(x) {
                    *o = bf16::from_f32(v);
                }
            });
        Ok((CpuStorage::BF16(out), layout.shape().clone()))
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
    x.device().is_cpu()
        && x.dtype() == DType::F32
        && matches!(weight.dtype(), DType::F16 | DType::BF16)
}

/// `x` `[rows, in]` (f32) times `weight` `[out, in]` (f16 or bf16) transposed →
/// `[rows, out]` f32.
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
        let name = "half-weight matmul";
        let (x, w) = ((x, x_layout), (w, w_layout));
        if matches!(w.0, CpuStorage::BF16(_)) {
            few_rows_matmul::<bf16>(name, x, w, OUTPUTS_PER_TASK, |w, x, inputs, rows, block| {
                products::<true>(w.reinterpret_cast(), x, inputs, rows, block)
            })
        } else {
            few_rows_matmul::<f16>(name, x, w, OUTPUTS_PER_TASK, |w, x, inputs, rows, block| {
                products::<false>(w.reinterpret_cast(), x, inputs, rows, block)
            })
        }
    }
}

/// Input rows handled together: each weight vector widened once serves every input
/// row of a pass.
const ROWS_PER_PASS: usize = 4;
/// bf16 weight rows handled together where there are whole passes of input rows (a
/// batch of four or more): each input vector loaded then serves three weight rows,
/// which ran 1.15–1.3× the multiply-adds per second of passes of one weight row at 8
/// rows on an AMD EPYC (Zen 4), with the weights coming from memory.
const TILE_WEIGHTS: usize = 3;

/// A 16-bit weight's bits as f32: bf16 where `BF16`, f16 otherwise.
fn scalar<const BF16: bool>(bits: u16) -> f32 {
    if BF16 {
        bf16::from_bits(bits).to_f32()
    } else {
        f16::from_bits(bits).to_f32()
    }
}

/// `block[o * rows + r]` = weight row `o` of `w` (`[count, inputs]`, the bits of bf16
/// where `BF16`, of f16 otherwise) · row `r` of `x`.
fn products<const BF16: bool>(w: &[u16], x: &[f32], inputs: usize, rows: usize, block: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU has the features the kernels are compiled for.
        unsafe { products_avx2::<BF16>(w, x, inputs, rows, block) };
        return;
    }
    for (o, w) in w.chunks_exact(inputs).enumerate() {
        for (r, x) in x.chunks_exact(inputs).enumerate() {
            block[o * rows + r] = w.iter().zip(x).map(|(&w, x)| scalar::<BF16>(w) * x).sum();
        }
    }
}

/// [`products`]: for bf16, whole tiles of TILE_WEIGHTS weight rows by ROWS_PER_PASS
/// input rows first; then the rest a weight row at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn products_avx2<const BF16: bool>(
    w: &[u16],
    x: &[f32],
    inputs: usize,
    rows: usize,
    block: &mut [f32],
) {
    let count = w.len() / inputs;
    let tiled_rows = rows - rows % ROWS_PER_PASS;
    // f16 (Whisper) keeps passes of one weight row: reading several side by side
    // halved the bandwidth from memory at its few rows on an AMD EPYC (docs/speed.md).
    let tiled_weights = if BF16 {
        count - count % TILE_WEIGHTS
    } else {
        0
    };
    for o in (0..tiled_weights).step_by(TILE_WEIGHTS) {
        let weights = &w[o * inputs..(o + TILE_WEIGHTS) * inputs];
        for r in (0..tiled_rows).step_by(ROWS_PER_PASS) {
            let x = &x[r * inputs..(r + ROWS_PER_PASS) * inputs];
            for (k, sums) in tile_avx2::<BF16>(weights, x, inputs).iter().enumerate() {
                let at = (o + k) * rows + r;
                block[at..at + ROWS_PER_PASS].copy_from_slice(sums);
            }
        }
    }
    for (o, weights) in w.chunks_exact(inputs).enumerate() {
        let first = if o < tiled_weights { tiled_rows } else { 0 };
        for r in (first..rows).step_by(ROWS_PER_PASS) {
            let pass = ROWS_PER_PASS.min(rows - r);
            let x = &x[r * inputs..(r + pass) * inputs];
            let sums = &mut block[o * rows + r..o * rows + r + pass];
            match pass {
                1 => pass_avx2::<1, BF16>(weights, x, sums),
                2 => pass_avx2::<2, BF16>(weights, x, sums),
                3 => pass_avx2::<3, BF16>(weights, x, sums),
                _ => pass_avx2::<4, BF16>(weights, x, sums),
            }
        }
    }
}

/// Eight 16-bit weights at `p` as f32.
///
/// # Safety
/// The CPU must have AVX2 and F16C; `p` must point at eight readable values.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,f16c")]
unsafe fn widen8<const BF16: bool>(p: *const u16) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let bits = _mm_loadu_si128(p as *const __m128i);
    if BF16 {
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(bits)))
    } else {
        _mm256_cvtph_ps(bits)
    }
}

/// One weight row (`weight`, `[inputs]`) against `R` input rows (`x`, `[R, inputs]`):
/// `sums[r]` = weight · row `r`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn pass_avx2<const R: usize, const BF16: bool>(weight: &[u16], x: &[f32], sums: &mut [f32]) {
    use std::arch::x86_64::*;
    let inputs = weight.len();
    let chunks = inputs / 8;
    let wp = weight.as_ptr();
    let xp = x.as_ptr();
    let mut acc = [_mm256_setzero_ps(); R];
    for c in 0..chunks {
        let i = c * 8;
        // SAFETY: i + 8 ≤ inputs; input row r starts at r * inputs, inside `x` (R rows).
        let w = widen8::<BF16>(wp.add(i));
        for (r, acc) in acc.iter_mut().enumerate() {
            *acc = _mm256_fmadd_ps(w, _mm256_loadu_ps(xp.add(r * inputs + i)), *acc);
        }
    }
    for r in 0..R {
        let x = &x[r * inputs..(r + 1) * inputs];
        let tail: f32 = (chunks * 8..inputs)
            .map(|i| scalar::<BF16>(weight[i]) * x[i])
            .sum();
        sums[r] = horizontal_sum(acc[r]) + tail;
    }
}

/// TILE_WEIGHTS weight rows (`weights`, `[TILE_WEIGHTS, inputs]`) against
/// ROWS_PER_PASS input rows (`x`): `[k][r]` = weight row k · input row r.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_avx2<const BF16: bool>(
    weights: &[u16],
    x: &[f32],
    inputs: usize,
) -> [[f32; ROWS_PER_PASS]; TILE_WEIGHTS] {
    use std::arch::x86_64::*;
    let end = (inputs / 8) * 8;
    let wp = weights.as_ptr();
    let xp = x.as_ptr();
    // acc[r][k]: input row r · weight row k.
    let mut acc = [[_mm256_setzero_ps(); TILE_WEIGHTS]; ROWS_PER_PASS];
    for i in (0..end).step_by(8) {
        // SAFETY: i + 8 ≤ inputs; weight row k starts at k * inputs and input row r at
        // r * inputs, inside their slices.
        let w = [
            widen8::<BF16>(wp.add(i)),
            widen8::<BF16>(wp.add(inputs + i)),
            widen8::<BF16>(wp.add(2 * inputs + i)),
        ];
        for (r, acc) in acc.iter_mut().enumerate() {
            let v = _mm256_loadu_ps(xp.add(r * inputs + i));
            for (a, w) in acc.iter_mut().zip(w) {
                *a = _mm256_fmadd_ps(w, v, *a);
            }
        }
    }
    let mut sums = [[0f32; ROWS_PER_PASS]; TILE_WEIGHTS];
    for (r, (acc, x)) in acc.iter().zip(x.chunks_exact(inputs)).enumerate() {
        for (k, (&a, weight)) in acc.iter().zip(weights.chunks_exact(inputs)).enumerate() {
            let tail: f32 = (end..inputs)
                .map(|i| scalar::<BF16>(weight[i]) * x[i])
                .sum();
            sums[k][r] = horizontal_sum(a) + tail;
        }
    }
    sums
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
                let ours = narrow(&t, DType::F16)?.to_vec1::<f16>()?;
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
    fn bf16_widening_and_narrowing_equal_candles_conversions() -> Result<()> {
        for len in [1usize, 7, 8, 9, 70_001] {
            let t = (Tensor::randn(0f32, 3.0, len, &Device::Cpu)? * 1e4)?;
            let ours = narrow(&t, DType::BF16)?.to_vec1::<bf16>()?;
            let theirs = t.to_dtype(DType::BF16)?.to_vec1::<bf16>()?;
            assert!(
                ours.iter()
                    .zip(&theirs)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{len}"
            );
            let narrowed = t.to_dtype(DType::BF16)?;
            let ours = widen(&narrowed)?.to_vec1::<f32>()?;
            let theirs = narrowed.to_dtype(DType::F32)?.to_vec1::<f32>()?;
            assert_eq!(ours, theirs, "{len}");
        }
        Ok(())
    }

    #[test]
    fn matches_candle_with_the_weight_widened_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for dtype in [DType::F16, DType::BF16] {
            for (rows, inputs, outputs) in [
                (0, 64, 5),
                (2, 0, 3),
                (1, 1, 1),
                (2, 9, 4),
                (3, 512, 51865),
                (4, 8, 5),
                (5, 17, 300),
                (8, 1024, 1000),
                (9, 23, 7),
                (33, 64, 257),
                (64, 300, 70),
            ] {
                let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
                let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?.to_dtype(dtype)?;
                let ours = matmul_half_weight(&x, &w)?;
                let theirs = x.matmul(&w.to_dtype(DType::F32)?.t()?)?;
                assert_eq!(ours.dims(), theirs.dims());
                if rows == 0 {
                    continue;
                }
                let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
                // Sums of `inputs` products differ in their last bits by order (an
                // empty product is zero).
                let tolerance = 2e-6 * inputs as f32;
                assert!(
                    diff <= tolerance,
                    "{dtype:?} {rows}x{inputs}x{outputs}: {diff}"
                );
            }
        }
        Ok(())
    }
}
