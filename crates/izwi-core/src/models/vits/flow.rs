//! The flow (`flow`): residual affine coupling layers with WaveNet-style transforms,
//! run in reverse to turn a sample of the text-conditioned prior into the latent the
//! vocoder decodes.

use candle_core::{Result, Tensor};

use super::layers::Conv1d;
use super::weights::Weights;
use crate::models::shared::activations::gated_tanh;

pub struct Flow {
    /// `flow.flows.0, 2, 4, ...`; each is followed by a channel flip in the forward
    /// direction, and those flips have no weights.
    layers: Vec<CouplingLayer>,
}

impl Flow {
    pub fn load(w: &Weights) -> Result<Self> {
        let n = w.count(|i| format!("flow.flows.{}", 2 * i));
        let layers = (0..n)
            .map(|i| CouplingLayer::load(w, &format!("flow.flows.{}", 2 * i)))
            .collect::<Result<_>>()?;
        Ok(Self { layers })
    }

    /// `z`: `[batch, channels, frames]` → the same shape.
    pub fn reverse(&self, z: &Tensor, mask: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let mut z = z.clone();
        for layer in self.layers.iter().rev() {
            z = layer.reverse(&z.flip(&[1])?, mask, g)?;
        }
        Ok(z)
    }
}

/// Keeps the first half of the channels and shifts (and, unless mean-only, scales)
/// the second half by amounts computed from the first.
struct CouplingLayer {
    pre: Conv1d,
    enc: WaveNet,
    post: Conv1d,
}

impl CouplingLayer {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        Ok(Self {
            pre: Conv1d::load(w, &format!("{p}.pre"))?,
            enc: WaveNet::load(w, &format!("{p}.enc"))?,
            post: Conv1d::load(w, &format!("{p}.post"))?,
        })
    }

    fn reverse(&self, x: &Tensor, mask: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let half = x.dim(1)? / 2;
        let x0 = x.narrow(1, 0, half)?;
        let x1 = x.narrow(1, half, half)?;
        let h = self.pre.forward(&x0)?.broadcast_mul(mask)?;
        let h = self.enc.forward(&h, mask, g)?;
        let stats = self.post.forward(&h)?.broadcast_mul(mask)?;
        let x1 = if stats.dim(1)? == half {
            // mean only (Piper's flows): log-scale 0
            (x1 - stats)?
        } else {
            let m = stats.narrow(1, 0, half)?;
            let logs = stats.narrow(1, half, half)?;
            ((x1 - m)? * logs.neg()?.exp()?)?
        };
        Tensor::cat(&[&x0, &x1.broadcast_mul(mask)?], 1)
    }
}

/// WaveNet without causality (VITS's `WN`): gated dilated convolutions whose outputs
/// feed both a residual path and a summed skip output.
struct WaveNet {
    in_layers: Vec<Conv1d>,
    res_skip_layers: Vec<Conv1d>,
    cond_layer: Option<Conv1d>,
}

impl WaveNet {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let n = w.count(|i| format!("{p}.in_layers.{i}"));
        let layers = |name: &str| {
            (0..n)
                .map(|i| Conv1d::load(w, &format!("{p}.{name}.{i}")))
                .collect::<Result<Vec<_>>>()
        };
        Ok(Self {
            in_layers: layers("in_layers")?,
            res_skip_layers: layers("res_skip_layers")?,
            cond_layer: Conv1d::load_optional(w, &format!("{p}.cond_layer"))?,
        })
    }

    fn forward(&self, x: &Tensor, mask: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let hidden = x.dim(1)?;
        let g = match (&self.cond_layer, g) {
            (Some(cond), Some(g)) => Some(cond.forward(g)?),
            _ => None,
        };
        let mut x = x.clone();
        let mut output: Option<Tensor> = None;
        for (i, (in_layer, res_skip)) in
            self.in_layers.iter().zip(&self.res_skip_layers).enumerate()
        {
            let mut x_in = in_layer.forward(&x)?;
            if let Some(g) = &g {
                x_in = x_in.broadcast_add(&g.narrow(1, i * 2 * hidden, 2 * hidden)?)?;
            }
            let acts = gated_tanh(&x_in)?;
            let res_skip_acts = res_skip.forward(&acts)?;
            let skip = if i + 1 < self.in_layers.len() {
                let res = res_skip_acts.narrow(1, 0, hidden)?;
                x = (x + res)?.broadcast_mul(mask)?;
                res_skip_acts.narrow(1, hidden, hidden)?
            } else {
                res_skip_acts
            };
            output = Some(match output {
                Some(o) => (o + skip)?,
                None => skip,
            });
        }
        match output {
            Some(o) => o.broadcast_mul(mask),
            None => x.zeros_like(),
        }
    }
}
