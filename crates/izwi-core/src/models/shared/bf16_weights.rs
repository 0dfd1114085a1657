//! `x · Wᵀ` for many rows (an encoder's 1500 frames) or a few (a bf16 checkpoint's
//! decode step), and stride-1 convolutions over time-major input (a vocoder's), on
//! CPUs with AVX512-BF16 (AMD Zen 4 and later, Intel Cooper Lake / Sapphire Rapids and
//! later): the weight is kept in bfloat16,
//! packed once at load, and each instruction multiplies pairs of bf16 values into f32
//! sums, twice the arithmetic per cycle of f32 FMA. Inputs are rounded to bf16 (8 bits
//! of mantissa) as they enter; sums stay f32. Elsewhere callers keep the f32 matmul
//! ([`available`] says which).
//!
//! A convolution is the same product with the input row of output `t` for tap `k`
//! read at `t + k · dilation`: the kernel walks the taps over views of one bf16 copy
//! of the input, no column matrix. What surrounds a vocoder's convolutions happens in
//! the same passes: the padding and leaky ReLU as the input is copied to bf16, the bias
//! and the residual connection as the output is stored.

use std::mem::MaybeUninit;

use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
#[cfg(target_arch = "x86_64")]
use super::shared_out::SharedOut;

/// Output columns per panel: two 16-lane registers.
const PANEL: usize = 32;
/// Input rows per register block: 8 × 2 accumulators, 2 weight vectors and a
/// broadcast input in AVX-512's 32 registers.
#[cfg(target_arch = "x86_64")]
const BLOCK_ROWS: usize = 8;
/// Input rows per parallel task: their bf16 copy stays in L2 while every panel passes.
#[cfg(target_arch = "x86_64")]
const TASK_ROWS: usize = 96;
/// Panels per parallel task when there are too few rows to split (128 outputs).
#[cfg(target_arch = "x86_64")]
const PANELS_PER_TASK: usize = 4;

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

/// A weight of `taps` × `[out, in]` in bf16, laid out for the kernel: panels of
/// [`PANEL`] output columns; in each, per tap, for every pair of inputs `(2k, 2k + 1)`,
/// the pair of every column side by side (the order `vdpbf16ps` multiplies). Inputs
/// are padded to even, the last panel's missing columns are zeros. The bias (zeros
/// when there is none) is padded to whole panels.
#[derive(Debug, Clone)]
pub struct PackedBf16 {
    /// Pairs as u32: low half input 2k, high half input 2k + 1.
    pairs: Vec<u32>,
    bias: Vec<f32>,
    outputs: usize,
    inputs: usize,
    taps: usize,
}

/// How the input enters a packed product.
#[derive(Debug, Clone, Copy, Default)]
pub struct Input {
    /// Zero rows before and after the input (a convolution's padding).
    pub pads: (usize, usize),
    /// Leaky ReLU with this slope (in [0, 1]) applied to the input first.
    pub slope: Option<f32>,
}

impl PackedBf16 {
    /// Packs a linear layer's `weight` (`[out, in]`, f32, on the CPU) and `bias`.
    pub fn pack(weight: &Tensor, bias: Option<&Tensor>) -> Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let w = weight
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Self::pack_with(outputs, inputs, 1, bias, |_, o, i| w[o * inputs + i])
    }

    /// Packs a convolution's `weight` given as `[taps * in, out]`, rows ordered (tap,
    /// input channel), and its `bias`.
    pub fn pack_taps(weight: &Tensor, taps: usize, bias: Option<&Tensor>) -> Result<Self> {
        let (rows, outputs) = weight.dims2()?;
        if taps == 0 || !rows.is_multiple_of(taps) {
            candle_core::bail!("bf16 conv: {rows} weight rows for {taps} taps");
        }
        let inputs = rows / taps;
        let w = weight
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Self::pack_with(outputs, inputs, taps, bias, |k, o, i| {
            w[(k * inputs + i) * outputs + o]
        })
    }

    fn pack_with(
        outputs: usize,
        inputs: usize,
        taps: usize,
        bias: Option<&Tensor>,
        weight: impl Fn(usize, usize, usize) -> f32 + Sync,
    ) -> Result<Self> {
        let half_inputs = inputs.div_ceil(2);
        let panels = outputs.div_ceil(PANEL);
        let mut padded_bias = vec![0f32; panels * PANEL];
        if let Some(bias) = bias {
            let bias = bias.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            if bias.len() != outputs {
                candle_core::bail!("bf16 pack: {} biases for {outputs} outputs", bias.len());
            }
            padded_bias[..outputs].copy_from_slice(&bias);
        }
        let mut pairs = vec![0u32; panels * taps * half_inputs * PANEL];
        pairs
            .par_chunks_mut(taps * half_inputs * PANEL)
            .enumerate()
            .for_each(|(panel, packed)| {
                for k in 0..taps {
                    for pair in 0..half_inputs {
                        for c in 0..PANEL.min(outputs - panel * PANEL) {
                            let o = panel * PANEL + c;
                            let at = |i: usize| if i < inputs { weight(k, o, i) } else { 0.0 };
                            packed[(k * half_inputs + pair) * PANEL + c] =
                                u32::from(to_bf16(at(2 * pair)))
                                    | (u32::from(to_bf16(at(2 * pair + 1))) << 16);
                        }
                    }
                }
            });
        Ok(Self {
            pairs,
            bias: padded_bias,
            outputs,
            inputs,
            taps,
        })
    }

    /// Packs `outputs × inputs` values read through `value(output, input)`: a matrix
    /// in any layout (an attention head's keys, its values transposed).
    pub fn pack_fn(
        outputs: usize,
        inputs: usize,
        value: impl Fn(usize, usize) -> f32 + Sync,
    ) -> Result<Self> {
        Self::pack_with(outputs, inputs, 1, None, |_, o, i| value(o, i))
    }

    /// `rows` input rows already in bf16 pairs (`a`, `[rows, ⌈in / 2⌉]`, see
    /// [`to_pairs`]) times the weight, into `out`, rows `stride` values apart, on the
    /// calling thread. Only where [`available`], for a weight packed with one tap.
    pub fn product_pairs(
        &self,
        a: &[u32],
        rows: usize,
        out: &mut [f32],
        stride: usize,
    ) -> Result<()> {
        let half_inputs = self.inputs.div_ceil(2);
        let fits = rows == 0
            || (a.len() >= rows * half_inputs
                && stride >= self.outputs
                && out.len() >= (rows - 1) * stride + self.outputs);
        if !available() || self.taps != 1 || !fits {
            candle_core::bail!(
                "bf16 product: {rows} rows of {} pairs into {} values {stride} apart, for \
                 {} taps of {} × {} (AVX512-BF16: {})",
                a.len(),
                out.len(),
                self.taps,
                self.outputs,
                self.inputs,
                available()
            );
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the features were checked, and the sizes above.
        unsafe {
            let panels = 0..self.outputs.div_ceil(PANEL);
            self.rows_avx512(a, 0, rows, stride, 1, None, panels, out.as_mut_ptr());
        }
        Ok(())
    }

    /// `x` (`[rows, in]`, f32, CPU) times the weight transposed, plus the bias →
    /// `[rows, out]` f32. Only where [`available`], for a weight packed with one tap.
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        self.conv(x, 1, Input::default(), None)
    }

    /// `x` (`[time, in]`) as `input` says, convolved, plus the bias and `residual`
    /// (`[time', out]`) → `[time', out]` with `time' = time + pads - (taps - 1) ·
    /// dilation`. Only where [`available`].
    pub fn conv(
        &self,
        x: &Tensor,
        dilation: usize,
        input: Input,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        let op = Product {
            weight: self,
            dilation,
            input,
        };
        let x = x.contiguous()?;
        match residual {
            Some(r) => x.apply_op2_no_bwd(&r.contiguous()?, &op),
            None => x.apply_op1_no_bwd(&op),
        }
    }
}

/// The candle op: [`PackedBf16`] applied with a dilation between taps.
struct Product<'a> {
    weight: &'a PackedBf16,
    dilation: usize,
    input: Input,
}

impl CustomOp1 for Product<'_> {
    fn name(&self) -> &'static str {
        "izwi-bf16-product"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        self.run(storage, layout, None)
    }
}

impl CustomOp2 for Product<'_> {
    fn name(&self) -> &'static str {
        "izwi-bf16-product-residual"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        residual: &CpuStorage,
        residual_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.run(x, x_layout, Some((residual, residual_layout)))
    }
}

impl Product<'_> {
    fn run(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
        residual: Option<(&CpuStorage, &Layout)>,
    ) -> Result<(CpuStorage, Shape)> {
        let w = self.weight;
        let (time, inputs) = layout.shape().dims2()?;
        if inputs != w.inputs || !available() {
            candle_core::bail!(
                "bf16 product: input {:?} for a weight of {} inputs (AVX512-BF16: {})",
                layout.shape(),
                w.inputs,
                available()
            );
        }
        let x = cpu_slice::<f32>(storage, layout)?;
        let (before, after) = self.input.pads;
        let padded = before + time + after;
        let span = (w.taps - 1) * self.dilation;
        let rows = padded.saturating_sub(span);
        let residual = match residual {
            Some((r, l)) => {
                if l.shape().dims2()? != (rows, w.outputs) {
                    candle_core::bail!(
                        "bf16 product: residual {:?} for an output of {rows}x{}",
                        l.shape(),
                        w.outputs
                    );
                }
                Some(cpu_slice::<f32>(r, l)?)
            }
            None => None,
        };
        // Not zeroed first: the kernel stores every value (its sums start from the
        // bias), and zeroing it was 3 % of the CPU time of a Piper paragraph.
        let len = rows * w.outputs;
        let mut out: Vec<f32> = Vec::with_capacity(len);
        if rows > 0 {
            self.fill(x, residual, time, &mut out.spare_capacity_mut()[..len]);
        }
        // SAFETY: `fill` stored all `len` values: every row of every panel.
        unsafe { out.set_len(len) };
        Ok((CpuStorage::F32(out), Shape::from((rows, w.outputs))))
    }

    /// The product of `x` (`time` rows) into `out`, through the AVX512-BF16 kernel.
    #[cfg(target_arch = "x86_64")]
    fn fill(&self, x: &[f32], residual: Option<&[f32]>, time: usize, out: &mut [MaybeUninit<f32>]) {
        let w = self.weight;
        let inputs = w.inputs;
        let (before, after) = self.input.pads;
        let half_inputs = inputs.div_ceil(2);
        // The input as bf16 pairs, padded rows and the odd input zero, made once.
        let mut a = vec![0u32; (before + time + after) * half_inputs];
        let slope = self.input.slope;
        a[before * half_inputs..(before + time) * half_inputs]
            .par_chunks_mut(TASK_ROWS * half_inputs)
            .zip(x.par_chunks(TASK_ROWS * inputs))
            .for_each(|(pairs, x)| {
                for (pairs, row) in pairs
                    .chunks_exact_mut(half_inputs)
                    .zip(x.chunks_exact(inputs))
                {
                    // SAFETY: `run` checked the CPU's features.
                    unsafe { round_row(row, slope, pairs) }
                }
            });
        let rows = out.len() / w.outputs;
        let panels = w.outputs.div_ceil(PANEL);
        // Blocks of rows, unless there are too few of them to keep every thread busy
        // and runs of panels make more tasks (a decoder's step). Each output row is
        // summed in the same order either way.
        let (row_tasks, panel_tasks) = (rows.div_ceil(TASK_ROWS), panels.div_ceil(PANELS_PER_TASK));
        let (stride, dilation) = (w.outputs, self.dilation);
        if row_tasks >= rayon::current_num_threads() || row_tasks >= panel_tasks {
            out.par_chunks_mut(TASK_ROWS * w.outputs)
                .enumerate()
                .for_each(|(task, out)| {
                    let first = task * TASK_ROWS;
                    let residual = residual.map(|r| &r[first * w.outputs..]);
                    // SAFETY: as above; the task's rows plus the span lie inside `a`,
                    // the residual has the output's shape, and the task's rows of
                    // `out` hold every panel's columns.
                    unsafe {
                        let rows = out.len() / w.outputs;
                        let out = out.as_mut_ptr().cast::<f32>();
                        w.rows_avx512(&a, first, rows, stride, dilation, residual, 0..panels, out)
                    }
                });
        } else {
            // Tasks own runs of panels, every row.
            let out = SharedOut(out.as_mut_ptr().cast());
            let out = &out;
            (0..panel_tasks).into_par_iter().for_each(|task| {
                let first = task * PANELS_PER_TASK;
                let run = first..panels.min(first + PANELS_PER_TASK);
                // SAFETY: as above; `out` holds rows × outputs values, and tasks
                // write disjoint columns of it.
                unsafe { w.rows_avx512(&a, 0, rows, stride, dilation, residual, run, out.0) }
            });
        }
    }

    /// Never reached: off x86-64 [`available`] is false and `run` refuses first.
    #[cfg(not(target_arch = "x86_64"))]
    fn fill(
        &self,
        _x: &[f32],
        _residual: Option<&[f32]>,
        _time: usize,
        _out: &mut [MaybeUninit<f32>],
    ) {
    }
}

#[cfg(target_arch = "x86_64")]
impl PackedBf16 {
    /// `rows` output rows of the `panels` given, `stride` values apart from `out`, from
    /// input rows `first`… of the bf16 input `a`; `residual` is laid out as `out`.
    ///
    /// # Safety
    /// The CPU must have AVX512-BF16; `a` must hold the rows plus the convolution's
    /// span, and `out` (and the residual) `rows` rows of `stride` ≥ outputs values;
    /// `panels` must lie in `0..outputs.div_ceil(PANEL)`, and callers running at once
    /// must give disjoint panels or disjoint rows.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows_avx512(
        &self,
        a: &[u32],
        first: usize,
        rows: usize,
        stride: usize,
        dilation: usize,
        residual: Option<&[f32]>,
        panels: std::ops::Range<usize>,
        out: *mut f32,
    ) {
        let half_inputs = self.inputs.div_ceil(2);
        let a = &a[first * half_inputs..];
        let panel_len = self.taps * half_inputs * PANEL;
        for panel in panels {
            let packed = &self.pairs[panel * panel_len..(panel + 1) * panel_len];
            let column = panel * PANEL;
            for r in (0..rows).step_by(BLOCK_ROWS) {
                let block = BLOCK_ROWS.min(rows - r);
                let at = r * stride + column;
                let operands = Operands {
                    a: &a[r * half_inputs..],
                    panel: packed,
                    bias: &self.bias[column..column + PANEL],
                    residual: residual.map(|res| &res[at..]),
                    half_inputs,
                    taps: self.taps,
                    dilation,
                    stride,
                    columns: PANEL.min(self.outputs - column),
                };
                let out = out.add(at);
                match block {
                    1 => block_avx512::<1>(&operands, out),
                    2 => block_avx512::<2>(&operands, out),
                    3 => block_avx512::<3>(&operands, out),
                    4 => block_avx512::<4>(&operands, out),
                    5 => block_avx512::<5>(&operands, out),
                    6 => block_avx512::<6>(&operands, out),
                    7 => block_avx512::<7>(&operands, out),
                    _ => block_avx512::<8>(&operands, out),
                }
            }
        }
    }
}

/// What one register block reads.
#[cfg(target_arch = "x86_64")]
struct Operands<'a> {
    /// Input rows from the block's first, `[.., half_inputs]` pairs.
    a: &'a [u32],
    /// One panel: `[taps, half_inputs, PANEL]` pairs.
    panel: &'a [u32],
    /// The panel's [`PANEL`] biases.
    bias: &'a [f32],
    /// Added to the output, laid out as it is.
    residual: Option<&'a [f32]>,
    half_inputs: usize,
    taps: usize,
    dilation: usize,
    /// Values between one output row and the next.
    stride: usize,
    /// The panel's columns that exist (≤ [`PANEL`]).
    columns: usize,
}

/// `R` output rows of one panel, over every tap: writes `columns` values of each row
/// `r` at `out[r * stride..]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn block_avx512<const R: usize>(ops: &Operands<'_>, out: *mut f32) {
    use std::arch::x86_64::*;
    let half = ops.half_inputs;
    // SAFETY (all pointer reads below): the panel holds taps × half × PANEL pairs and
    // the bias PANEL values; `a` holds the R rows from tap · dilation on (the rows plus
    // the convolution's span); the residual has `columns` values in each of R rows.
    let mut low = [_mm512_loadu_ps(ops.bias.as_ptr()); R];
    let mut high = [_mm512_loadu_ps(ops.bias.as_ptr().add(16)); R];
    for tap in 0..ops.taps {
        let ap = ops.a.as_ptr().add(tap * ops.dilation * half);
        let bp = ops.panel.as_ptr().add(tap * half * PANEL);
        for k in 0..half {
            let b0: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(bp.add(k * PANEL) as *const _));
            let b1: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(bp.add(k * PANEL + 16) as *const _));
            for r in 0..R {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*ap.add(r * half + k) as i32));
                low[r] = _mm512_dpbf16_ps(low[r], x, b0);
                high[r] = _mm512_dpbf16_ps(high[r], x, b1);
            }
        }
    }
    let (mask_low, mask_high) = masks(ops.columns);
    for r in 0..R {
        if let Some(res) = ops.residual {
            let rp = res.as_ptr().add(r * ops.stride);
            low[r] = _mm512_add_ps(low[r], _mm512_maskz_loadu_ps(mask_low, rp));
            // With 16 columns or fewer the high half reads nothing (its mask is zero)
            // and may point past the row: `wrapping_add` keeps that pointer defined.
            let hp = rp.wrapping_add(16);
            high[r] = _mm512_add_ps(high[r], _mm512_maskz_loadu_ps(mask_high, hp));
        }
        // Row r of `out` has `columns` values from its start; masked stores write no
        // more.
        let o = out.add(r * ops.stride);
        _mm512_mask_storeu_ps(o, mask_low, low[r]);
        _mm512_mask_storeu_ps(o.wrapping_add(16), mask_high, high[r]);
    }
}

/// Store masks for the first `columns` (≤ 32) lanes of the two halves of a 32-wide
/// tile (also `packed_conv`'s).
#[cfg(target_arch = "x86_64")]
pub(super) fn masks(columns: usize) -> (u16, u16) {
    let lanes = |n: usize| if n >= 16 { u16::MAX } else { (1u16 << n) - 1 };
    (lanes(columns), lanes(columns.saturating_sub(16)))
}

/// One row of f32 into bf16 pairs (the last pair zero-padded), through a leaky ReLU
/// first when `slope` is given.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn round_row(row: &[f32], slope: Option<f32>, pairs: &mut [u32]) {
    use std::arch::x86_64::*;
    let whole = row.len() / 32;
    // max(x, slope · x) is the leaky ReLU for a slope in [0, 1]; slope 1 is identity.
    let s = _mm512_set1_ps(slope.unwrap_or(1.0));
    for c in 0..whole {
        // SAFETY: c * 32 + 32 ≤ row.len(); pairs holds row.len() / 2 values from c * 16.
        let lo = _mm512_loadu_ps(row.as_ptr().add(c * 32));
        let hi = _mm512_loadu_ps(row.as_ptr().add(c * 32 + 16));
        let lo = _mm512_max_ps(lo, _mm512_mul_ps(lo, s));
        let hi = _mm512_max_ps(hi, _mm512_mul_ps(hi, s));
        // Lanes 0–15 from `lo`, 16–31 from `hi`: in memory, 32 bf16 in input order.
        let packed: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
        _mm512_storeu_si512(pairs.as_mut_ptr().add(c * 16) as *mut _, packed);
    }
    let slope = slope.unwrap_or(1.0);
    let at = |i: usize| {
        if i < row.len() {
            row[i].max(row[i] * slope)
        } else {
            0.0
        }
    };
    for (k, pair) in pairs.iter_mut().enumerate().skip(whole * 16) {
        *pair = u32::from(to_bf16(at(2 * k))) | (u32::from(to_bf16(at(2 * k + 1))) << 16);
    }
}

/// `row` (f32) as bf16 pairs (`pairs` holds `⌈row.len() / 2⌉`; the odd input's pair
/// partner is zero). Only where [`available`].
pub fn to_pairs(row: &[f32], pairs: &mut [u32]) -> Result<()> {
    if !available() || pairs.len() != row.len().div_ceil(2) {
        candle_core::bail!(
            "bf16 pairs: {} values into {} pairs",
            row.len(),
            pairs.len()
        );
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the features were checked above.
    unsafe {
        round_row(row, None, pairs)
    };
    Ok(())
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
    use crate::models::shared::tap_conv;
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

    /// A dilated convolution with padding, leaky ReLU, bias and residual against the
    /// same steps in f32 (our tap convolution) on bf16-rounded operands.
    #[test]
    fn convolves_as_the_f32_steps_on_odd_shapes() -> Result<()> {
        if !available() {
            eprintln!("no AVX512-BF16 on this CPU: the packed kernel is not used here");
            return Ok(());
        }
        let dev = Device::Cpu;
        let round = |t: &Tensor| t.to_dtype(DType::BF16)?.to_dtype(DType::F32);
        for (time, inputs, outputs, taps, dilation, pads) in [
            (1, 1, 1, 1, 1, (0, 0)),
            (40, 3, 5, 3, 1, (1, 1)),
            (301, 32, 32, 11, 5, (25, 25)),
            (97, 33, 70, 7, 3, (0, 18)),
            (1000, 64, 512, 1, 1, (0, 0)),
            (5, 8, 8, 3, 3, (0, 0)),
            (12, 16, 200, 3, 2, (2, 2)),
        ] {
            let x = Tensor::randn(0f32, 1.0, (time, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (taps * inputs, outputs), &dev)?;
            let bias = Tensor::randn(0f32, 1.0, outputs, &dev)?;
            let input = Input {
                pads,
                slope: Some(0.1),
            };
            let packed = PackedBf16::pack_taps(&w, taps, Some(&bias))?;
            let activated = crate::models::shared::activations::leaky_relu(&x, 0.1)?
                .pad_with_zeros(0, pads.0, pads.1)?;
            let plain = tap_conv::tap_conv(&round(&activated)?, &round(&w)?, taps, dilation)?;
            let rows = plain.dim(0)?;
            let ours = packed.conv(&x, dilation, input, None)?;
            assert_eq!(ours.dims(), plain.dims(), "{time}x{inputs}x{outputs}");
            if rows == 0 {
                continue;
            }
            let residual = Tensor::randn(0f32, 1.0, (rows, outputs), &dev)?;
            let with_residual = packed.conv(&x, dilation, input, Some(&residual))?;
            let want = plain.broadcast_add(&bias)?;
            let bound = 2e-6 * (taps * inputs) as f32;
            for (got, want) in [(ours, want.clone()), (with_residual, (want + residual)?)] {
                let diff = crate::models::shared::max_abs_diff(&got, &want)?;
                assert!(
                    diff < bound,
                    "{time}x{inputs}x{outputs}x{taps}/{dilation}: {diff}"
                );
            }
        }
        Ok(())
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
            // Few rows: tasks own runs of panels, the last one short.
            (4, 70, 700),
            (96, 40, 300),
            (200, 384, 1536),
            (1500, 31, 17),
        ] {
            let x = Tensor::randn(0f32, 1.0, (rows, inputs), &dev)?;
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs), &dev)?;
            let packed = PackedBf16::pack(&w, None)?;
            let ours = packed.matmul(&x)?;
            let round = |t: &Tensor| t.to_dtype(DType::BF16)?.to_dtype(DType::F32);
            let theirs = round(&x)?.matmul(&round(&w)?.t()?)?;
            assert_eq!(ours.dims(), theirs.dims());
            let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
            assert!(
                diff < 2e-6 * inputs as f32,
                "{rows}x{inputs}x{outputs}: {diff}"
            );
            // Split by blocks of rows or by runs of panels, as the threads allow: the
            // same sums to the bit.
            let values = |t: Tensor| t.flatten_all()?.to_vec1::<f32>();
            let ours = values(ours)?;
            for threads in [1, 5] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .map_err(candle_core::Error::wrap)?;
                let split = values(pool.install(|| packed.matmul(&x))?)?;
                assert!(
                    split == ours,
                    "{rows}x{inputs}x{outputs}, {threads} threads"
                );
            }
        }
        Ok(())
    }
}
