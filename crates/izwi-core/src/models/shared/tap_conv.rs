//! A stride-1 convolution over time-major input (`[time, in]` → `[time', out]`) on the
//! CPU as one accumulating gemm per kernel tap: tap `k` multiplies the input seen from
//! row `k · dilation` on (a view, no copy) by that tap's `[in, out]` weights and adds
//! into the output. The im2col route copies the input once per tap into a column
//! matrix first; in Piper's vocoder those copies were an eighth of the synthesis time
//! (docs/speed.md).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};
use gemm::{gemm, Parallelism};

use super::cpu_slice::cpu_slice;

/// Whether [`tap_conv`] runs for this input.
pub fn runs_on(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32
}

/// `x` `[time, in]` (already padded) convolved with `weight` `[kernel * in, out]`
/// (rows ordered tap, input channel) → `[time - (kernel - 1) · dilation, out]`.
pub fn tap_conv(x: &Tensor, weight: &Tensor, kernel: usize, dilation: usize) -> Result<Tensor> {
    x.contiguous()?
        .apply_op2_no_bwd(&weight.contiguous()?, &TapConv { kernel, dilation })
}

struct TapConv {
    kernel: usize,
    dilation: usize,
}

impl CustomOp2 for TapConv {
    fn name(&self) -> &'static str {
        "izwi-tap-conv"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        w: &CpuStorage,
        w_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (time, inputs) = x_layout.shape().dims2()?;
        let (rows, outputs) = w_layout.shape().dims2()?;
        if self.kernel == 0 || rows != self.kernel * inputs {
            candle_core::bail!(
                "tap conv: input {:?}, weight {:?}, kernel {}",
                x_layout.shape(),
                w_layout.shape(),
                self.kernel
            );
        }
        let x = cpu_slice::<f32>(x, x_layout)?;
        let w = cpu_slice::<f32>(w, w_layout)?;
        let span = (self.kernel - 1) * self.dilation;
        let len = time.saturating_sub(span);
        let mut out = vec![0f32; len * outputs];
        if len > 0 {
            let threads = rayon::current_num_threads();
            for tap in 0..self.kernel {
                let shifted = &x[tap * self.dilation * inputs..];
                let weights = &w[tap * inputs * outputs..(tap + 1) * inputs * outputs];
                // SAFETY: `shifted` holds `len` rows of `inputs` (len + span = time rows
                // in all), `weights` is `[inputs, outputs]`, `out` is `[len, outputs]`.
                unsafe {
                    gemm(
                        len,
                        outputs,
                        inputs,
                        out.as_mut_ptr(),
                        1,
                        outputs as isize,
                        tap > 0,
                        shifted.as_ptr(),
                        1,
                        inputs as isize,
                        weights.as_ptr(),
                        1,
                        outputs as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::Rayon(threads),
                    );
                }
            }
        }
        Ok((CpuStorage::F32(out), Shape::from((len, outputs))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn matches_candle_conv1d_on_odd_shapes() -> Result<()> {
        let dev = Device::Cpu;
        for (time, inputs, outputs, kernel, dilation) in [
            (1, 1, 1, 1, 1),
            (50, 7, 5, 3, 2),
            (1000, 64, 32, 7, 5),
            (9, 3, 4, 5, 2),
        ] {
            let x = Tensor::randn(0f32, 1.0, (time, inputs), &dev)?;
            // torch layout [out, in, kernel] → ours [kernel * in, out]
            let w = Tensor::randn(0f32, 1.0, (outputs, inputs, kernel), &dev)?;
            let ours_w = w
                .permute((2, 1, 0))?
                .contiguous()?
                .reshape((kernel * inputs, outputs))?;
            let ours = tap_conv(&x, &ours_w, kernel, dilation)?;
            let theirs = x
                .t()?
                .unsqueeze(0)?
                .conv1d(&w, 0, 1, dilation, 1)?
                .squeeze(0)?
                .t()?;
            assert_eq!(ours.dims(), theirs.dims());
            // Both sum hundreds of products in another order: their rounding grows with
            // the size of the outputs, so the difference is measured against it (an
            // absolute 1e-4 failed once in CI at outputs near 80).
            let scale = theirs
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?
                .max(1.0);
            let diff = crate::models::shared::max_abs_diff(&ours, &theirs)?;
            assert!(
                diff / scale < 2e-5,
                "{time}x{inputs}x{outputs} k{kernel} d{dilation}: {diff} of outputs up to {scale}"
            );
        }
        Ok(())
    }
}
