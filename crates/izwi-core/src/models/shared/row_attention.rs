//! Attention of a few query rows over many keys, on the CPU, without matmuls: the
//! decode step's shape (one new token per sequence; Whisper's cross-attention over
//! 1500 audio frames, a sequence's context in the paged cache). Through candle that
//! shape is a batched matmul of one row per head: one small gemm call per head and
//! sequence, each with its own thread hand-off, plus copies into matmul layout. Here
//! every (row, head) is one task that reads its keys and values once, in place.
//!
//! Keys and values are rows of `head_dim` values, f32 or f16 (Whisper's cross-attention
//! keeps its 1500 frames' keys and values in f16 with an f16 decoder: the decode step
//! reads them whole every step, so half the bytes is most of the gain). Where the row
//! of key `j` for head `h` sits is given by [`KeyRows`]: `h · head_stride + rows[j]`
//! elements into the buffer, so the same kernel reads a `[heads, keys, head_dim]`
//! tensor and the paged cache's `[slots, kv_heads, head_dim]` blocks.

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor};
use half::f16;
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
use super::vector_math;

/// The candle op over `q` (`[n, heads, head_dim]`, f32) and key/value buffers of any
/// shape (read through `sequences`), both f32 or both f16; gives `[n, heads * head_dim]`
/// f32. CPU only: callers check [`RowAttention::runs_on`] and keep candle's ops for
/// other devices.
pub struct RowAttention {
    /// Per sequence: its head stride and key rows.
    pub sequences: Vec<(usize, Vec<usize>)>,
    /// The sequence of each query row.
    pub seq_of_row: Vec<usize>,
    pub kv_heads: usize,
}

impl RowAttention {
    pub fn runs_on(q: &Tensor) -> bool {
        q.device().is_cpu() && q.dtype() == DType::F32
    }

    pub fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        q.contiguous()?
            .apply_op3_no_bwd(&k.contiguous()?, &v.contiguous()?, self)
    }

    fn run<T: KvElement>(
        &self,
        q: &[f32],
        q_shape: &Shape,
        k: &[T],
        v: &[T],
    ) -> Result<(CpuStorage, Shape)> {
        let (n, heads, head_dim) = q_shape.dims3()?;
        if self.seq_of_row.len() != n || self.seq_of_row.iter().any(|&s| s >= self.sequences.len())
        {
            candle_core::bail!(
                "row attention: {n} query rows, {} row owners",
                self.seq_of_row.len()
            );
        }
        let needed = |(stride, rows): &(usize, Vec<usize>)| {
            rows.iter().map(|r| r + head_dim).max().unwrap_or(0) + (self.kv_heads - 1) * stride
        };
        if self
            .sequences
            .iter()
            .any(|s| needed(s) > k.len().min(v.len()))
        {
            candle_core::bail!("row attention: a key row lies outside the key buffer");
        }
        let sequences: Vec<KeyRows<'_>> = self
            .sequences
            .iter()
            .map(|(head_stride, rows)| KeyRows {
                head_stride: *head_stride,
                rows,
            })
            .collect();
        let mut out = vec![0f32; n * heads * head_dim];
        attend_rows(
            q,
            k,
            v,
            &sequences,
            &self.seq_of_row,
            heads,
            self.kv_heads,
            head_dim,
            &mut out,
        );
        Ok((CpuStorage::F32(out), Shape::from((n, heads * head_dim))))
    }
}

impl CustomOp3 for RowAttention {
    fn name(&self) -> &'static str {
        "izwi-row-attention"
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
        let q_values = cpu_slice::<f32>(q, q_layout)?;
        let shape = q_layout.shape();
        match (k, v) {
            (CpuStorage::F16(_), CpuStorage::F16(_)) => self.run(
                q_values,
                shape,
                cpu_slice::<f16>(k, k_layout)?,
                cpu_slice::<f16>(v, v_layout)?,
            ),
            _ => self.run(
                q_values,
                shape,
                cpu_slice::<f32>(k, k_layout)?,
                cpu_slice::<f32>(v, v_layout)?,
            ),
        }
    }
}

/// Where the keys (and values, laid out alike) of one sequence are.
pub struct KeyRows<'a> {
    /// Offset between one key head and the next.
    pub head_stride: usize,
    /// Offset of each key's row for head 0, in attention order.
    pub rows: &'a [usize],
}

/// What a key or value is stored as; the arithmetic is f32 either way.
pub trait KvElement: Copy + Send + Sync {
    /// `query · row`.
    fn dot(query: &[f32], row: &[Self]) -> f32;
    /// `out += w · row`.
    fn add_scaled(out: &mut [f32], w: f32, row: &[Self]);
}

impl KvElement for f32 {
    /// In eight lanes, so it vectorises.
    #[inline(always)]
    fn dot(query: &[f32], row: &[f32]) -> f32 {
        let mut lanes = [0f32; 8];
        let (a_chunks, b_chunks) = (query.chunks_exact(8), row.chunks_exact(8));
        let rest: f32 = a_chunks
            .remainder()
            .iter()
            .zip(b_chunks.remainder())
            .map(|(x, y)| x * y)
            .sum();
        for (x, y) in a_chunks.zip(b_chunks) {
            for i in 0..8 {
                lanes[i] += x[i] * y[i];
            }
        }
        lanes.iter().sum::<f32>() + rest
    }

    #[inline(always)]
    fn add_scaled(out: &mut [f32], w: f32, row: &[f32]) {
        for (o, &x) in out.iter_mut().zip(row) {
            *o += w * x;
        }
    }
}

impl KvElement for f16 {
    #[inline(always)]
    fn dot(query: &[f32], row: &[f16]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if f16c_available() {
            // SAFETY: the CPU has F16C, AVX2 and FMA (checked above).
            return unsafe { dot_f16c(query, row) };
        }
        query.iter().zip(row).map(|(q, k)| q * k.to_f32()).sum()
    }

    #[inline(always)]
    fn add_scaled(out: &mut [f32], w: f32, row: &[f16]) {
        #[cfg(target_arch = "x86_64")]
        if f16c_available() {
            // SAFETY: the CPU has F16C, AVX2 and FMA (checked above).
            return unsafe { add_scaled_f16c(out, w, row) };
        }
        for (o, x) in out.iter_mut().zip(row) {
            *o += w * x.to_f32();
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn f16c_available() -> bool {
    use std::sync::OnceLock;
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f16c(query: &[f32], row: &[f16]) -> f32 {
    use std::arch::x86_64::*;
    let d = query.len().min(row.len());
    let chunks = d / 8;
    let (qp, rp) = (query.as_ptr(), row.as_ptr() as *const u16);
    let mut acc = _mm256_setzero_ps();
    for c in 0..chunks {
        // SAFETY: c * 8 + 8 ≤ d, inside both slices; f16 is a u16 in memory.
        let k = _mm256_cvtph_ps(_mm_loadu_si128(rp.add(c * 8) as *const __m128i));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(qp.add(c * 8)), k, acc);
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), acc);
    let tail: f32 = (chunks * 8..d).map(|i| query[i] * row[i].to_f32()).sum();
    lanes.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn add_scaled_f16c(out: &mut [f32], w: f32, row: &[f16]) {
    use std::arch::x86_64::*;
    let d = out.len().min(row.len());
    let chunks = d / 8;
    let (op, rp) = (out.as_mut_ptr(), row.as_ptr() as *const u16);
    let weight = _mm256_set1_ps(w);
    for c in 0..chunks {
        // SAFETY: c * 8 + 8 ≤ d, inside both slices; f16 is a u16 in memory.
        let x = _mm256_cvtph_ps(_mm_loadu_si128(rp.add(c * 8) as *const __m128i));
        let o = op.add(c * 8);
        _mm256_storeu_ps(o, _mm256_fmadd_ps(weight, x, _mm256_loadu_ps(o)));
    }
    for i in chunks * 8..d {
        out[i] += w * row[i].to_f32();
    }
}

/// Queries `q` (`[n, heads, head_dim]`) attend, each row of sequence `seq_of_row[i]`,
/// to that sequence's keys in `k`/`v`; `kv_heads` divides `heads` (grouped queries
/// share a key head). Writes `[n, heads, head_dim]` into `out`. Every key is visible.
#[allow(clippy::too_many_arguments)]
pub fn attend_rows<T: KvElement>(
    q: &[f32],
    k: &[T],
    v: &[T],
    sequences: &[KeyRows<'_>],
    seq_of_row: &[usize],
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    out: &mut [f32],
) {
    let scale = 1.0 / (head_dim as f32).sqrt();
    let groups = heads / kv_heads.max(1);
    out.par_chunks_mut(head_dim)
        .enumerate()
        .for_each_init(Vec::new, |scores, (task, out)| {
            let (row, head) = (task / heads, task % heads);
            let query = &q[task * head_dim..(task + 1) * head_dim];
            let keys = &sequences[seq_of_row[row]];
            let base = (head / groups) * keys.head_stride;
            attend_one(query, k, v, keys.rows, base, scale, scores, out);
        });
}

#[allow(clippy::too_many_arguments)]
fn attend_one<T: KvElement>(
    query: &[f32],
    k: &[T],
    v: &[T],
    rows: &[usize],
    base: usize,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { attend_one_avx2(query, k, v, rows, base, scale, scores, out) };
    }
    attend_one_portable(query, k, v, rows, base, scale, scores, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn attend_one_avx2<T: KvElement>(
    query: &[f32],
    k: &[T],
    v: &[T],
    rows: &[usize],
    base: usize,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    attend_one_portable(query, k, v, rows, base, scale, scores, out)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attend_one_portable<T: KvElement>(
    query: &[f32],
    k: &[T],
    v: &[T],
    rows: &[usize],
    base: usize,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let d = query.len();
    scores.clear();
    scores.extend(
        rows.iter()
            .map(|&r| T::dot(query, &k[base + r..base + r + d]) * scale),
    );
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let inverse = 1.0 / vector_math::exp_shifted_sum_in_place(scores, max);
    out.fill(0.0);
    for (&r, &w) in rows.iter().zip(scores.iter()) {
        T::add_scaled(out, w * inverse, &v[base + r..base + r + d]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Result, Tensor};

    /// The same attention through candle's matmul and softmax.
    fn reference(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        // q [n, heads, d], k/v [heads, m, d] → [n, heads, d]
        let d = q.dim(2)?;
        let q = q.transpose(0, 1)?.contiguous()?;
        let scores = (q.matmul(&k.t()?)? / (d as f64).sqrt())?;
        let p = candle_nn::ops::softmax_last_dim(&scores)?;
        p.matmul(v)?.transpose(0, 1)?.contiguous()
    }

    #[test]
    fn matches_candle_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for (n, heads, m, d) in [
            (1, 1, 1, 1),
            (1, 8, 1500, 64),
            (3, 6, 37, 64),
            (5, 2, 9, 13),
        ] {
            let q = Tensor::randn(0f32, 1.0, (n, heads, d), &dev)?;
            let k = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let v = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?;
            let want = reference(&q, &k, &v)?.flatten_all()?.to_vec1::<f32>()?;
            let rows: Vec<usize> = (0..m).map(|j| j * d).collect();
            let keys = [KeyRows {
                head_stride: m * d,
                rows: &rows,
            }];
            let mut got = vec![0f32; n * heads * d];
            attend_rows(
                &q.flatten_all()?.to_vec1()?,
                &k.flatten_all()?.to_vec1::<f32>()?,
                &v.flatten_all()?.to_vec1()?,
                &keys,
                &vec![0; n],
                heads,
                heads,
                d,
                &mut got,
            );
            let diff = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(diff < 1e-5, "{n}x{heads}x{m}x{d}: {diff}");
        }
        Ok(())
    }

    #[test]
    fn f16_keys_and_values_match_the_same_values_widened() -> Result<()> {
        let dev = Device::Cpu;
        for (n, heads, m, d) in [(1, 1, 1, 1), (2, 6, 1500, 64), (3, 2, 9, 13)] {
            let q = Tensor::randn(0f32, 1.0, (n, heads, d), &dev)?;
            let k = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?.to_dtype(DType::F16)?;
            let v = Tensor::randn(0f32, 1.0, (heads, m, d), &dev)?.to_dtype(DType::F16)?;
            let want = reference(&q, &k.to_dtype(DType::F32)?, &v.to_dtype(DType::F32)?)?;
            let op = RowAttention {
                sequences: vec![(m * d, (0..m).map(|j| j * d).collect())],
                seq_of_row: vec![0; n],
                kv_heads: heads,
            };
            let got = op.forward(&q, &k, &v)?.reshape((n, heads, d))?;
            let diff = crate::models::shared::max_abs_diff(&got, &want)?;
            assert!(diff < 1e-5, "{n}x{heads}x{m}x{d}: {diff}");
        }
        Ok(())
    }

    #[test]
    fn rows_of_different_sequences_and_grouped_heads_read_their_own_keys() {
        // Two sequences in a slot-major buffer ([slots, kv_heads=1, d=2]): slots 0, 1
        // belong to the first, slot 2 to the second; two query heads share the key head.
        let k = [1.0, 0.0, 0.0, 1.0, 5.0, 5.0];
        let v = [1.0, 2.0, 3.0, 4.0, 7.0, 8.0];
        let first = [0, 2];
        let second = [4];
        let sequences = [
            KeyRows {
                head_stride: 2,
                rows: &first,
            },
            KeyRows {
                head_stride: 2,
                rows: &second,
            },
        ];
        let q = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let mut out = [0f32; 8];
        attend_rows(&q, &k, &v, &sequences, &[0, 1], 2, 1, 2, &mut out);
        // Row 0: equal scores over the first sequence's two values; row 1: its one value.
        assert_eq!(out, [2.0, 3.0, 2.0, 3.0, 7.0, 8.0, 7.0, 8.0]);
    }
}
