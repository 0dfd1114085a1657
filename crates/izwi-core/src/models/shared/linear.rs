//! A linear layer computed the way candle's CPU matmul is fastest for the rows given.

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Module, Result, Tensor};
use candle_nn::VarBuilder;

use super::bf16_weights::{self, PackedBf16};
use super::f32_rows;
use super::half_weights;

/// `y = x Wᵀ (+ b)` with `W` in its checkpoint layout (`[out, in]`, contiguous), no
/// transposed copy kept. For the few rows of a decode batch it is computed as
/// `(W xᵀ)ᵀ`, up to four times faster in candle's matmul than `x · Wᵀ` over a
/// transposed view (measured on 512×51865, 512×2048 and 768×16384 weights at 2–16
/// rows; docs/engine.md), and still 2–3× faster at 32–128 rows. From
/// [`TRANSPOSED_VIEW_ROWS`] rows on (an encoder's frames, a long prefill) the plain
/// `x · Wᵀ` is the faster one (by 2.6× at 1500 rows on Whisper's shapes, docs/speed.md).
///
/// A GGUF checkpoint's weights stay quantized: candle's quantized matmul reads them as
/// they are (4 or 8 bits a weight), which is what makes a chat model fit and run fast.
/// Rows from which weights kept in 16 bits are widened for the product (then taking
/// the f32 path below) rather than read by our few-row kernel, and f32 products leave
/// our kernel for candle's `(W xᵀ)ᵀ`. Widening copies the whole weight each time: fine
/// for a prefill, but a decode batch this large would pay it every step.
pub const MANY_ROWS: usize = 32;
/// Rows from which `x · Wᵀ` over the transposed view beats `(W xᵀ)ᵀ` for f32 weights:
/// timed on 2048×8192, 8192×2048 and 2048×2048 weights, `(W xᵀ)ᵀ` was 2–3× faster at 32
/// to 128 rows, 1.1× at 384, even at 512 and 1.1–1.3× slower at 768 and 1500
/// (docs/engine.md).
pub const TRANSPOSED_VIEW_ROWS: usize = 512;

#[derive(Debug, Clone)]
pub struct Linear {
    weight: Weight,
    bias: Option<Tensor>,
}

#[derive(Debug, Clone)]
enum Weight {
    Dense(Tensor),
    Quantized(QMatMul),
    Bf16(PackedBf16),
}

impl Linear {
    /// From a weight in checkpoint layout, `[out, in]`.
    pub fn new(weight: &Tensor, bias: Option<Tensor>) -> Result<Self> {
        Ok(Self {
            weight: Weight::Dense(weight.contiguous()?),
            bias,
        })
    }

    /// From a quantized weight (`[out, in]`), kept quantized.
    pub fn quantized(weight: Arc<QTensor>, bias: Option<Tensor>) -> Result<Self> {
        Ok(Self {
            weight: Weight::Quantized(QMatMul::from_arc(weight)?),
            bias,
        })
    }

    pub fn load(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        let bias = vb.get_with_hints(out_dim, "bias", candle_nn::Init::Const(0.0))?;
        Self::new(&weight(in_dim, out_dim, &vb)?, Some(bias))
    }

    pub fn load_no_bias(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        Self::new(&weight(in_dim, out_dim, &vb)?, None)
    }

    /// The same layer with its weight kept in `dtype` (f16 or bf16), for layers that
    /// mostly see a few rows at a time (decoders) on the CPU: see [`half_weights`].
    /// The weight is kept exactly when the checkpoint stores `dtype`; callers check
    /// that.
    ///
    /// bf16 on a CPU with AVX512-BF16 is packed for [`bf16_weights`] instead, inputs
    /// rounded to bf16 as they enter: a checkpoint published in bf16 was made to run
    /// on bf16 activations, and multiplying pairs of bf16 values in one instruction
    /// made Qwen3-TTS's decode about 3× faster at a batch of 8 and 2× at one than
    /// widening each weight for f32 products (docs/engine.md).
    pub fn with_half_weight(self, dtype: DType) -> Result<Self> {
        if dtype == DType::BF16 && bf16_weights::available() {
            return self.with_bf16_weight();
        }
        let weight = match self.weight {
            Weight::Dense(w) => Weight::Dense(half_weights::narrow(&w, dtype)?),
            other => other,
        };
        Ok(Self {
            weight,
            bias: self.bias,
        })
    }

    /// Whether the weight is packed for [`bf16_weights`]: its products are bf16 ones,
    /// the inputs rounded to bf16.
    pub fn is_bf16_packed(&self) -> bool {
        matches!(self.weight, Weight::Bf16(_))
    }
}

impl Linear {
    /// The same layer with its weight packed in bf16 (an encoder's frames, a bf16
    /// checkpoint's decoder), where the CPU has AVX512-BF16 ([`bf16_weights`]);
    /// unchanged elsewhere. Inputs are rounded to bf16 on the way in: callers choose it
    /// where that precision holds.
    pub fn with_bf16_weight(self) -> Result<Self> {
        let weight = match self.weight {
            Weight::Dense(w)
                if w.device().is_cpu()
                    && matches!(w.dtype(), DType::F32 | DType::BF16)
                    && bf16_weights::available() =>
            {
                // The kernel adds the bias as it stores.
                let packed = PackedBf16::pack(&w, self.bias.as_ref())?;
                return Ok(Self {
                    weight: Weight::Bf16(packed),
                    bias: None,
                });
            }
            other => other,
        };
        Ok(Self {
            weight,
            bias: self.bias,
        })
    }
}

fn weight(in_dim: usize, out_dim: usize, vb: &VarBuilder) -> Result<Tensor> {
    let init = candle_nn::init::DEFAULT_KAIMING_NORMAL;
    vb.get_with_hints((out_dim, in_dim), "weight", init)
}

impl Module for Linear {
    /// `x`: `[tokens, in]` → `[tokens, out]`, contiguous.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = match &self.weight {
            Weight::Quantized(w) => w.forward(&x.contiguous()?)?,
            Weight::Dense(w) => dense_forward(x, w)?,
            Weight::Bf16(w) => w.matmul(x)?,
        };
        match &self.bias {
            Some(bias) => y.broadcast_add(bias),
            None => Ok(y),
        }
    }
}

fn dense_forward(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    if half_weights::runs_on(x, weight) {
        if x.dim(0)? < MANY_ROWS {
            half_weights::matmul_half_weight(x, weight)
        } else {
            // A long prefill: widening the weight once is cheaper than dot products.
            dense_forward(x, &half_weights::widen(weight)?)
        }
    } else if x.dim(0)? >= TRANSPOSED_VIEW_ROWS {
        x.matmul(&weight.t()?)
    } else if x.dim(0)? >= MANY_ROWS || !f32_rows::runs_on(x, weight) {
        weight.matmul(&x.t()?)?.t()?.contiguous()
    } else {
        f32_rows::matmul_f32_rows(x, weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn matches_candle_nn_linear() -> Result<()> {
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (5, 3), &dev)?;
        let b = Tensor::randn(0f32, 1.0, 5, &dev)?;
        for rows in [1, 4, MANY_ROWS - 1, MANY_ROWS, 301, TRANSPOSED_VIEW_ROWS] {
            let x = Tensor::randn(0f32, 1.0, (rows, 3), &dev)?;
            let ours = Linear::new(&w, Some(b.clone()))?.forward(&x)?;
            let theirs = candle_nn::Linear::new(w.clone(), Some(b.clone())).forward(&x)?;
            let diff = (ours - theirs)?.abs()?.max_all()?.to_scalar::<f32>()?;
            assert!(diff < 1e-5, "{rows} rows: {diff}");
        }
        Ok(())
    }

    #[test]
    fn a_half_weight_gives_the_f32_result_on_its_inputs_for_few_and_many_rows() -> Result<()> {
        let dev = Device::Cpu;
        for dtype in [DType::F16, DType::BF16] {
            // Values of `dtype`, so keeping them in it loses nothing.
            let w = Tensor::randn(0f32, 1.0, (7, 64), &dev)?
                .to_dtype(dtype)?
                .to_dtype(DType::F32)?;
            let b = Tensor::randn(0f32, 1.0, 7, &dev)?;
            let full = Linear::new(&w, Some(b.clone()))?;
            let half = Linear::new(&w, Some(b))?.with_half_weight(dtype)?;
            for rows in [1, 3, 8, MANY_ROWS, 40] {
                let mut x = Tensor::randn(0f32, 1.0, (rows, 64), &dev)?;
                if dtype == DType::BF16 && bf16_weights::available() {
                    // Packed: the inputs are rounded to bf16 as they enter.
                    x = x.to_dtype(dtype)?.to_dtype(DType::F32)?;
                }
                let diff = (half.forward(&x)? - full.forward(&x)?)?
                    .abs()?
                    .max_all()?
                    .to_scalar::<f32>()?;
                assert!(diff < 1e-4, "{dtype:?} {rows} rows: {diff}");
            }
        }
        Ok(())
    }

    #[test]
    fn a_quantized_weight_gives_its_dequantized_result() -> Result<()> {
        use candle_core::quantized::GgmlDType;
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (9, 64), &dev)?;
        let b = Tensor::randn(0f32, 1.0, 9, &dev)?;
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_1] {
            let q = QTensor::quantize(&w, dtype)?;
            let dense = Linear::new(&q.dequantize(&dev)?, Some(b.clone()))?;
            let quantized = Linear::quantized(Arc::new(q), Some(b.clone()))?;
            for rows in [1, 5, MANY_ROWS + 3] {
                let x = Tensor::randn(0f32, 1.0, (rows, 64), &dev)?;
                let want = dense.forward(&x)?;
                // The activations are quantized to 8 bits for the dot products.
                let diff = (quantized.forward(&x)? - &want)?.abs()?.max_all()?;
                let scale = want.abs()?.max_all()?.to_scalar::<f32>()?;
                let diff = diff.to_scalar::<f32>()? / scale;
                assert!(diff < 0.02, "{dtype:?}, {rows} rows: {diff}");
            }
        }
        Ok(())
    }
}
