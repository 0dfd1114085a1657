//! The frame our few-row CPU matmuls share (f32_rows.rs for f32 weights,
//! half_weights.rs for f16 ones): `x` `[rows, in]` (f32) times a weight `[out, in]`
//! transposed → `[rows, out]` f32, the weight's rows split over threads in tasks of a
//! few hundred outputs, each task's products from the kernel given.

use candle_core::{CpuStorage, Layout, Result, Shape, WithDType};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;

/// `kernel(w, x, inputs, rows, block)` fills `block[o * rows + r]` with weight row `o`
/// of `w` (a task's `[count, inputs]`) · row `r` of `x`.
pub fn few_rows_matmul<W: WithDType>(
    name: &str,
    (x, x_layout): (&CpuStorage, &Layout),
    (w, w_layout): (&CpuStorage, &Layout),
    outputs_per_task: usize,
    kernel: impl Fn(&[W], &[f32], usize, usize, &mut [f32]) + Sync,
) -> Result<(CpuStorage, Shape)> {
    let (rows, inputs) = x_layout.shape().dims2()?;
    let (outputs, w_inputs) = w_layout.shape().dims2()?;
    if inputs != w_inputs {
        candle_core::bail!(
            "{name}: x {:?}, weight {:?}",
            x_layout.shape(),
            w_layout.shape()
        );
    }
    let shape = Shape::from((rows, outputs));
    if rows == 0 || outputs == 0 || inputs == 0 {
        // Nothing to multiply (an engine step with no row for this layer): zeros.
        return Ok((CpuStorage::F32(vec![0f32; rows * outputs]), shape));
    }
    let x = cpu_slice::<f32>(x, x_layout)?;
    let w = cpu_slice::<W>(w, w_layout)?;
    // Tasks own output columns; each writes its columns of every row afterwards.
    let columns: Vec<Vec<f32>> = (0..outputs.div_ceil(outputs_per_task))
        .into_par_iter()
        .map(|task| {
            let first = task * outputs_per_task;
            let count = outputs_per_task.min(outputs - first);
            let mut block = vec![0f32; count * rows];
            kernel(
                &w[first * inputs..(first + count) * inputs],
                x,
                inputs,
                rows,
                &mut block,
            );
            block
        })
        .collect();
    let mut out = vec![0f32; rows * outputs];
    for (task, block) in columns.iter().enumerate() {
        let first = task * outputs_per_task;
        for (o, values) in block.chunks(rows).enumerate() {
            for (r, &value) in values.iter().enumerate() {
                out[r * outputs + first + o] = value;
            }
        }
    }
    Ok((CpuStorage::F32(out), shape))
}

/// The sum of a vector's eight lanes.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn horizontal_sum(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1)))
}
