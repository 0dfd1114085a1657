//! `x · Wᵀ` for a few f32 rows against a large f32 weight on the CPU, the weight's rows
//! split over threads. A decode step reads every weight once for a handful of rows, so
//! it is bound by memory; candle's matmul hands such a product (`W · xᵀ`, one column)
//! to gemm's single-threaded matrix-vector path, which leaves the other cores idle.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};

use super::few_rows::few_rows_matmul;
#[cfg(target_arch = "x86_64")]
use super::few_rows::horizontal_sum;

/// Outputs computed by one parallel task.
const OUTPUTS_PER_TASK: usize = 128;
/// Input rows handled together: each weight vector loaded once serves every row of a
/// pass.
const ROWS_PER_PASS: usize = 4;
/// Weight rows handled together where there are whole passes of input rows.
const TILE_WEIGHTS: usize = 3;
/// Weights below this many values are multiplied faster by one thread than handed out.
const MIN_WEIGHT: usize = 1 << 18;

/// Whether [`matmul_f32_rows`] is worth running for these operands.
pub fn runs_on(x: &Tensor, weight: &Tensor) -> bool {
    x.device().is_cpu()
        && x.dtype() == DType::F32
        && weight.dtype() == DType::F32
        && weight.elem_count() >= MIN_WEIGHT
        && rayon::current_num_threads() > 1
}

/// `x` `[rows, in]` times `weight` `[out, in]` transposed → `[rows, out]`, all f32.
pub fn matmul_f32_rows(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    x.contiguous()?
        .apply_op2_no_bwd(&weight.contiguous()?, &F32RowsMatmul)
}

struct F32RowsMatmul;

impl CustomOp2 for F32RowsMatmul {
    fn name(&self) -> &'static str {
        "izwi-f32-rows-matmul"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        w: &CpuStorage,
        w_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        few_rows_matmul::<f32>(
            "f32 row matmul",
            (x, x_layout),
            (w, w_layout),
            OUTPUTS_PER_TASK,
            products,
        )
    }
}

/// `block[o * rows + r]` = weight row `o` of `w` (`[count, inputs]`) · row `r` of `x`.
fn products(w: &[f32], x: &[f32], inputs: usize, rows: usize, block: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the kernels are compiled for.
        unsafe { products_avx2(w, x, inputs, rows, block) };
        return;
    }
    products_scalar(w, x, inputs, rows, block);
}

/// [`products`]: whole tiles of TILE_WEIGHTS weight rows by ROWS_PER_PASS input rows
/// first, where each load feeds several FMAs (1.5–2× the FMAs a second of passes
/// alone gives, from 4 rows on), then the rest a weight row at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn products_avx2(w: &[f32], x: &[f32], inputs: usize, rows: usize, block: &mut [f32]) {
    let count = w.len() / inputs;
    let tiled_rows = if rows >= ROWS_PER_PASS {
        rows - rows % ROWS_PER_PASS
    } else {
        0
    };
    let tiled_weights = count - count % TILE_WEIGHTS;
    for o in (0..tiled_weights).step_by(TILE_WEIGHTS) {
        let weights = &w[o * inputs..(o + TILE_WEIGHTS) * inputs];
        for r in (0..tiled_rows).step_by(ROWS_PER_PASS) {
            let x = &x[r * inputs..(r + ROWS_PER_PASS) * inputs];
            for (k, sums) in tile_avx2(weights, x, inputs).iter().enumerate() {
                let at = (o + k) * rows + r;
                block[at..at + ROWS_PER_PASS].copy_from_slice(sums);
            }
        }
    }
    for (o, weight) in w.chunks_exact(inputs).enumerate() {
        let first = if o < tiled_weights { tiled_rows } else { 0 };
        for r in (first..rows).step_by(ROWS_PER_PASS) {
            let pass = ROWS_PER_PASS.min(rows - r);
            let x = &x[r * inputs..(r + pass) * inputs];
            let sums = &mut block[o * rows + r..o * rows + r + pass];
            match pass {
                1 => pass_avx2::<1>(weight, x, sums),
                2 => pass_avx2::<2>(weight, x, sums),
                3 => pass_avx2::<3>(weight, x, sums),
                _ => pass_avx2::<4>(weight, x, sums),
            }
        }
    }
}

/// [`products`] without SIMD.
fn products_scalar(w: &[f32], x: &[f32], inputs: usize, rows: usize, block: &mut [f32]) {
    for (o, w) in w.chunks_exact(inputs).enumerate() {
        for (r, x) in x.chunks_exact(inputs).enumerate() {
            block[o * rows + r] = w.iter().zip(x).map(|(w, x)| w * x).sum();
        }
    }
}

/// One weight row (`weight`, `[inputs]`) against `R` input rows (`x`, `[R, inputs]`):
/// `sums[r]` = weight · row `r`. Two accumulators per row, so consecutive FMAs do not
/// wait on each other.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pass_avx2<const R: usize>(weight: &[f32], x: &[f32], sums: &mut [f32]) {
    use std::arch::x86_64::*;
    let inputs = weight.len();
    let end = (inputs / 16) * 16;
    let wp = weight.as_ptr();
    let xp = x.as_ptr();
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for i in (0..end).step_by(16) {
        // SAFETY: i + 16 ≤ inputs; input row r starts at r * inputs, inside `x` (R
        // rows).
        let w0 = _mm256_loadu_ps(wp.add(i));
        let w1 = _mm256_loadu_ps(wp.add(i + 8));
        for (r, acc) in acc.iter_mut().enumerate() {
            let row = xp.add(r * inputs + i);
            acc[0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(row), acc[0]);
            acc[1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(row.add(8)), acc[1]);
        }
    }
    for r in 0..R {
        let x = &x[r * inputs..(r + 1) * inputs];
        let tail: f32 = (end..inputs).map(|i| weight[i] * x[i]).sum();
        sums[r] = horizontal_sum(_mm256_add_ps(acc[r][0], acc[r][1])) + tail;
    }
}

/// TILE_WEIGHTS weight rows (`weights`, `[TILE_WEIGHTS, inputs]`) against
/// ROWS_PER_PASS input rows (`x`): `[k][r]` = weight row k · input row r. Twelve
/// accumulators, three weight and one input register: every input vector loaded serves
/// three FMAs, every weight vector four.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(
    weights: &[f32],
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
        // SAFETY: i + 8 ≤ inputs; weight row k starts at k * inputs and
        // input row r at r * inputs, inside their slices.
        let w = [
            _mm256_loadu_ps(wp.add(i)),
            _mm256_loadu_ps(wp.add(inputs + i)),
            _mm256_loadu_ps(wp.add(2 * inputs + i)),
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
            let tail: f32 = (end..inputs).map(|i| weight[i] * x[i]).sum();
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
    fn matches_candles_matmul_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for (rows, inputs, outputs) in [
            (0, 64, 5),
            (2, 0, 3),
            (1, 1, 1),
            (2, 9, 4),
            (1, 2048, 8193),
            (4, 1024, 1536),
            (3, 17, 300),
            (5, 23, 129),
            (9, 33, 7),
            (31, 64, 257),
        ] {
            let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?;
            let ours = matmul_f32_rows(&x, &w)?;
            let theirs = x.matmul(&w.t()?)?;
            assert_eq!(ours.dims(), theirs.dims());
            if rows == 0 {
                continue;
            }
            let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
            // Sums of `inputs` products differ in their last bits by order.
            let tolerance = 2e-6 * inputs as f32;
            assert!(diff <= tolerance, "{rows}x{inputs}x{outputs}: {diff}");
        }
        Ok(())
    }

    #[test]
    fn the_scalar_path_gives_what_the_simd_path_gives() -> Result<()> {
        let dev = Device::Cpu;
        for (rows, inputs, outputs) in [(1, 1, 1), (3, 17, 5), (4, 40, 9), (6, 33, 2), (9, 19, 10)]
        {
            let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?;
            let (x, w) = (x.flatten_all()?.to_vec1()?, w.flatten_all()?.to_vec1()?);
            let mut simd = vec![0f32; rows * outputs];
            let mut scalar = vec![0f32; rows * outputs];
            products(&w, &x, inputs, rows, &mut simd);
            products_scalar(&w, &x, inputs, rows, &mut scalar);
            for (a, b) in simd.iter().zip(&scalar) {
                assert!((a - b).abs() < 1e-4 * inputs as f32, "{a} {b}");
            }
        }
        Ok(())
    }

    #[test]
    fn large_weights_only() -> Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::zeros((1, 64), DType::F32, &dev)?;
        let small = Tensor::zeros((64, 64), DType::F32, &dev)?;
        let large = Tensor::zeros((MIN_WEIGHT / 64, 64), DType::F32, &dev)?;
        assert!(!runs_on(&x, &small));
        assert_eq!(runs_on(&x, &large), rayon::current_num_threads() > 1);
        assert!(!runs_on(&x, &large.to_dtype(DType::F16)?));
        Ok(())
    }
}
