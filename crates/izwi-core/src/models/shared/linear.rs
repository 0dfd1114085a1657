//! A linear layer computed the way candle's CPU matmul is fastest for decoding.

use candle_core::{Module, Result, Tensor};
use candle_nn::VarBuilder;

/// `y = x Wᵀ (+ b)`, computed as `(W xᵀ)ᵀ` with `W` in its checkpoint layout
/// (`[out, in]`, contiguous). For the few rows of a decode batch, candle's matmul is up
/// to four times faster that way than `x · Wᵀ` over a transposed view or a transposed
/// copy (measured on 512×51865, 512×2048 and 768×16384 weights at 2–16 rows; see
/// docs/engine.md), and no transposed copy of the weights is kept.
#[derive(Debug, Clone)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    /// From a weight in checkpoint layout, `[out, in]`.
    pub fn new(weight: &Tensor, bias: Option<Tensor>) -> Result<Self> {
        Ok(Self {
            weight: weight.contiguous()?,
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
}

fn weight(in_dim: usize, out_dim: usize, vb: &VarBuilder) -> Result<Tensor> {
    let init = candle_nn::init::DEFAULT_KAIMING_NORMAL;
    vb.get_with_hints((out_dim, in_dim), "weight", init)
}

impl Module for Linear {
    /// `x`: `[tokens, in]` → `[tokens, out]`, contiguous.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = self.weight.matmul(&x.t()?)?.t()?.contiguous()?;
        match &self.bias {
            Some(bias) => y.broadcast_add(bias),
            None => Ok(y),
        }
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
        let x = Tensor::randn(0f32, 1.0, (4, 3), &dev)?;
        let ours = Linear::new(&w, Some(b.clone()))?.forward(&x)?;
        let theirs = candle_nn::Linear::new(w, Some(b)).forward(&x)?;
        let diff = (ours - theirs)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(diff < 1e-6, "{diff}");
        Ok(())
    }
}
