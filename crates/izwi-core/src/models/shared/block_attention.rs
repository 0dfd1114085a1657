//! Attention of many query rows (an encoder's frames) on the CPU, a block of rows of
//! one head at a time: the block's scores (`rows × keys`) are computed with gemm, put
//! through softmax and multiplied by the values while they are still in cache. Through
//! candle the same attention writes every head's full `n × m` score matrix to memory
//! (72 MB per Whisper encoder layer), reads it back for softmax, writes the
//! probabilities and reads them again; those passes and their page faults took half
//! of the encoder's time (docs/speed.md).

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::bf16_weights::{self, PackedBf16};
use super::cpu_slice::cpu_slice;
use super::vector_math;

/// Query rows per block: the block's scores over 1500 keys (192 KB) stay in L2.
const BLOCK_ROWS: usize = 32;

/// Whether [`block_attention`] runs on this tensor's device and dtype.
pub fn runs_on(q: &Tensor) -> bool {
    q.device().is_cpu() && q.dtype() == DType::F32
}

/// `q` `[n, heads, d]` over keys and values `[heads, m, d]`, every key visible →
/// `[n, heads * d]`. CPU and f32 only (see [`runs_on`]).
pub fn block_attention(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    q.contiguous()?.apply_op3_no_bwd(
        &k.contiguous()?,
        &v.contiguous()?,
        &BlockAttention { bf16: false },
    )
}

/// [`block_attention`] with both products in bf16 on CPUs with AVX512-BF16 (each
/// head's keys and values packed once, queries and probabilities rounded to bf16 as
/// they enter, sums and softmax in f32); elsewhere [`block_attention`] itself.
pub fn block_attention_bf16(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    if !bf16_weights::available() {
        return block_attention(q, k, v);
    }
    q.contiguous()?.apply_op3_no_bwd(
        &k.contiguous()?,
        &v.contiguous()?,
        &BlockAttention { bf16: true },
    )
}

/// The op: f32 (gemm) or bf16 products.
struct BlockAttention {
    bf16: bool,
}

impl CustomOp3 for BlockAttention {
    fn name(&self) -> &'static str {
        if self.bf16 {
            "izwi-block-attention-bf16"
        } else {
            "izwi-block-attention"
        }
    }

    fn cpu_fwd(
        &self,
        q: &CpuStorage,
        q_layout: &Layout,
        k: &CpuStorage,
        k_layout: &Layout,
        v: &CpuStorage,
        v_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (n, heads, d) = q_layout.shape().dims3()?;
        let (k_heads, m, k_d) = k_layout.shape().dims3()?;
        if k_heads != heads || k_d != d || v_layout.shape() != k_layout.shape() {
            candle_core::bail!(
                "block attention: q {:?}, k {:?}, v {:?}",
                q_layout.shape(),
                k_layout.shape(),
                v_layout.shape()
            );
        }
        let q = cpu_slice::<f32>(q, q_layout)?;
        let k = cpu_slice::<f32>(k, k_layout)?;
        let v = cpu_slice::<f32>(v, v_layout)?;
        let mut out = vec![0f32; n * heads * d];
        if self.bf16 {
            attend_blocks_bf16(q, k, v, n, m, heads, d, &mut out)?;
        } else {
            attend_blocks(q, k, v, n, m, heads, d, &mut out);
        }
        Ok((CpuStorage::F32(out), Shape::from((n, heads * d))))
    }
}

/// A pointer that may cross threads: every task writes its own rows and head columns.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: the tasks of attend_blocks write disjoint elements (their block's rows × their
// head's columns) and the buffer outlives them.
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    /// Through a method, so closures capture the whole (Sync) wrapper, not its field.
    fn at(self, offset: usize) -> *mut f32 {
        // SAFETY: callers stay inside the buffer (see attend_blocks).
        unsafe { self.0.add(offset) }
    }
}

#[allow(clippy::too_many_arguments)]
fn attend_blocks(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    m: usize,
    heads: usize,
    d: usize,
    out: &mut [f32],
) {
    assert!(q.len() >= n * heads * d && out.len() >= n * heads * d);
    assert!(k.len() >= heads * m * d && v.len() >= heads * m * d);
    let scale = 1.0 / (d as f32).sqrt();
    let blocks = n.div_ceil(BLOCK_ROWS);
    let row_stride = (heads * d) as isize;
    let dst = Out(out.as_mut_ptr());
    (0..heads * blocks)
        .into_par_iter()
        .for_each_init(Vec::new, |scores: &mut Vec<f32>, task| {
            let (head, block) = (task / blocks, task % blocks);
            let first = block * BLOCK_ROWS;
            let rows = BLOCK_ROWS.min(n - first);
            scores.resize(rows * m, 0.0);
            let q_block = q[(first * heads + head) * d..].as_ptr();
            let k_head = k[head * m * d..].as_ptr();
            let v_head = v[head * m * d..].as_ptr();
            // SAFETY: every matrix lies inside its slice (checked above: rows of this
            // block, keys of this head), and this task alone writes its block of `out`.
            unsafe {
                // scores = scale · q_block · k_headᵀ
                gemm(
                    rows,
                    m,
                    d,
                    scores.as_mut_ptr(),
                    1,
                    m as isize,
                    false,
                    q_block,
                    1,
                    row_stride,
                    k_head,
                    d as isize,
                    1,
                    0.0,
                    scale,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
            for row in scores.chunks_mut(m) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let inverse = 1.0 / vector_math::exp_shifted_sum_in_place(row, max);
                for p in row.iter_mut() {
                    *p *= inverse;
                }
            }
            // SAFETY: as above; the destination is this block's rows, this head's columns.
            unsafe {
                gemm(
                    rows,
                    d,
                    m,
                    dst.at((first * heads + head) * d),
                    1,
                    row_stride,
                    false,
                    scores.as_ptr(),
                    1,
                    m as isize,
                    v_head,
                    1,
                    d as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
        });
}

/// [`attend_blocks`] with both products in bf16: per head, in parallel over heads,
/// each head's output made whole and then put in its columns.
#[allow(clippy::too_many_arguments)]
fn attend_blocks_bf16(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    m: usize,
    heads: usize,
    d: usize,
    out: &mut [f32],
) -> Result<()> {
    let scale = 1.0 / (d as f32).sqrt();
    let per_head = (0..heads)
        .into_par_iter()
        .map(|head| -> Result<Vec<f32>> {
            let (k_head, v_head) = (&k[head * m * d..], &v[head * m * d..]);
            let keys = PackedBf16::pack_fn(m, d, |key, i| k_head[key * d + i])?;
            let values = PackedBf16::pack_fn(d, m, |j, key| v_head[key * d + j])?;
            let (half_d, half_m) = (d.div_ceil(2), m.div_ceil(2));
            let mut queries = vec![0u32; BLOCK_ROWS * half_d];
            let mut scores = vec![0f32; BLOCK_ROWS * m];
            let mut probabilities = vec![0u32; BLOCK_ROWS * half_m];
            let mut attended = vec![0f32; n * d];
            for first in (0..n).step_by(BLOCK_ROWS) {
                let rows = BLOCK_ROWS.min(n - first);
                for (r, pairs) in queries.chunks_exact_mut(half_d).take(rows).enumerate() {
                    let at = ((first + r) * heads + head) * d;
                    bf16_weights::to_pairs(&q[at..at + d], pairs)?;
                }
                keys.product_pairs(&queries, rows, &mut scores, m)?;
                for (row, pairs) in scores
                    .chunks_exact_mut(m)
                    .zip(probabilities.chunks_exact_mut(half_m))
                    .take(rows)
                {
                    row.iter_mut().for_each(|s| *s *= scale);
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let inverse = 1.0 / vector_math::exp_shifted_sum_in_place(row, max);
                    row.iter_mut().for_each(|p| *p *= inverse);
                    bf16_weights::to_pairs(row, pairs)?;
                }
                values.product_pairs(&probabilities, rows, &mut attended[first * d..], d)?;
            }
            Ok(attended)
        })
        .collect::<Result<Vec<_>>>()?;
    for (head, attended) in per_head.iter().enumerate() {
        for (row, values) in attended.chunks_exact(d).enumerate() {
            let at = (row * heads + head) * d;
            out[at..at + d].copy_from_slice(values);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// Against the f32 kernel: the bf16 rounding of queries, keys, values and
    /// probabilities moves the output by a few parts in a thousand of its spread.
    #[test]
    fn bf16_stays_near_f32_on_odd_shapes() -> Result<()> {
        if !bf16_weights::available() {
            eprintln!("no AVX512-BF16 on this CPU: the bf16 attention is not used here");
            return Ok(());
        }
        let dev = Device::Cpu;
        for (n, heads, m, d) in [
            (1, 1, 1, 1),
            (33, 3, 50, 7),
            (100, 6, 1500, 64),
            (64, 2, 31, 64),
        ] {
            let q = Tensor::randn(0f32, 1.0, (n, heads, d), &dev)?;
            let k = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let v = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let ours = block_attention_bf16(&q, &k, &v)?;
            let exact = block_attention(&q, &k, &v)?;
            let spread = exact.abs()?.max_all()?.to_scalar::<f32>()?;
            let diff = crate::models::shared::max_abs_diff(&ours, &exact)?;
            assert!(
                diff < 0.02 * spread,
                "{n}x{heads}x{m}x{d}: {diff} of {spread}"
            );
        }
        Ok(())
    }

    #[test]
    fn matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for (n, heads, m, d) in [
            (1, 1, 1, 1),
            (33, 3, 50, 7),
            (100, 8, 1500, 64),
            (64, 2, 31, 64),
        ] {
            let q = Tensor::randn(0f32, 1.0, (n, heads, d), &dev)?;
            let k = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let v = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let ours = block_attention(&q, &k, &v)?;
            let qt = q.transpose(0, 1)?.contiguous()?;
            let scores = (qt.matmul(&k.t()?)? / (d as f64).sqrt())?;
            let theirs = candle_nn::ops::softmax_last_dim(&scores)?
                .matmul(&v)?
                .transpose(0, 1)?
                .reshape((n, heads * d))?;
            let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
            assert!(diff < 1e-5, "{n}x{heads}x{m}x{d}: {diff}");
        }
        Ok(())
    }
}
