//! The vocoder (`dec`): a HiFi-GAN generator. Transposed convolutions upsample the
//! latent frames to samples (256× for Piper voices); after each, a bank of residual
//! blocks with different kernel sizes is averaged. It runs time-major (see
//! [`TimeConv1d`]).

use candle_core::{DType, Result, Storage, Tensor};
use rayon::prelude::*;

use super::layers::{ConvTranspose1d, TimeConv1d};
use super::weights::Weights;
use crate::models::shared::activations::tanh;
use crate::models::shared::cpu_slice::cpu_slice;

/// HiFi-GAN's slope inside the generator; the final activation uses torch's default.
const LRELU_SLOPE: f64 = 0.1;
const FINAL_SLOPE: f64 = 0.01;

pub struct Decoder {
    conv_pre: TimeConv1d,
    cond: Option<TimeConv1d>,
    ups: Vec<ConvTranspose1d>,
    /// Per upsampling stage, its residual blocks.
    resblocks: Vec<Vec<ResBlock>>,
    conv_post: TimeConv1d,
}

impl Decoder {
    pub fn load(w: &Weights) -> Result<Self> {
        let n_ups = w.count(|i| format!("dec.ups.{i}"));
        let ups = (0..n_ups)
            .map(|i| ConvTranspose1d::load(w, &format!("dec.ups.{i}")))
            .collect::<Result<Vec<_>>>()?;
        let total = w.count(|i| format!("dec.resblocks.{i}"));
        if n_ups > 0 && !total.is_multiple_of(n_ups) {
            candle_core::bail!("{total} residual blocks do not divide among {n_ups} upsamplings");
        }
        let per_stage = total / n_ups.max(1);
        let resblocks = (0..n_ups)
            .map(|s| {
                (s * per_stage..(s + 1) * per_stage)
                    .map(|i| ResBlock::load(w, &format!("dec.resblocks.{i}")))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            conv_pre: TimeConv1d::load(w, "dec.conv_pre")?,
            // speaker conditioning, multi-speaker voices only
            cond: if w.has_module("dec.cond") {
                Some(TimeConv1d::load(w, "dec.cond")?)
            } else {
                None
            },
            ups,
            resblocks,
            conv_post: TimeConv1d::load(w, "dec.conv_post")?,
        })
    }

    /// The same vocoder with its convolutions in bf16 where the CPU multiplies bf16
    /// natively ([`TimeConv1d::with_bf16`]); unchanged elsewhere.
    pub fn with_bf16(self) -> Result<Self> {
        Ok(Self {
            conv_pre: self.conv_pre.with_bf16()?,
            cond: self.cond.map(TimeConv1d::with_bf16).transpose()?,
            ups: self
                .ups
                .into_iter()
                .map(ConvTranspose1d::with_bf16)
                .collect::<Result<_>>()?,
            resblocks: self
                .resblocks
                .into_iter()
                .map(|blocks| blocks.into_iter().map(ResBlock::with_bf16).collect())
                .collect::<Result<_>>()?,
            conv_post: self.conv_post.with_bf16()?,
        })
    }

    /// Samples per latent frame.
    pub fn hop_length(&self) -> usize {
        self.ups.iter().map(|u| u.stride()).product()
    }

    /// `z`: `[batch, channels, frames]` → audio `[batch, frames * hop_length]`.
    pub fn forward(&self, z: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
        let mut x = self.conv_pre.forward(&z.transpose(1, 2)?.contiguous()?)?;
        if let (Some(cond), Some(g)) = (&self.cond, g) {
            x = x.broadcast_add(&cond.forward(&g.transpose(1, 2)?)?)?;
        }
        for (up, blocks) in self.ups.iter().zip(&self.resblocks) {
            x = up.forward_leaky(&x, LRELU_SLOPE)?;
            let outputs = run_blocks(blocks, &x)?;
            if !outputs.is_empty() {
                x = mean(&outputs)?;
            }
        }
        let x = self.conv_post.forward_leaky(&x, FINAL_SLOPE, None)?;
        tanh(&x.squeeze(2)?)
    }
}

/// Each block's output for input `x`. The blocks are independent, and on the CPU they
/// run side by side as tasks of rayon's pool: candle's ops on these shapes leave much
/// of a second core idle. Tasks, not threads of their own, so a synthesis running on
/// one of the pool's workers cannot wait on threads that wait for the pool.
fn run_blocks(blocks: &[ResBlock], x: &Tensor) -> Result<Vec<Tensor>> {
    if !x.device().is_cpu() {
        return blocks.iter().map(|b| b.forward(x)).collect();
    }
    blocks.par_iter().map(|b| b.forward(x)).collect()
}

/// The blocks' average. On the CPU in one parallel pass: candle's adds and divide
/// each take a pass over the largest tensors of the vocoder, on one core.
fn mean(outputs: &[Tensor]) -> Result<Tensor> {
    let cpu_f32 = outputs
        .iter()
        .all(|y| y.device().is_cpu() && y.dtype() == DType::F32 && y.shape() == outputs[0].shape());
    if !cpu_f32 {
        let mut sum = outputs[0].clone();
        for y in &outputs[1..] {
            sum = (sum + y)?;
        }
        return sum / outputs.len() as f64;
    }
    let outputs = outputs
        .iter()
        .map(Tensor::contiguous)
        .collect::<Result<Vec<_>>>()?;
    let stored: Vec<_> = outputs.iter().map(Tensor::storage_and_layout).collect();
    let slices = stored
        .iter()
        .map(|(storage, layout)| match &**storage {
            Storage::Cpu(cpu) => cpu_slice::<f32>(cpu, layout),
            _ => candle_core::bail!("the blocks' outputs left the CPU"),
        })
        .collect::<Result<Vec<_>>>()?;
    // candle divides by n as a multiply by 1 / n: the same here.
    let scale = (1.0 / outputs.len() as f64) as f32;
    let mut mean = vec![0f32; slices[0].len()];
    mean.par_chunks_mut(MEAN_CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let at = chunk * MEAN_CHUNK;
            out.copy_from_slice(&slices[0][at..at + out.len()]);
            for y in &slices[1..] {
                for (o, &v) in out.iter_mut().zip(&y[at..]) {
                    *o += v;
                }
            }
            out.iter_mut().for_each(|o| *o *= scale);
        });
    Tensor::from_vec(mean, outputs[0].shape(), outputs[0].device())
}

/// Values per parallel task of [`mean`].
const MEAN_CHUNK: usize = 32 * 1024;

/// HiFi-GAN's residual blocks: type 1 has two convolutions per step (dilated, then
/// plain), type 2 one (dilated). Dilations come from the graph.
enum ResBlock {
    One(Vec<(TimeConv1d, TimeConv1d)>),
    Two(Vec<TimeConv1d>),
}

impl ResBlock {
    fn load(w: &Weights, p: &str) -> Result<Self> {
        if w.has_module(&format!("{p}.convs1")) {
            let n = w.count(|j| format!("{p}.convs1.{j}"));
            let convs = (0..n)
                .map(|j| {
                    Ok((
                        TimeConv1d::load(w, &format!("{p}.convs1.{j}"))?,
                        TimeConv1d::load(w, &format!("{p}.convs2.{j}"))?,
                    ))
                })
                .collect::<Result<_>>()?;
            Ok(Self::One(convs))
        } else {
            let n = w.count(|j| format!("{p}.convs.{j}"));
            let convs = (0..n)
                .map(|j| TimeConv1d::load(w, &format!("{p}.convs.{j}")))
                .collect::<Result<_>>()?;
            Ok(Self::Two(convs))
        }
    }

    fn with_bf16(self) -> Result<Self> {
        Ok(match self {
            Self::One(convs) => Self::One(
                convs
                    .into_iter()
                    .map(|(c1, c2)| Ok((c1.with_bf16()?, c2.with_bf16()?)))
                    .collect::<Result<_>>()?,
            ),
            Self::Two(convs) => Self::Two(
                convs
                    .into_iter()
                    .map(TimeConv1d::with_bf16)
                    .collect::<Result<_>>()?,
            ),
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        match self {
            Self::One(convs) => {
                for (c1, c2) in convs {
                    let xt = c1.forward_leaky(&x, LRELU_SLOPE, None)?;
                    x = c2.forward_leaky(&xt, LRELU_SLOPE, Some(&x))?;
                }
            }
            Self::Two(convs) => {
                for c in convs {
                    x = c.forward_leaky(&x, LRELU_SLOPE, Some(&x))?;
                }
            }
        }
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn the_blocks_mean_equals_candles_sum_and_divide() -> Result<()> {
        let dev = Device::Cpu;
        for (count, shape) in [(3, (1, 70_001, 3)), (2, (2, 5, 7)), (1, (1, 4, 4))] {
            let ys = (0..count)
                .map(|_| Tensor::randn(0f32, 1.0, shape, &dev))
                .collect::<Result<Vec<_>>>()?;
            let mut sum = ys[0].clone();
            for y in &ys[1..] {
                sum = (sum + y)?;
            }
            let want = (sum / count as f64)?;
            let got = mean(&ys)?;
            assert_eq!(got.dims(), want.dims());
            assert_eq!(
                got.flatten_all()?.to_vec1::<f32>()?,
                want.flatten_all()?.to_vec1::<f32>()?
            );
        }
        Ok(())
    }
}
