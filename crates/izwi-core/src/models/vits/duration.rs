//! Phoneme durations (`dp`): how many spectrogram frames each phoneme lasts, as log
//! frames. Piper voices use VITS's stochastic predictor, a normalizing flow run in
//! reverse from noise scaled by `noise_w`; voices trained without it have the
//! deterministic convolutional predictor.

use candle_core::{Result, Tensor};

use super::layers::{ChannelNorm, Conv1d};
use super::spline;
use super::weights::Weights;
use crate::models::shared::activations::gelu_erf;

/// The spline's domain is [-TAIL_BOUND, TAIL_BOUND] (VITS's `ConvFlow` default).
const TAIL_BOUND: f32 = 5.0;

pub enum DurationPredictor {
    Stochastic(Stochastic),
    Deterministic(Deterministic),
}

impl DurationPredictor {
    pub fn load(w: &Weights) -> Result<Self> {
        Ok(if w.has_module("dp.conv_1") {
            Self::Deterministic(Deterministic::load(w)?)
        } else {
            Self::Stochastic(Stochastic::load(w)?)
        })
    }

    /// Whether durations depend on noise (so `noise_w` matters).
    pub fn is_stochastic(&self) -> bool {
        matches!(self, Self::Stochastic(_))
    }

    /// Log durations `[batch, 1, phonemes]` from the text encoder's hidden states.
    /// `noise` (`[batch, 2, phonemes]`, already scaled by `noise_w`) drives the
    /// stochastic predictor; `None` means zero noise.
    pub fn log_durations(
        &self,
        x: &Tensor,
        mask: &Tensor,
        g: Option<&Tensor>,
        noise: Option<&Tensor>,
    ) -> Result<Tensor> {
        match self {
            Self::Stochastic(p) => p.forward(x, mask, g, noise),
            Self::Deterministic(p) => p.forward(x, mask, g),
        }
    }
}

pub struct Stochastic {
    pre: Conv1d,
    convs: DdsConv,
    proj: Conv1d,
    cond: Option<Conv1d>,
    /// The spline flows in the order the reverse pass runs them.
    flows: Vec<ConvFlow>,
    /// The first flow, elementwise affine: `[2, 1]` shift and log-scale.
    affine_m: Tensor,
    affine_logs: Tensor,
}

impl Stochastic {
    fn load(w: &Weights) -> Result<Self> {
        // dp.flows = [affine, (spline, flip) × n]. The reverse pass skips the first
        // spline flow (VITS drops it as useless), so exports lack its weights: take
        // flows 3, 5, 7, ...
        let n = w.count(|j| format!("dp.flows.{}", 2 * j + 3));
        let indices: Vec<usize> = (0..n).rev().map(|j| 2 * j + 3).collect();
        let flows = indices
            .iter()
            .map(|i| ConvFlow::load(w, &format!("dp.flows.{i}")))
            .collect::<Result<_>>()?;
        Ok(Self {
            pre: Conv1d::load(w, "dp.pre")?,
            convs: DdsConv::load(w, "dp.convs")?,
            proj: Conv1d::load(w, "dp.proj")?,
            cond: Conv1d::load_optional(w, "dp.cond")?,
            flows,
            affine_m: w.get("dp.flows.0.m"),
            affine_logs: w.get("dp.flows.0.logs"),
        })
    }

    fn forward(
        &self,
        x: &Tensor,
        mask: &Tensor,
        g: Option<&Tensor>,
        noise: Option<&Tensor>,
    ) -> Result<Tensor> {
        let mut x = self.pre.forward(x)?;
        if let (Some(cond), Some(g)) = (&self.cond, g) {
            x = x.broadcast_add(&cond.forward(g)?)?;
        }
        let x = self.convs.forward(&x, mask, None)?;
        let x = self.proj.forward(&x)?.broadcast_mul(mask)?;

        let (batch, _, len) = x.dims3()?;
        let mut z = match noise {
            Some(noise) => noise.clone(),
            None => Tensor::zeros((batch, 2, len), x.dtype(), x.device())?,
        };
        for flow in &self.flows {
            z = flow.reverse(&z.flip(&[1])?, mask, &x)?;
        }
        let z = z.flip(&[1])?;
        let z = z
            .broadcast_sub(&self.affine_m)?
            .broadcast_mul(&self.affine_logs.neg()?.exp()?)?
            .broadcast_mul(mask)?;
        z.narrow(1, 0, 1)
    }
}

/// A coupling flow whose transform of the second half is a rational-quadratic spline
/// parameterized from the first half (conditioned on the text through `g`).
struct ConvFlow {
    pre: Conv1d,
    convs: DdsConv,
    proj: Conv1d,
    /// `sqrt(filter_channels)`, which divides the bin widths and heights.
    scale: f32,
    /// Spline bins; `proj` gives `3 * bins - 1` parameters per transformed channel.
    bins: usize,
}

impl ConvFlow {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let (filter_channels, half, _) = w.get(&format!("{p}.pre.weight")).dims3()?;
        let outputs = w.get(&format!("{p}.proj.weight")).dim(0)?;
        let params = outputs / half.max(1);
        if half == 0 || outputs % half != 0 || params % 3 != 2 {
            candle_core::bail!(
                "{p}.proj gives {outputs} outputs for {half} channels, not a spline's"
            );
        }
        Ok(Self {
            pre: Conv1d::load(w, &format!("{p}.pre"))?,
            convs: DdsConv::load(w, &format!("{p}.convs"))?,
            proj: Conv1d::load(w, &format!("{p}.proj"))?,
            scale: (filter_channels as f64).sqrt() as f32,
            bins: params.div_ceil(3),
        })
    }

    fn reverse(&self, x: &Tensor, mask: &Tensor, g: &Tensor) -> Result<Tensor> {
        let (batch, channels, len) = x.dims3()?;
        let half = channels / 2;
        let x0 = x.narrow(1, 0, half)?;
        let x1 = x.narrow(1, half, half)?;
        let h = self.pre.forward(&x0)?;
        let h = self.convs.forward(&h, mask, Some(g))?;
        let h = self.proj.forward(&h)?.broadcast_mul(mask)?;
        // [b, half * params, t] → [b, half, t, params]
        let bins = self.bins;
        let params = 3 * bins - 1;
        let h = h.reshape((batch, half, params, len))?.transpose(2, 3)?;
        let h = h.flatten_all()?.to_vec1::<f32>()?;
        let y = x1.flatten_all()?.to_vec1::<f32>()?;
        let out: Vec<f32> = y
            .iter()
            .zip(h.chunks_exact(params))
            .map(|(&y, p)| {
                let widths: Vec<f32> = p[..bins].iter().map(|v| v / self.scale).collect();
                let heights: Vec<f32> = p[bins..2 * bins].iter().map(|v| v / self.scale).collect();
                spline::inverse(y, &widths, &heights, &p[2 * bins..], TAIL_BOUND)
            })
            .collect();
        let x1 = Tensor::from_vec(out, (batch, half, len), x.device())?;
        Tensor::cat(&[&x0, &x1], 1)?.broadcast_mul(mask)
    }
}

/// Dilated depth-separable convolutions: per layer a depthwise convolution (dilation
/// kernel^i), a 1×1 convolution, each followed by layer norm and GELU, with a residual.
struct DdsConv {
    layers: Vec<DdsLayer>,
}

struct DdsLayer {
    sep: Conv1d,
    norm_1: ChannelNorm,
    pointwise: Conv1d,
    norm_2: ChannelNorm,
}

impl DdsConv {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        let n = w.count(|i| format!("{p}.convs_sep.{i}"));
        let layers = (0..n)
            .map(|i| {
                Ok(DdsLayer {
                    sep: Conv1d::load(w, &format!("{p}.convs_sep.{i}"))?,
                    norm_1: ChannelNorm::load(w, &format!("{p}.norms_1.{i}"))?,
                    pointwise: Conv1d::load(w, &format!("{p}.convs_1x1.{i}"))?,
                    norm_2: ChannelNorm::load(w, &format!("{p}.norms_2.{i}"))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self { layers })
    }

    fn forward(&self, x: &Tensor, mask: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let mut x = match g {
            Some(g) => (x + g)?,
            None => x.clone(),
        };
        for l in &self.layers {
            let y = l.sep.forward(&x.broadcast_mul(mask)?)?;
            let y = gelu_erf(&l.norm_1.forward(&y)?)?;
            let y = l.pointwise.forward(&y)?;
            let y = gelu_erf(&l.norm_2.forward(&y)?)?;
            x = (x + y)?;
        }
        x.broadcast_mul(mask)
    }
}

/// VITS's plain `DurationPredictor`: two convolutions with ReLU and layer norm.
pub struct Deterministic {
    conv_1: Conv1d,
    norm_1: ChannelNorm,
    conv_2: Conv1d,
    norm_2: ChannelNorm,
    proj: Conv1d,
    cond: Option<Conv1d>,
}

impl Deterministic {
    fn load(w: &Weights) -> Result<Self> {
        Ok(Self {
            conv_1: Conv1d::load(w, "dp.conv_1")?,
            norm_1: ChannelNorm::load(w, "dp.norm_1")?,
            conv_2: Conv1d::load(w, "dp.conv_2")?,
            norm_2: ChannelNorm::load(w, "dp.norm_2")?,
            proj: Conv1d::load(w, "dp.proj")?,
            cond: Conv1d::load_optional(w, "dp.cond")?,
        })
    }

    fn forward(&self, x: &Tensor, mask: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let mut x = x.clone();
        if let (Some(cond), Some(g)) = (&self.cond, g) {
            x = x.broadcast_add(&cond.forward(g)?)?;
        }
        let x = self.conv_1.forward(&x.broadcast_mul(mask)?)?.relu()?;
        let x = self.norm_1.forward(&x)?;
        let x = self.conv_2.forward(&x.broadcast_mul(mask)?)?.relu()?;
        let x = self.norm_2.forward(&x)?;
        let x = self.proj.forward(&x.broadcast_mul(mask)?)?;
        x.broadcast_mul(mask)
    }
}
