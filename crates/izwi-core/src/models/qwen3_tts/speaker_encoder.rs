//! The speaker encoder of Base checkpoints (ECAPA-TDNN): a log-mel spectrogram of a
//! voice sample to one vector in the talker's hidden size, the x-vector a cloned voice
//! is spoken with. Tensors are `[channels, time]`.

use candle_core::{Result, Tensor, D};
use candle_nn::VarBuilder;
use serde::Deserialize;

/// `speaker_encoder_config` of config.json.
#[derive(Debug, Clone, Deserialize)]
pub struct SpeakerEncoderConfig {
    pub mel_dim: usize,
    pub enc_dim: usize,
    pub enc_channels: Vec<usize>,
    pub enc_kernel_sizes: Vec<usize>,
    pub enc_dilations: Vec<usize>,
    pub enc_attention_channels: usize,
    pub enc_res2net_scale: usize,
    pub enc_se_channels: usize,
    #[serde(default = "default_rate")]
    pub sample_rate: u32,
}

fn default_rate() -> u32 {
    24_000
}

/// A convolution with torch's `padding="same", padding_mode="reflect"`.
struct SameConv {
    weight: Tensor,
    bias: Tensor,
    dilation: usize,
    left: usize,
    right: usize,
}

impl SameConv {
    fn load(
        vb: VarBuilder,
        cin: usize,
        cout: usize,
        kernel: usize,
        dilation: usize,
    ) -> Result<Self> {
        let total = dilation * (kernel - 1);
        Ok(Self {
            weight: vb.get((cout, cin, kernel), "weight")?,
            bias: vb.get(cout, "bias")?,
            dilation,
            left: total / 2,
            right: total - total / 2,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let len = x.dim(1)?;
        if self.left >= len || self.right >= len {
            candle_core::bail!("the reference audio is too short for the speaker encoder");
        }
        let index: Vec<u32> = (0..self.left)
            .map(|i| (self.left - i) as u32)
            .chain(0..len as u32)
            .chain((0..self.right).map(|i| (len - 2 - i) as u32))
            .collect();
        let index = Tensor::new(index.as_slice(), x.device())?;
        let padded = x.index_select(&index, 1)?.unsqueeze(0)?;
        padded
            .conv1d(&self.weight, 0, 1, self.dilation, 1)?
            .squeeze(0)?
            .broadcast_add(&self.bias.unsqueeze(1)?)
    }
}

/// Convolution then ReLU.
struct Tdnn(SameConv);

impl Tdnn {
    fn load(
        vb: VarBuilder,
        cin: usize,
        cout: usize,
        kernel: usize,
        dilation: usize,
    ) -> Result<Self> {
        Ok(Self(SameConv::load(
            vb.pp("conv"),
            cin,
            cout,
            kernel,
            dilation,
        )?))
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)?.relu()
    }
}

/// TDNN, Res2Net (channel groups, each after the previous one's output), TDNN,
/// squeeze-excitation, residual.
struct SeRes2Net {
    tdnn1: Tdnn,
    res2net: Vec<Tdnn>,
    tdnn2: Tdnn,
    se1: SameConv,
    se2: SameConv,
    scale: usize,
}

impl SeRes2Net {
    fn load(vb: VarBuilder, c: &SpeakerEncoderConfig, i: usize) -> Result<Self> {
        let (cin, cout) = (c.enc_channels[i - 1], c.enc_channels[i]);
        let (kernel, dilation, scale) = (
            c.enc_kernel_sizes[i],
            c.enc_dilations[i],
            c.enc_res2net_scale,
        );
        let part = cout / scale;
        Ok(Self {
            tdnn1: Tdnn::load(vb.pp("tdnn1"), cin, cout, 1, 1)?,
            res2net: (0..scale - 1)
                .map(|j| {
                    Tdnn::load(
                        vb.pp(format!("res2net_block.blocks.{j}")),
                        part,
                        part,
                        kernel,
                        dilation,
                    )
                })
                .collect::<Result<Vec<_>>>()?,
            tdnn2: Tdnn::load(vb.pp("tdnn2"), cout, cout, 1, 1)?,
            se1: SameConv::load(vb.pp("se_block.conv1"), cout, c.enc_se_channels, 1, 1)?,
            se2: SameConv::load(vb.pp("se_block.conv2"), c.enc_se_channels, cout, 1, 1)?,
            scale,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.tdnn1.forward(x)?;
        let parts = h.chunk(self.scale, 0)?;
        let mut outs: Vec<Tensor> = vec![parts[0].clone()];
        for (i, part) in parts.iter().enumerate().skip(1) {
            let input = if i == 1 {
                part.clone()
            } else {
                (part + &outs[i - 1])?
            };
            outs.push(self.res2net[i - 1].forward(&input)?);
        }
        let h = self.tdnn2.forward(&Tensor::cat(&outs, 0)?)?;
        let s = self.se1.forward(&h.mean_keepdim(1)?)?.relu()?;
        let s = candle_nn::ops::sigmoid(&self.se2.forward(&s)?)?;
        h.broadcast_mul(&s)? + x
    }
}

pub struct SpeakerEncoder {
    first: Tdnn,
    blocks: Vec<SeRes2Net>,
    mfa: Tdnn,
    asp_tdnn: Tdnn,
    asp_conv: SameConv,
    fc: SameConv,
}

/// The reference floors variances at this before the square root.
const EPS: f64 = 1e-12;

impl SpeakerEncoder {
    /// Loads the weights under `speaker_encoder.`.
    pub fn load(c: &SpeakerEncoderConfig, vb: VarBuilder) -> Result<Self> {
        let n = c.enc_channels.len();
        if n < 3 || c.enc_kernel_sizes.len() != n || c.enc_dilations.len() != n {
            candle_core::bail!("the speaker encoder's channels, kernels and dilations disagree");
        }
        let last = c.enc_channels[n - 1];
        Ok(Self {
            first: Tdnn::load(
                vb.pp("blocks.0"),
                c.mel_dim,
                c.enc_channels[0],
                c.enc_kernel_sizes[0],
                c.enc_dilations[0],
            )?,
            blocks: (1..n - 1)
                .map(|i| SeRes2Net::load(vb.pp(format!("blocks.{i}")), c, i))
                .collect::<Result<Vec<_>>>()?,
            mfa: Tdnn::load(
                vb.pp("mfa"),
                last,
                last,
                c.enc_kernel_sizes[n - 1],
                c.enc_dilations[n - 1],
            )?,
            asp_tdnn: Tdnn::load(vb.pp("asp.tdnn"), last * 3, c.enc_attention_channels, 1, 1)?,
            asp_conv: SameConv::load(vb.pp("asp.conv"), c.enc_attention_channels, last, 1, 1)?,
            fc: SameConv::load(vb.pp("fc"), last * 2, c.enc_dim, 1, 1)?,
        })
    }

    /// The embedding of a log-mel spectrogram (`[frames, mel_dim]`): `[enc_dim]`.
    pub fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let mut h = self.first.forward(&mel.t()?.contiguous()?)?;
        let mut kept = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            h = block.forward(&h)?;
            kept.push(h.clone());
        }
        let h = self.mfa.forward(&Tensor::cat(&kept, 0)?)?;
        let len = h.dim(1)?;
        // Attentive statistics pooling: global mean and deviation as context, then a
        // softmax over time weighting the mean and deviation that are kept.
        let (mean, std) = statistics(&h, &Tensor::ones_like(&h)?.affine(1.0 / len as f64, 0.0)?)?;
        let context = Tensor::cat(
            &[
                h.clone(),
                mean.unsqueeze(1)?.broadcast_as(h.shape())?.contiguous()?,
                std.unsqueeze(1)?.broadcast_as(h.shape())?.contiguous()?,
            ],
            0,
        )?;
        let attention = self
            .asp_conv
            .forward(&self.asp_tdnn.forward(&context)?.tanh()?)?;
        let weights = candle_nn::ops::softmax(&attention, D::Minus1)?;
        let (mean, std) = statistics(&h, &weights)?;
        let pooled = Tensor::cat(&[mean, std], 0)?.unsqueeze(1)?;
        self.fc.forward(&pooled)?.squeeze(1)
    }
}

/// Weighted mean and standard deviation over time of `x` (`[channels, time]`).
fn statistics(x: &Tensor, weights: &Tensor) -> Result<(Tensor, Tensor)> {
    let mean = (x * weights)?.sum(1)?;
    let centred = x.broadcast_sub(&mean.unsqueeze(1)?)?;
    let var = (centred.sqr()? * weights)?.sum(1)?;
    let std = var.clamp(EPS, f64::INFINITY)?.sqrt()?;
    Ok((mean, std))
}
