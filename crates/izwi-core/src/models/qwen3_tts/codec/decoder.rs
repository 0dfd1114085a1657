//! The 12 Hz speech tokenizer's decoder: frames of 16 codes to 24 kHz audio (quantizer,
//! causal convolution, transformer, two ×2 upsamplings with ConvNeXt, four upsampling
//! blocks of SnakeBeta and residual units, 1920 samples per frame in all).

use std::path::Path;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;

use super::config::CodecConfig;
use super::layers::{CausalConv, CausalTransConv, ConvNeXt, ResidualUnit, SnakeBeta};
use super::quantizer::Quantizer;
use super::transformer::CodecTransformer;
use crate::models::shared::weights::load_model_dir;

/// The reference decodes long utterances in chunks of this many frames...
pub const CHUNK_FRAMES: usize = 300;
/// ...each decoded with up to this many frames before it, whose audio is dropped.
pub const LEFT_CONTEXT_FRAMES: usize = 25;

struct UpsampleBlock {
    snake: SnakeBeta,
    upsample: CausalTransConv,
    units: Vec<ResidualUnit>,
}

pub struct CodecDecoder {
    quantizer: Quantizer,
    pre_conv: CausalConv,
    transformer: CodecTransformer,
    upsample: Vec<(CausalTransConv, ConvNeXt)>,
    input_conv: CausalConv,
    blocks: Vec<UpsampleBlock>,
    output_snake: SnakeBeta,
    output_conv: CausalConv,
    codebooks: usize,
    codebook_size: usize,
    samples_per_frame: usize,
    sample_rate: u32,
    device: Device,
}

impl CodecDecoder {
    /// Loads `config.json` and the weights of a `speech_tokenizer/` folder.
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Self> {
        let (config, vb): (CodecConfig, _) = load_model_dir(dir, DType::F32, device)?;
        Self::load(&config, vb.pp("decoder"))
    }

    pub fn load(config: &CodecConfig, vb: VarBuilder) -> Result<Self> {
        let c = &config.decoder_config;
        if let Some(act) = &c.hidden_act {
            if act != "silu" {
                candle_core::bail!("codec activation {act} is not supported");
            }
        }
        if c.upsampling() != config.decode_upsample_rate {
            candle_core::bail!(
                "the codec's upsampling makes {} samples per frame, its config says {}",
                c.upsampling(),
                config.decode_upsample_rate
            );
        }
        let latent = c.latent_dim;
        let upsample = c
            .upsampling_ratios
            .iter()
            .enumerate()
            .map(|(i, &factor)| {
                let vb = vb.pp(format!("upsample.{i}"));
                Ok((
                    CausalTransConv::load(vb.pp("0"), (latent, latent), factor, factor)?,
                    ConvNeXt::load(vb.pp("1"), latent)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let stages = c.upsample_rates.len();
        let blocks = c
            .upsample_rates
            .iter()
            .enumerate()
            .map(|(i, &rate)| {
                let vb = vb.pp(format!("decoder.{}.block", i + 1));
                let (cin, cout) = (c.decoder_dim >> i, c.decoder_dim >> (i + 1));
                Ok(UpsampleBlock {
                    snake: SnakeBeta::load(vb.pp("0"), cin)?,
                    upsample: CausalTransConv::load(vb.pp("1"), (cin, cout), 2 * rate, rate)?,
                    units: [1, 3, 9]
                        .iter()
                        .enumerate()
                        .map(|(j, &dilation)| ResidualUnit::load(vb.pp(j + 2), cout, dilation))
                        .collect::<Result<Vec<_>>>()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let out_dim = c.decoder_dim >> stages;
        Ok(Self {
            quantizer: Quantizer::load(vb.pp("quantizer"), c)?,
            pre_conv: CausalConv::load(vb.pp("pre_conv"), (c.codebook_dim, latent), 3, 1)?,
            transformer: CodecTransformer::load(vb.pp("pre_transformer"), c)?,
            upsample,
            input_conv: CausalConv::load(vb.pp("decoder.0"), (latent, c.decoder_dim), 7, 1)?,
            blocks,
            output_snake: SnakeBeta::load(vb.pp(format!("decoder.{}", stages + 1)), out_dim)?,
            output_conv: CausalConv::load(
                vb.pp(format!("decoder.{}", stages + 2)),
                (out_dim, 1),
                7,
                1,
            )?,
            codebooks: c.num_quantizers,
            codebook_size: c.codebook_size,
            samples_per_frame: config.decode_upsample_rate,
            sample_rate: config.output_sample_rate,
            device: vb.device().clone(),
        })
    }

    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    pub fn samples_per_frame(&self) -> usize {
        self.samples_per_frame
    }

    /// The audio of `frames` (each a code per codebook), decoded in one pass.
    pub fn forward(&self, frames: &[Vec<u32>]) -> Result<Vec<f32>> {
        if frames.is_empty() {
            return Ok(Vec::new());
        }
        for (k, frame) in frames.iter().enumerate() {
            if frame.len() != self.codebooks {
                candle_core::bail!(
                    "frame {k} has {} codes, the codec takes {}",
                    frame.len(),
                    self.codebooks
                );
            }
            if let Some(&code) = frame.iter().find(|&&c| c as usize >= self.codebook_size) {
                candle_core::bail!("frame {k} has code {code}, outside the codebook");
            }
        }
        let flat: Vec<u32> = frames.iter().flatten().copied().collect();
        let codes = Tensor::from_vec(flat, (frames.len(), self.codebooks), &self.device)?;
        let x = self.quantizer.decode(&codes)?.t()?.unsqueeze(0)?;
        let x = self.pre_conv.forward(&x)?.squeeze(0)?.t()?;
        let mut x = self.transformer.forward(&x)?.t()?.unsqueeze(0)?;
        for (up, convnext) in &self.upsample {
            x = convnext.forward(&up.forward(&x)?)?;
        }
        x = self.input_conv.forward(&x)?;
        for block in &self.blocks {
            x = block.upsample.forward(&block.snake.forward(&x)?)?;
            for unit in &block.units {
                x = unit.forward(&x)?;
            }
        }
        let wav = self.output_conv.forward(&self.output_snake.forward(&x)?)?;
        wav.clamp(-1f32, 1f32)?.flatten_all()?.to_vec1::<f32>()
    }

    /// The audio of `frames` as the reference decodes it: chunks of `chunk` frames, each
    /// with up to `left_context` frames before it whose audio is dropped.
    pub fn decode_chunked(
        &self,
        frames: &[Vec<u32>],
        chunk: usize,
        left_context: usize,
    ) -> Result<Vec<f32>> {
        let mut wav = Vec::with_capacity(frames.len() * self.samples_per_frame);
        let mut start = 0;
        while start < frames.len() {
            let end = (start + chunk.max(1)).min(frames.len());
            wav.extend(self.decode_span(frames, start, end, left_context)?);
            start = end;
        }
        Ok(wav)
    }

    /// `decode_chunked` with the reference's chunk and left context: what it returns for
    /// a whole utterance.
    pub fn decode(&self, frames: &[Vec<u32>]) -> Result<Vec<f32>> {
        self.decode_chunked(frames, CHUNK_FRAMES, LEFT_CONTEXT_FRAMES)
    }

    /// The audio of frames `start..end`, decoded after up to `left_context` frames of
    /// `frames` before them.
    pub(super) fn decode_span(
        &self,
        frames: &[Vec<u32>],
        start: usize,
        end: usize,
        left_context: usize,
    ) -> Result<Vec<f32>> {
        // As the reference: the full context only once there is more than it before.
        let context = if start > left_context {
            left_context
        } else {
            start
        };
        let wav = self.forward(&frames[start - context..end])?;
        Ok(wav[context * self.samples_per_frame..].to_vec())
    }
}
