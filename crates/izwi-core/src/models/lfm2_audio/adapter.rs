//! The audio adapter: the encoder's frames to backbone embeddings (LayerNorm, then
//! linear layers with exact GELU between them; liquid-audio's `MLP`).

use candle_core::{Module, Result, Tensor};
use candle_nn::{layer_norm, LayerNorm, VarBuilder};

use crate::models::shared::activations::gelu_erf;
use crate::models::shared::linear::Linear;

pub struct AudioAdapter {
    norm: LayerNorm,
    linears: Vec<Linear>,
}

impl AudioAdapter {
    /// `vb` at `audio_adapter`: `model.0` the norm, then a linear at every third index
    /// from 1 (each followed by a GELU but the last).
    pub fn load(input: usize, hidden: usize, vb: VarBuilder) -> Result<Self> {
        let vb = vb.pp("model");
        let norm = layer_norm(input, 1e-5, vb.pp("0"))?;
        let linears = vec![
            Linear::load(input, hidden, vb.pp("1"))?,
            Linear::load(hidden, hidden, vb.pp("3"))?,
        ];
        Ok(Self { norm, linears })
    }

    /// `[frames, encoder width]` → `[frames, hidden]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = self.norm.forward(x)?;
        for (i, linear) in self.linears.iter().enumerate() {
            if i > 0 {
                x = gelu_erf(&x)?;
            }
            x = linear.forward(&x)?;
        }
        Ok(x)
    }
}
