//! `x · Wᵀ` for many rows (an encoder's 1500 frames) on CPUs with AVX512-BF16 (AMD
//! Zen 4 and later, Intel Cooper Lake / Sapphire Rapids and later): the weight is kept
//! in bfloat16, packed once at load, and each instruction multiplies pairs of bf16
//! values into f32 sums, twice the arithmetic per cycle of f32 FMA. Inputs are rounded
//! to bf16 (8 bits of mantissa) as they enter; sums stay f32. Elsewhere callers keep
//! the f32 matmul ([`available`] says which).

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;

/// Output columns per panel: two 16-lane registers.
const PANEL: usize = 32;
/// Input rows per register block: 8 × 2 accumulators, 2 weight vectors and a
/// broadcast input in AVX-512's 32 registers.
const BLOCK_ROWS: usize = 8;
/// Input rows per parallel task: their bf16 copy stays in L2 while every panel passes.
const TASK_ROWS: usize = 96;

/// Whether this CPU runs the packed kernel.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A weight `[out, in]` in bf16, laid out for the kernel: panels of [`PANEL`] output
/// columns; in each, for every pair of inputs `(2k, 2k + 1)`, the pair of every column
/// side by side (the order `vdpbf16ps` multiplies). Inputs are padded to even, the last
/// panel's missing columns are zeros.
#[derive(Debug, Clone)]
pub struct PackedBf16 {
    /// Pairs as u32: low half input 2k, high half input 2k + 1.
    pairs: Vec<u32>,
    outputs: usize,
    inputs: usize,
}

impl PackedBf16 {
    /// Packs `weight` (`[out, in]`, f32, on the CPU).
    pub fn pack(weight: &Tensor) -> Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let w = weight
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let half_inputs = inputs.div_ceil(2);
        let panels = outputs.div_ceil(PANEL);
        let mut pairs = vec![0u32; panels * half_inputs * PANEL];
        pairs
            .par_chunks_mut(half_inputs * PANEL)
            .enumerate()
            .for_each(|(panel, packed)| {
                for k in 0..half_inputs {
                    for c in 0..PANEL {
                        let o = panel * PANEL + c;
                        if o >= outputs {
                            continue;
                        }
                        let at = |i: usize| if i < inputs { w[o * inputs + i] } else { 0.0 };
                        packed[k * PANEL + c] = u32::from(to_bf16(at(2 * k)))
                            | (u32::from(to_bf16(at(2 * k + 1))) << 16);
                    }
                }
            });
        Ok(Self {
            pairs,
            outputs,
            inputs,
        })
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x` (`[rows, in]`, f32, CPU) times the weight transposed → `[rows, out]` f32.
    /// Only where [`available`].
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        x.contiguous()?.apply_op1_no_bwd(self)
    }
}

impl CustomOp1 for PackedBf16 {
    fn name(&self) -> &'static str {
        "izwi-bf16-matmul"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, inputs) = layout.shape().dims2()?;
        if inputs != self.inputs || !available() {
            candle_core::bail!(
                "bf16 matmul: input {:?} for a weight of {} inputs (AVX512-BF16: {})",
                layout.shape(),
                self.inputs,
                available()
            );
        }
        let x = cpu_slice::<f32>(storage, layout)?;
        let mut out = vec![0f32; rows * self.outputs];
        #[cfg(target_arch = "x86_64")]
        out.par_chunks_mut(TASK_ROWS * self.outputs)
            .zip(x.par_chunks(TASK_ROWS * inputs))
            .for_each(|(out, x)| {
                // SAFETY: `available()` checked the CPU's features above.
                unsafe { self.rows_avx512(x, out) }
            });
        Ok((CpuStorage::F32(out), Shape::from((rows, self.outputs))))
    }
}

#[cfg(target_arch = "x86_64")]
impl PackedBf16 {
    /// Up to [`TASK_ROWS`] rows of `x` into their rows of `out`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn rows_avx512(&self, x: &[f32], out: &mut [f32]) {
        let half_inputs = self.inputs.div_ceil(2);
        let rows = x.len() / self.inputs;
        // The rows as bf16 pairs, zero-padded to an even count.
        let mut a = vec![0u32; rows * half_inputs];
        for (row, pairs) in x
            .chunks_exact(self.inputs)
            .zip(a.chunks_exact_mut(half_inputs))
        {
            round_row(row, pairs);
        }
        for (panel, packed) in self.pairs.chunks_exact(half_inputs * PANEL).enumerate() {
            let first = panel * PANEL;
            let columns = PANEL.min(self.outputs - first);
            for r in (0..rows).step_by(BLOCK_ROWS) {
                let block = BLOCK_ROWS.min(rows - r);
                let a = &a[r * half_inputs..(r + block) * half_inputs];
                let out = &mut out[r * self.outputs + first..];
                match block {
                    1 => block_avx512::<1>(a, packed, half_inputs, out, self.outputs, columns),
                    2 => block_avx512::<2>(a, packed, half_inputs, out, self.outputs, columns),
                    3 => block_avx512::<3>(a, packed, half_inputs, out, self.outputs, columns),
                    4 => block_avx512::<4>(a, packed, half_inputs, out, self.outputs, columns),
                    5 => block_avx512::<5>(a, packed, half_inputs, out, self.outputs, columns),
                    6 => block_avx512::<6>(a, packed, half_inputs, out, self.outputs, columns),
                    7 => block_avx512::<7>(a, packed, half_inputs, out, self.outputs, columns),
                    _ => block_avx512::<8>(a, packed, half_inputs, out, self.outputs, columns),
                }
            }
        }
    }
}

/// `R` rows of bf16 pairs (`a`, `[R, half_inputs]`) times one panel: writes `columns`
/// values of each row `r` at `out[r * stride..]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn block_avx512<const R: usize>(
    a: &[u32],
    panel: &[u32],
    half_inputs: usize,
    out: &mut [f32],
    stride: usize,
    columns: usize,
) {
    use std::arch::x86_64::*;
    let mut low = [_mm512_setzero_ps(); R];
    let mut high = [_mm512_setzero_ps(); R];
    let (ap, bp) = (a.as_ptr(), panel.as_ptr());
    for k in 0..half_inputs {
        // SAFETY: the panel holds half_inputs × PANEL pairs, `a` R × half_inputs.
        let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(k * PANEL) as *const _));
        let b1: __m512bh =
            std::mem::transmute(_mm512_loadu_si512(bp.add(k * PANEL + 16) as *const _));
        for r in 0..R {
            let x: __m512bh =
                std::mem::transmute(_mm512_set1_epi32(*ap.add(r * half_inputs + k) as i32));
            low[r] = _mm512_dpbf16_ps(low[r], x, b0);
            high[r] = _mm512_dpbf16_ps(high[r], x, b1);
        }
    }
    let (mask_low, mask_high) = masks(columns);
    for r in 0..R {
        // SAFETY: row r of `out` has `columns` values from its start; masked stores
        // write no more.
        let o = out.as_mut_ptr().add(r * stride);
        _mm512_mask_storeu_ps(o, mask_low, low[r]);
        _mm512_mask_storeu_ps(o.add(16), mask_high, high[r]);
    }
}

/// Store masks for the first `columns` (≤ 32) lanes of the two halves.
fn masks(columns: usize) -> (u16, u16) {
    let lanes = |n: usize| if n >= 16 { u16::MAX } else { (1u16 << n) - 1 };
    (lanes(columns), lanes(columns.saturating_sub(16)))
}

/// One row of f32 into bf16 pairs (the last pair zero-padded).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn round_row(row: &[f32], pairs: &mut [u32]) {
    use std::arch::x86_64::*;
    let whole = row.len() / 32;
    for c in 0..whole {
        // SAFETY: c * 32 + 32 ≤ row.len(); pairs holds row.len() / 2 values from c * 16.
        let lo = _mm512_loadu_ps(row.as_ptr().add(c * 32));
        let hi = _mm512_loadu_ps(row.as_ptr().add(c * 32 + 16));
        // Lanes 0–15 from `lo`, 16–31 from `hi`: in memory, 32 bf16 in input order.
        let packed: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
        _mm512_storeu_si512(pairs.as_mut_ptr().add(c * 16) as *mut _, packed);
    }
    let at = |i: usize| if i < row.len() { row[i] } else { 0.0 };
    for (k, pair) in pairs.iter_mut().enumerate().skip(whole * 16) {
        *pair = u32::from(to_bf16(at(2 * k))) | (u32::from(to_bf16(at(2 * k + 1))) << 16);
    }
}

/// f32 to bf16, rounding to nearest even as the CPU's conversion does.
fn to_bf16(v: f32) -> u16 {
    let bits = v.to_bits();
    if v.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn rounding_to_bf16_is_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2⁻⁸ lies halfway between two bf16 values: even (1.0) wins.
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(to_bf16(-2.5), half::bf16::from_f32(-2.5).to_bits());
        for v in [0.1f32, -7.3e-5, 123456.7, f32::MAX, 1e-40] {
            assert_eq!(to_bf16(v), half::bf16::from_f32(v).to_bits(), "{v}");
        }
    }

    /// Against candle's f32 matmul on the same operands rounded to bf16: equal up to
    /// the order of f32 sums. Skipped (and says so) where the CPU lacks AVX512-BF16.
    #[test]
    fn matches_candle_on_bf16_rounded_operands_on_odd_shapes() -> Result<()> {
        if !available() {
            eprintln!("no AVX512-BF16 on this CPU: the packed kernel is not used here");
            return Ok(());
        }
        let dev = Device::Cpu;
        for (rows, inputs, outputs) in [
            (1, 1, 1),
            (3, 5, 7),
            (8, 32, 32),
            (9, 33, 33),
            (97, 64, 65),
            (200, 384, 1536),
            (1500, 31, 17),
        ] {
            let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?;
            let ours = PackedBf16::pack(&w)?.matmul(&x)?;
            let round = |t: &Tensor| t.to_dtype(DType::BF16)?.to_dtype(DType::F32);
            let theirs = round(&x)?.matmul(&round(&w)?.t()?)?;
            assert_eq!(ours.dims(), theirs.dims());
            let diff = (ours - theirs)?
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?;
            assert!(
                diff < 2e-6 * inputs as f32,
                "{rows}x{inputs}x{outputs}: {diff}"
            );
        }
        Ok(())
    }
}
