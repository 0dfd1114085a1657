//! A stride-1, ungrouped 1-D convolution over channel-major f32 input (`[batch, in,
//! time]` → `[batch, out, time']`) on CPUs with AVX-512, its weight packed once at
//! load. Each tile of 8 output channels × 32 time steps keeps its sums in registers
//! while it walks the inputs and taps: the input is read in place, shifted by tap ×
//! dilation, so there is no im2col copy, and the weight is not repacked per call as
//! candle's matmul repacks it. Piper's flow and text encoder run many such
//! convolutions on a few hundred frames, where those copies cost as much as the
//! arithmetic (docs/speed.md).
//!
//! Where [`available`] is false (no AVX-512, or not x86-64) callers keep their own
//! path; the arithmetic is f32 either way.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::cpu_slice::cpu_slice;
use super::shared_out::SharedOut;

/// Output channels per tile (one broadcast weight each per step).
const ROWS: usize = 8;
/// Time steps per tile: two 16-lane registers.
const SPAN: usize = 32;
/// Input values (all rows) of one chunk of time: 256 KiB, inside a core's L2 cache
/// beside a block's weights.
const CHUNK_INPUT_VALUES: usize = 64 * 1024;

/// Whether this CPU runs [`PackedConv`].
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A convolution's weight in tiles of [`ROWS`] output channels: `[block][input][tap]
/// [ROWS]`, the last block's missing channels zero; the bias padded the same way.
pub struct PackedConv {
    outputs: usize,
    inputs: usize,
    taps: usize,
    dilation: usize,
    pads: (usize, usize),
    packed: Vec<f32>,
    bias: Vec<f32>,
}

impl PackedConv {
    /// `weight` `[out, in, taps]` (f32), `bias` `[out]`.
    pub fn pack(
        weight: &Tensor,
        bias: Option<&Tensor>,
        dilation: usize,
        pads: (usize, usize),
    ) -> Result<Self> {
        let (outputs, inputs, taps) = weight.dims3()?;
        if taps == 0 || dilation == 0 || inputs == 0 || outputs == 0 {
            candle_core::bail!("a convolution of shape {:?} or dilation 0", weight.dims());
        }
        let w = weight
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let blocks = outputs.div_ceil(ROWS);
        let mut packed = vec![0f32; blocks * inputs * taps * ROWS];
        for o in 0..outputs {
            let (block, r) = (o / ROWS, o % ROWS);
            for i in 0..inputs {
                for k in 0..taps {
                    packed[((block * inputs + i) * taps + k) * ROWS + r] =
                        w[(o * inputs + i) * taps + k];
                }
            }
        }
        let mut padded_bias = vec![0f32; blocks * ROWS];
        if let Some(b) = bias {
            let b = b.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            if b.len() != outputs {
                candle_core::bail!("a bias of {} for {outputs} outputs", b.len());
            }
            padded_bias[..outputs].copy_from_slice(&b);
        }
        Ok(Self {
            outputs,
            inputs,
            taps,
            dilation,
            pads,
            packed,
            bias: padded_bias,
        })
    }

    pub fn taps(&self) -> usize {
        self.taps
    }

    /// `x` `[batch, in, time]` f32 on the CPU → `[batch, out, time']`, the bias added.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.contiguous()?.apply_op1_no_bwd(self)
    }

    /// Output time steps for `time` input steps.
    fn out_len(&self, time: usize) -> usize {
        (time + self.pads.0 + self.pads.1).saturating_sub((self.taps - 1) * self.dilation)
    }

    /// One batch item: `x` `[in, time]` → `out` `[out, time']`.
    fn item(&self, x: &[f32], time: usize, out: &mut [f32]) {
        let len = self.out_len(time);
        // The input padded, each row followed by SPAN zeros so a tile's last loads stay
        // inside its row.
        let stride = time + self.pads.0 + self.pads.1 + SPAN;
        let mut padded = vec![0f32; self.inputs * stride];
        if time > 0 {
            for (row, x) in padded.chunks_exact_mut(stride).zip(x.chunks_exact(time)) {
                row[self.pads.0..self.pads.0 + time].copy_from_slice(x);
            }
        }
        // The output in chunks of time, every block of 8 outputs over a chunk before the
        // next chunk: a chunk's input rows stay in the core's cache while the blocks read
        // them. Block by block over the whole length, a long input (the Qwen3-TTS
        // codec's last stages: 96 channels × 70 000 steps) came from memory once per
        // block.
        let chunk = (CHUNK_INPUT_VALUES / self.inputs).max(SPAN) / SPAN * SPAN;
        let chunks = len.div_ceil(chunk);
        let blocks = self.outputs.div_ceil(ROWS);
        let weights_per_block = self.inputs * self.taps * ROWS;
        let shared = SharedOut(out.as_mut_ptr());
        let shared = &shared;
        (0..chunks * blocks).into_par_iter().for_each(|job| {
            let (c, b) = (job / blocks, job % blocks);
            let tile_at = |start: usize| Tile {
                x: &padded[start..],
                stride,
                weights: &self.packed[b * weights_per_block..(b + 1) * weights_per_block],
                bias: &self.bias[b * ROWS..(b + 1) * ROWS],
                inputs: self.inputs,
                taps: self.taps,
                dilation: self.dilation,
                rows: ROWS.min(self.outputs - b * ROWS),
                columns: SPAN.min(len - start),
            };
            for start in (c * chunk..len.min((c + 1) * chunk)).step_by(SPAN) {
                // SAFETY: `cpu_fwd` checked the CPU; `padded` holds `inputs` rows of
                // `stride` values, and from `start` each row still has (taps − 1) ·
                // dilation + SPAN of them (`start` < len); `out` holds `outputs` rows
                // of `len` values, and each job writes only its block's rows over its
                // chunk's steps.
                unsafe { tile_at(start).run(shared.0.add(b * ROWS * len + start), len) }
            }
        });
    }
}

impl CustomOp1 for PackedConv {
    fn name(&self) -> &'static str {
        "izwi-packed-conv"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        // The tiles are AVX-512 code: checked here, where every caller passes.
        if !available() {
            candle_core::bail!("the packed convolution needs a CPU with AVX-512");
        }
        let x = cpu_slice::<f32>(storage, layout)?;
        let (batch, inputs, time) = layout.shape().dims3()?;
        if inputs != self.inputs {
            candle_core::bail!("a convolution of {} inputs given {inputs}", self.inputs);
        }
        let len = self.out_len(time);
        let mut out = vec![0f32; batch * self.outputs * len];
        if len > 0 {
            let (item_in, item_out) = (inputs * time, self.outputs * len);
            for b in 0..batch {
                let x = &x[b * item_in..(b + 1) * item_in];
                self.item(x, time, &mut out[b * item_out..(b + 1) * item_out]);
            }
        }
        Ok((
            CpuStorage::F32(out),
            Shape::from((batch, self.outputs, len)),
        ))
    }
}

/// One tile's operands: `x` from the tile's first time step, rows `stride` apart.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Tile<'a> {
    x: &'a [f32],
    stride: usize,
    weights: &'a [f32],
    bias: &'a [f32],
    inputs: usize,
    taps: usize,
    dilation: usize,
    /// Output channels of the block that exist (≤ ROWS).
    rows: usize,
    /// Time steps of the tile inside the output (≤ SPAN).
    columns: usize,
}

impl Tile<'_> {
    /// Sums the tile and stores its `rows` × `columns` values at `out`, rows
    /// `out_stride` apart.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; every row of `x` must hold (taps − 1) · dilation +
    /// SPAN values; `out` must hold `rows` rows of `columns` values.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn run(&self, out: *mut f32, out_stride: usize) {
        use super::bf16_weights::masks;
        use std::arch::x86_64::*;
        let mut low = [_mm512_setzero_ps(); ROWS];
        let mut high = [_mm512_setzero_ps(); ROWS];
        for r in 0..ROWS {
            low[r] = _mm512_set1_ps(self.bias[r]);
            high[r] = low[r];
        }
        let (xp, wp) = (self.x.as_ptr(), self.weights.as_ptr());
        for i in 0..self.inputs {
            let row = xp.add(i * self.stride);
            for k in 0..self.taps {
                let at = row.add(k * self.dilation);
                let (x0, x1) = (_mm512_loadu_ps(at), _mm512_loadu_ps(at.add(16)));
                let w = wp.add((i * self.taps + k) * ROWS);
                for r in 0..ROWS {
                    let wr = _mm512_set1_ps(*w.add(r));
                    low[r] = _mm512_fmadd_ps(wr, x0, low[r]);
                    high[r] = _mm512_fmadd_ps(wr, x1, high[r]);
                }
            }
        }
        let (mask_low, mask_high) = masks(self.columns);
        for r in 0..self.rows {
            let o = out.add(r * out_stride);
            _mm512_mask_storeu_ps(o, mask_low, low[r]);
            // With 16 columns or fewer the high half stores nothing and may point past
            // the row: `wrapping_add` keeps that pointer defined.
            _mm512_mask_storeu_ps(o.wrapping_add(16), mask_high, high[r]);
        }
    }

    /// Never reached: off x86-64 [`available`] is false and `cpu_fwd` refuses first.
    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn run(&self, _out: *mut f32, _out_stride: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::shared::max_abs_diff;
    use candle_core::{Device, D};

    /// candle's convolution with the same padding, dilation and bias.
    fn reference(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        dilation: usize,
        pads: (usize, usize),
    ) -> Result<Tensor> {
        let y = x
            .pad_with_zeros(D::Minus1, pads.0, pads.1)?
            .conv1d(w, 0, 1, dilation, 1)?;
        match b {
            Some(b) => y.broadcast_add(&b.reshape((1, (), 1))?),
            None => Ok(y),
        }
    }

    #[test]
    fn matches_candle_on_odd_shapes() -> Result<()> {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512");
            return Ok(());
        }
        let dev = Device::Cpu;
        // (batch, inputs, outputs, time, taps, dilation, pads, bias)
        for (batch, inputs, outputs, time, taps, dilation, pads, bias) in [
            (1, 1, 1, 1, 1, 1, (0, 0), false),
            (1, 3, 5, 7, 3, 1, (1, 1), true),
            (2, 192, 384, 93, 5, 1, (2, 2), true),
            (1, 17, 9, 33, 3, 2, (2, 2), true),
            (3, 8, 13, 40, 5, 3, (6, 6), false),
            (1, 96, 192, 275, 1, 1, (0, 0), true),
            (1, 4, 8, 5, 3, 1, (2, 0), true),
            // Longer than one chunk of time: three chunks, the last partial, with a
            // causal pad and dilation (the codec's residual units).
            (1, 96, 20, 1500, 7, 9, (54, 0), true),
            // So many inputs that a chunk is one tile, over two batch items.
            (2, 2100, 9, 70, 3, 1, (1, 1), true),
        ] {
            let x = Tensor::randn(0f32, 1.0, (batch, inputs, time), &dev)?;
            // Scaled as trained weights are, so every output is of order 1.
            let scale = 1.0 / ((inputs * taps) as f32).sqrt();
            let w = Tensor::randn(0f32, scale, (outputs, inputs, taps), &dev)?;
            let b = bias
                .then(|| Tensor::randn(0f32, 1.0, outputs, &dev))
                .transpose()?;
            let conv = PackedConv::pack(&w, b.as_ref(), dilation, pads)?;
            let ours = conv.forward(&x)?;
            let theirs = reference(&x, &w, b.as_ref(), dilation, pads)?;
            assert_eq!(ours.dims(), theirs.dims(), "{inputs}→{outputs} t{time}");
            let diff = max_abs_diff(&ours, &theirs)?;
            assert!(diff < 1e-4, "{inputs}→{outputs} t{time} k{taps}: {diff}");
            // A non-contiguous view of the same input gives the same output.
            let t = x.transpose(1, 2)?.contiguous()?.transpose(1, 2)?;
            assert_eq!(max_abs_diff(&conv.forward(&t)?, &ours)?, 0.0);
        }
        Ok(())
    }

    #[test]
    fn inputs_shorter_than_the_kernel_or_empty() -> Result<()> {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512");
            return Ok(());
        }
        let dev = Device::Cpu;
        let w = Tensor::ones((8, 4, 5), DType::F32, &dev)?;
        let conv = PackedConv::pack(&w, None, 1, (1, 0))?;
        let x = Tensor::ones((2, 4, 3), DType::F32, &dev)?;
        assert_eq!(conv.forward(&x)?.dims(), [2, 8, 0]);
        // No input steps: padding 4 leaves no output for 5 taps, padding 5 one, the bias.
        let bias = Tensor::arange(0f32, 8.0, &dev)?;
        let conv = PackedConv::pack(&w, Some(&bias), 1, (2, 2))?;
        let y = conv.forward(&Tensor::zeros((2, 4, 0), DType::F32, &dev)?)?;
        assert_eq!(y.dims(), [2, 8, 0]);
        let conv = PackedConv::pack(&w, Some(&bias), 1, (3, 2))?;
        let y = conv.forward(&Tensor::zeros((2, 4, 0), DType::F32, &dev)?)?;
        assert_eq!(y.dims(), [2, 8, 1]);
        assert_eq!(
            y.get(1)?.flatten_all()?.to_vec1::<f32>()?,
            bias.to_vec1::<f32>()?
        );
        Ok(())
    }

    #[test]
    fn refuses_a_wrong_input_count() -> Result<()> {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512");
            return Ok(());
        }
        let dev = Device::Cpu;
        let w = Tensor::zeros((4, 3, 1), DType::F32, &dev)?;
        let conv = PackedConv::pack(&w, None, 1, (0, 0))?;
        let x = Tensor::zeros((1, 5, 8), DType::F32, &dev)?;
        assert!(conv.forward(&x).is_err());
        Ok(())
    }
}
