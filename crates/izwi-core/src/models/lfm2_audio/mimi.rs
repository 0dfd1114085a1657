//! Mimi frames → 24 kHz audio, with candle-transformers' Mimi (it matches
//! liquid-audio's `moshi` Mimi on our fixture; tests/lfm2_audio_parity.rs).
//!
//! candle-transformers reads Hugging Face transformers' names for Mimi's tensors; the
//! checkpoint LFM2-Audio ships has Kyutai's own (moshi's) names, and one fused
//! query/key/value matrix per attention layer whose query and key rows rotate in
//! interleaved pairs (transformers' conversion reorders them into halves, which
//! candle's RoPE expects). [`MoshiNames`] serves the one from the other.
//!
//! LFM2-Audio ships Kyutai's Mimi checkpoint (`tokenizer-e351c8d8-checkpoint125.safetensors`)
//! and decodes its first 8 codebooks; the codec's shape is fixed in liquid-audio's code,
//! not in a config file, and is [`MimiShape::kyutai`] here. A Mimi of another shape
//! (the tests' tiny one) says its widths in `mimi.json` beside its weights.

use std::path::Path;

use candle_core::{DType, Device, Result, Shape, StreamTensor, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};
use candle_transformers::models::mimi::{self, conv, seanet, transformer};
use serde::Deserialize;

use crate::models::shared::weights::map_safetensors;

/// The Mimi weights' file name in an LFM2-Audio folder.
pub const MIMI_FILE: &str = "tokenizer-e351c8d8-checkpoint125.safetensors";
/// Beside [`MIMI_FILE`]: the widths of a Mimi that is not Kyutai's.
pub const MIMI_SHAPE_FILE: &str = "mimi.json";
/// Output samples per frame (24 kHz at 12.5 frames/s).
pub const SAMPLES_PER_FRAME: usize = 1920;

/// The widths that vary between Mimi builds; the rest (SEANet ratios 8·6·5·4, causal,
/// kernels 7/3/3, ELU, a 2x learnt resampler, RoPE transformers with layer scale
/// 0.01 and context 250, 2048-entry codebooks) is Kyutai's fixed design.
#[derive(Debug, Clone, Deserialize)]
pub struct MimiShape {
    pub seanet: SeanetShape,
    pub quantizer: QuantizerShape,
    pub transformer: TransformerShape,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SeanetShape {
    pub dimension: usize,
    pub n_filters: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QuantizerShape {
    pub dimension: usize,
    pub n_q: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TransformerShape {
    pub d_model: usize,
    pub num_heads: usize,
    pub num_layers: usize,
    pub dim_feedforward: usize,
}

impl MimiShape {
    /// Kyutai's released Mimi, as LFM2-Audio decodes it (8 codebooks).
    pub fn kyutai() -> Self {
        Self {
            seanet: SeanetShape {
                dimension: 512,
                n_filters: 64,
            },
            quantizer: QuantizerShape {
                dimension: 256,
                n_q: 8,
            },
            transformer: TransformerShape {
                d_model: 512,
                num_heads: 8,
                num_layers: 8,
                dim_feedforward: 2048,
            },
        }
    }

    /// The shape of the Mimi in `dir`: its `mimi.json` if it has one, Kyutai's
    /// otherwise.
    pub fn of_dir(dir: &Path) -> Result<Self> {
        let path = dir.join(MIMI_SHAPE_FILE);
        if !path.is_file() {
            return Ok(Self::kyutai());
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| candle_core::Error::msg(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| candle_core::Error::msg(format!("invalid {}: {e}", path.display())))
    }

    fn config(&self) -> mimi::Config {
        let mut config = mimi::Config::v0_1(Some(self.quantizer.n_q));
        config.seanet = seanet::Config {
            dimension: self.seanet.dimension,
            n_filters: self.seanet.n_filters,
            // The checkpoint's convolutions are stored with weight norm folded in.
            norm: conv::Norm::WeightNorm,
            ..config.seanet
        };
        config.transformer = transformer::Config {
            d_model: self.transformer.d_model,
            num_heads: self.transformer.num_heads,
            num_layers: self.transformer.num_layers,
            dim_feedforward: self.transformer.dim_feedforward,
            ..config.transformer
        };
        config.quantizer_dim = self.quantizer.dimension;
        config
    }
}

/// Cloning is cheap (the weights are shared) and gives a decoder with its own
/// streaming state, so turns decoded at once do not disturb each other.
#[derive(Clone)]
pub struct MimiDecoder {
    model: mimi::Model,
    codebooks: usize,
    device: Device,
}

impl MimiDecoder {
    /// Loads Mimi from its safetensors file.
    pub fn load(path: &Path, shape: &MimiShape, device: &Device) -> Result<Self> {
        let moshi = map_safetensors(&[path], DType::F32, device)?;
        let vb = VarBuilder::from_backend(
            Box::new(MoshiNames {
                moshi,
                d_model: shape.transformer.d_model,
                heads: shape.transformer.num_heads,
            }),
            DType::F32,
            device.clone(),
        );
        Ok(Self {
            model: mimi::Model::new(shape.config(), vb)?,
            codebooks: shape.quantizer.n_q,
            device: device.clone(),
        })
    }

    /// Frames (each `codebooks` codes below 2048) → their audio, 24 kHz mono, all at
    /// once. The streaming state is reset first and after.
    pub fn decode(&mut self, frames: &[Vec<u32>]) -> Result<Vec<f32>> {
        let codes = self.codes(frames)?;
        self.model.reset_state();
        let audio = self.model.decode(&codes)?;
        self.model.reset_state();
        audio.flatten_all()?.to_vec1::<f32>()
    }

    /// Streaming: the audio of the next frames of an utterance, given after the
    /// previous ones (the causal decoder keeps its state between calls).
    pub fn decode_next(&mut self, frames: &[Vec<u32>]) -> Result<Vec<f32>> {
        let codes = self.codes(frames)?;
        let audio = self.model.decode_step(&StreamTensor::from_tensor(codes))?;
        match audio.as_option() {
            Some(audio) => audio.flatten_all()?.to_vec1::<f32>(),
            None => Ok(Vec::new()),
        }
    }

    /// Forgets the utterance being streamed.
    pub fn reset(&mut self) {
        self.model.reset_state();
    }

    /// `[1, codebooks, frames]` u32.
    fn codes(&self, frames: &[Vec<u32>]) -> Result<Tensor> {
        let mut data = vec![0u32; self.codebooks * frames.len()];
        for (t, frame) in frames.iter().enumerate() {
            if frame.len() != self.codebooks {
                candle_core::bail!(
                    "a frame of {} codes, Mimi takes {}",
                    frame.len(),
                    self.codebooks
                );
            }
            for (q, &code) in frame.iter().enumerate() {
                if code >= 2048 {
                    candle_core::bail!("Mimi code {code} is out of range (0..2048)");
                }
                data[q * frames.len() + t] = code;
            }
        }
        Tensor::from_vec(data, (1, self.codebooks, frames.len()), &self.device)
    }
}

/// Kyutai's tensor names, read under transformers' names.
struct MoshiNames {
    moshi: VarBuilder<'static>,
    d_model: usize,
    heads: usize,
}

/// Where a transformers name lives in Kyutai's checkpoint: a tensor, or rows of one
/// (with each head's rows reordered from interleaved pairs into halves).
struct Source {
    name: String,
    rows: Option<(usize, usize)>,
    to_halves: bool,
}

impl MoshiNames {
    fn source(&self, name: &str) -> Option<Source> {
        let whole = |name: String| {
            Some(Source {
                name,
                rows: None,
                to_halves: false,
            })
        };
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            // SEANet: `layers.{i}.conv.*` is `model.{i}.conv.conv.*` or, for the
            // decoder's upsampling, `model.{i}.convtr.convtr.*`.
            [coder @ ("encoder" | "decoder"), "layers", i, "conv", leaf] => {
                let conv = format!("{coder}.model.{i}.conv.conv.{leaf}");
                if self.moshi.contains_tensor(&conv) {
                    whole(conv)
                } else {
                    whole(format!("{coder}.model.{i}.convtr.convtr.{leaf}"))
                }
            }
            [coder @ ("encoder" | "decoder"), "layers", i, "block", j, "conv", leaf] => {
                whole(format!("{coder}.model.{i}.block.{j}.conv.conv.{leaf}"))
            }
            ["upsample", "conv", leaf] => whole(format!("upsample.convtr.convtr.convtr.{leaf}")),
            ["downsample", "conv", leaf] => whole(format!("downsample.conv.conv.conv.{leaf}")),
            [t @ ("encoder_transformer" | "decoder_transformer"), "layers", i, rest @ ..] => {
                let layer = format!("{t}.transformer.layers.{i}");
                let d = self.d_model;
                let rows = |k: usize| {
                    Some(Source {
                        name: format!("{layer}.self_attn.in_projs.0.weight"),
                        rows: Some((k * d, d)),
                        to_halves: k < 2,
                    })
                };
                match rest {
                    ["self_attn", "q_proj", "weight"] => rows(0),
                    ["self_attn", "k_proj", "weight"] => rows(1),
                    ["self_attn", "v_proj", "weight"] => rows(2),
                    ["self_attn", "o_proj", leaf] => {
                        whole(format!("{layer}.self_attn.out_projs.0.{leaf}"))
                    }
                    ["input_layernorm", leaf] => whole(format!("{layer}.norm1.{leaf}")),
                    ["post_attention_layernorm", leaf] => whole(format!("{layer}.norm2.{leaf}")),
                    ["self_attn_layer_scale", leaf] => {
                        whole(format!("{layer}.layer_scale_1.{leaf}"))
                    }
                    ["mlp_layer_scale", leaf] => whole(format!("{layer}.layer_scale_2.{leaf}")),
                    ["mlp", "fc1", leaf] => whole(format!("{layer}.linear1.{leaf}")),
                    ["mlp", "fc2", leaf] => whole(format!("{layer}.linear2.{leaf}")),
                    _ => None,
                }
            }
            ["quantizer", rvq, rest @ ..] => {
                let rvq = match *rvq {
                    "semantic_residual_vector_quantizer" => "rvq_first",
                    "acoustic_residual_vector_quantizer" => "rvq_rest",
                    _ => return None,
                };
                match rest {
                    ["layers", i, "codebook", leaf] => {
                        let leaf = match *leaf {
                            "embed_sum" => "embedding_sum",
                            "initialized" => "_initialized",
                            other => other,
                        };
                        whole(format!("quantizer.{rvq}.vq.layers.{i}._codebook.{leaf}"))
                    }
                    [proj @ ("input_proj" | "output_proj"), leaf] => {
                        whole(format!("quantizer.{rvq}.{proj}.{leaf}"))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn load(&self, name: &str) -> Result<Tensor> {
        let Some(source) = self.source(name) else {
            candle_core::bail!("Mimi tensor {name} has no counterpart in the checkpoint");
        };
        let tensor = self.moshi.get_unchecked(&source.name)?;
        let Some((start, len)) = source.rows else {
            return Ok(tensor);
        };
        let rows = tensor.narrow(0, start, len)?;
        if !source.to_halves {
            return Ok(rows);
        }
        let (out, inp) = rows.dims2()?;
        let head_dim = out / self.heads;
        rows.reshape((self.heads, head_dim / 2, 2, inp))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((out, inp))
    }
}

impl SimpleBackend for MoshiNames {
    fn get(&self, shape: Shape, name: &str, _: Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        let tensor = self.load(name)?;
        if tensor.shape() != &shape {
            candle_core::bail!(
                "Mimi tensor {name} has shape {:?}, expected {shape:?}",
                tensor.shape()
            );
        }
        tensor.to_dtype(dtype)?.to_device(dev)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> Result<Tensor> {
        self.load(name)?.to_dtype(dtype)?.to_device(dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.source(name)
            .is_some_and(|s| self.moshi.contains_tensor(&s.name))
    }
}
