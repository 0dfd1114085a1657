//! The 12 Hz speech tokenizer's encoder: 24 kHz audio to frames of codes, the codes of
//! a voice sample that in-context cloning starts from. It is the Mimi encoder of the
//! reference (transformers' `MimiModel.encode`): SEANet convolutions down to 25 Hz, a
//! causal transformer, a ×2 downsampling to 12.5 Hz and a split residual quantizer.

use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{layer_norm, LayerNorm, VarBuilder};

use super::config::{CodecConfig, CodecEncoderConfig};
use super::transformer::Attention;
use crate::models::shared::activations::gelu_erf;
use crate::models::shared::linear::Linear;
use crate::models::shared::rope::RotaryEmbedding;
use crate::models::shared::weights::load_model_dir;

/// How a convolution pads its input, as Mimi's `pad_mode` says.
#[derive(Clone, Copy, PartialEq)]
enum Padding {
    Zeros,
    /// The edge samples repeated.
    Replicate,
}

/// Mimi's convolution: all of `(kernel - 1) · dilation + 1 - stride` padding on the
/// left, and on the right what makes the last stride whole, so `n` samples give
/// `ceil(n / stride)` outputs.
struct Conv {
    weight: Tensor,
    bias: Option<Tensor>,
    stride: usize,
    dilation: usize,
    padding: Padding,
}

impl Conv {
    fn load(
        vb: VarBuilder,
        (cin, cout, kernel): (usize, usize, usize),
        (stride, dilation): (usize, usize),
        bias: bool,
        padding: Padding,
    ) -> Result<Self> {
        Ok(Self {
            weight: vb.get((cout, cin, kernel), "conv.weight")?,
            bias: if bias {
                Some(vb.get(cout, "conv.bias")?.reshape((1, cout, 1))?)
            } else {
                None
            },
            stride,
            dilation,
            padding,
        })
    }

    /// `x`: `[1, channels, time]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let len = x.dim(2)?;
        let kernel = (self.weight.dim(2)? - 1) * self.dilation + 1;
        let left = kernel - self.stride;
        let right = len.div_ceil(self.stride) * self.stride - len;
        let x = match self.padding {
            Padding::Zeros => x.pad_with_zeros(2, left, right)?,
            Padding::Replicate => x.pad_with_same(2, left, right)?,
        };
        let y = x.conv1d(&self.weight, 0, self.stride, self.dilation, 1)?;
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// SEANet's residual block: ELU, a dilated convolution narrowing the channels, ELU, a
/// 1×1 convolution widening them back, added to the input.
struct ResnetBlock {
    narrow: Conv,
    widen: Conv,
}

impl ResnetBlock {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.narrow.forward(&x.elu(1.0)?)?;
        x + self.widen.forward(&h.elu(1.0)?)?
    }
}

enum Stage {
    Conv(Conv),
    Resnet(ResnetBlock),
    Elu,
}

struct Layer {
    input_layernorm: LayerNorm,
    attn: Attention,
    attn_scale: Tensor,
    post_attention_layernorm: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    mlp_scale: Tensor,
}

/// One residual vector quantizer: each codebook quantizes what the ones before it left.
struct Rvq {
    input_proj: Option<Tensor>,
    /// Per codebook, `[codebook_size, dim]`.
    codebooks: Vec<Tensor>,
}

/// Each code's embedding is its summed embedding over its usage count, floored here.
const USAGE_FLOOR: f64 = 1e-5;

impl Rvq {
    fn load(vb: VarBuilder, codebooks: usize, c: &CodecEncoderConfig) -> Result<Self> {
        let dim = c.vector_quantization_hidden_dimension;
        let input_proj = if dim != c.hidden_size {
            Some(
                vb.get((dim, c.hidden_size, 1), "input_proj.weight")?
                    .squeeze(2)?
                    .t()?
                    .contiguous()?,
            )
        } else {
            None
        };
        let codebooks = (0..codebooks)
            .map(|i| {
                let book = vb.pp(format!("layers.{i}.codebook"));
                let sum = book.get((c.codebook_size, dim), "embed_sum")?;
                let usage = book
                    .get(c.codebook_size, "cluster_usage")?
                    .clamp(USAGE_FLOOR, f64::INFINITY)?;
                sum.broadcast_div(&usage.unsqueeze(1)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            input_proj,
            codebooks,
        })
    }

    /// `x`: `[time, hidden]` → per codebook the nearest code of every frame.
    fn encode(&self, x: &Tensor) -> Result<Vec<Vec<u32>>> {
        let mut residual = match &self.input_proj {
            Some(w) => x.matmul(w)?,
            None => x.clone(),
        };
        let mut codes = Vec::with_capacity(self.codebooks.len());
        for book in &self.codebooks {
            // The nearest centroid: the least |e|² - 2 x·e (|x|² is the same for all).
            let norms = book.sqr()?.sum(1)?.unsqueeze(0)?;
            let scores = norms.broadcast_sub(&(residual.matmul(&book.t()?)? * 2.0)?)?;
            let ids = scores.argmin(D::Minus1)?;
            residual = (residual - book.index_select(&ids, 0)?)?;
            codes.push(ids.to_vec1::<u32>()?);
        }
        Ok(codes)
    }
}

pub struct CodecEncoder {
    stages: Vec<Stage>,
    layers: Vec<Layer>,
    rope: RotaryEmbedding,
    downsample: Conv,
    semantic: Rvq,
    acoustic: Rvq,
    samples_per_frame: usize,
    sample_rate: u32,
    device: Device,
}

impl CodecEncoder {
    /// Loads `config.json` and the weights of a `speech_tokenizer/` folder.
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Self> {
        let (config, vb): (CodecConfig, _) = load_model_dir(dir, DType::F32, device)?;
        Self::load(&config, vb.pp("encoder"))
    }

    pub fn load(config: &CodecConfig, vb: VarBuilder) -> Result<Self> {
        let Some(c) = &config.encoder_config else {
            candle_core::bail!("the speech tokenizer has no encoder");
        };
        if c.audio_channels != 1 || !c.use_causal_conv || c.use_conv_shortcut {
            candle_core::bail!(
                "only a mono, causal codec encoder without shortcut convolutions is supported"
            );
        }
        if c.hidden_act != "gelu" {
            candle_core::bail!("codec encoder activation {} is not supported", c.hidden_act);
        }
        let padding = match c.pad_mode.as_str() {
            "constant" => Padding::Zeros,
            "replicate" => Padding::Replicate,
            other => candle_core::bail!("codec encoder padding {other} is not supported"),
        };
        let Some(frame_rate) = c.frame_rate else {
            candle_core::bail!("the codec encoder's config has no frame rate");
        };
        // Mimi's own rate before the downsampling, and the downsampling's kernel.
        let conv_rate = (c.sampling_rate as usize).div_ceil(c.hop());
        let kernel = 2 * (conv_rate as f64 / frame_rate) as usize;
        if c.hop() * 2 != config.encode_downsample_rate {
            candle_core::bail!(
                "the codec encoder makes a frame of {} samples, its config says {}",
                c.hop() * 2,
                config.encode_downsample_rate
            );
        }
        let valid = config.encoder_valid_num_quantizers;
        if valid <= c.num_semantic_quantizers || valid > c.num_quantizers {
            candle_core::bail!(
                "the codec encoder has {} codebooks; {valid} of them cannot be used",
                c.num_quantizers
            );
        }

        let layers_vb = vb.pp("encoder.layers");
        let mut stages = Vec::new();
        let conv = |i: usize, shape, stride_dilation| {
            Conv::load(layers_vb.pp(i), shape, stride_dilation, true, padding)
        };
        stages.push(Stage::Conv(conv(
            0,
            (c.audio_channels, c.num_filters, c.kernel_size),
            (1, 1),
        )?));
        let mut width = c.num_filters;
        for &ratio in c.upsampling_ratios.iter().rev() {
            for j in 0..c.num_residual_layers {
                let block = layers_vb.pp(stages.len()).pp("block");
                let hidden = width / c.compress;
                let dilation = c.dilation_growth_rate.pow(j as u32);
                stages.push(Stage::Resnet(ResnetBlock {
                    narrow: Conv::load(
                        block.pp(1),
                        (width, hidden, c.residual_kernel_size),
                        (1, dilation),
                        true,
                        padding,
                    )?,
                    widen: Conv::load(block.pp(3), (hidden, width, 1), (1, 1), true, padding)?,
                }));
            }
            stages.push(Stage::Elu);
            stages.push(Stage::Conv(conv(
                stages.len(),
                (width, width * 2, ratio * 2),
                (ratio, 1),
            )?));
            width *= 2;
        }
        stages.push(Stage::Elu);
        stages.push(Stage::Conv(conv(
            stages.len(),
            (width, c.hidden_size, c.last_kernel_size),
            (1, 1),
        )?));

        let (hidden, d) = (c.hidden_size, c.head_dim());
        let (heads, kv_heads) = (c.num_attention_heads, c.num_key_value_heads);
        let layers = (0..c.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("encoder_transformer.layers.{i}"));
                let attn = vb.pp("self_attn");
                Ok(Layer {
                    input_layernorm: layer_norm(hidden, c.norm_eps, vb.pp("input_layernorm"))?,
                    attn: Attention::load(attn, hidden, (heads, kv_heads, d), c.attention_bias)?,
                    attn_scale: vb.get(hidden, "self_attn_layer_scale.scale")?,
                    post_attention_layernorm: layer_norm(
                        hidden,
                        c.norm_eps,
                        vb.pp("post_attention_layernorm"),
                    )?,
                    fc1: Linear::load_no_bias(hidden, c.intermediate_size, vb.pp("mlp.fc1"))?,
                    fc2: Linear::load_no_bias(c.intermediate_size, hidden, vb.pp("mlp.fc2"))?,
                    mlp_scale: vb.get(hidden, "mlp_layer_scale.scale")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let quantizer = vb.pp("quantizer");
        Ok(Self {
            stages,
            layers,
            rope: RotaryEmbedding::new(
                d,
                c.max_position_embeddings,
                c.rope_theta,
                None,
                vb.dtype(),
                vb.device(),
            )?,
            downsample: Conv::load(
                vb.pp("downsample"),
                (hidden, hidden, kernel),
                (2, 1),
                false,
                Padding::Replicate,
            )?,
            semantic: Rvq::load(
                quantizer.pp("semantic_residual_vector_quantizer"),
                c.num_semantic_quantizers,
                c,
            )?,
            acoustic: Rvq::load(
                quantizer.pp("acoustic_residual_vector_quantizer"),
                valid - c.num_semantic_quantizers,
                c,
            )?,
            samples_per_frame: config.encode_downsample_rate,
            sample_rate: config.input_sample_rate,
            device: vb.device().clone(),
        })
    }

    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// What the quantizer takes: `[frames, hidden]` for mono samples at
    /// [`CodecEncoder::sample_rate`], one frame per started 1920 samples.
    pub fn latent(&self, samples: &[f32]) -> Result<Tensor> {
        if samples.is_empty() {
            candle_core::bail!("no audio to encode");
        }
        let mut x = Tensor::new(samples, &self.device)?.reshape((1, 1, samples.len()))?;
        for stage in &self.stages {
            x = match stage {
                Stage::Conv(conv) => conv.forward(&x)?,
                Stage::Resnet(block) => block.forward(&x)?,
                Stage::Elu => x.elu(1.0)?,
            };
        }
        let x = self.transformer(&x.squeeze(0)?.t()?.contiguous()?)?;
        let x = self.downsample.forward(&x.t()?.unsqueeze(0)?)?;
        x.squeeze(0)?.t()?.contiguous()
    }

    /// The frames of codes (codebook 0 first) of mono samples at
    /// [`CodecEncoder::sample_rate`].
    pub fn encode(&self, samples: &[f32]) -> Result<Vec<Vec<u32>>> {
        let latent = self.latent(samples)?;
        let books: Vec<Vec<u32>> = self
            .semantic
            .encode(&latent)?
            .into_iter()
            .chain(self.acoustic.encode(&latent)?)
            .collect();
        let frames = samples.len().div_ceil(self.samples_per_frame);
        Ok((0..frames.min(latent.dim(0)?))
            .map(|t| books.iter().map(|book| book[t]).collect())
            .collect())
    }

    /// `x`: `[time, hidden]`. The reference's mask is causal over every earlier frame:
    /// transformers' Mimi does not apply the config's sliding window outside flash
    /// attention, and with it the same audio would give other codes.
    fn transformer(&self, x: &Tensor) -> Result<Tensor> {
        let len = x.dim(0)?;
        let positions = Tensor::arange(0u32, len as u32, x.device())?;
        let mask: Vec<f32> = (0..len)
            .flat_map(|i| (0..len).map(move |j| if j <= i { 0.0 } else { f32::NEG_INFINITY }))
            .collect();
        let mask = Tensor::from_vec(mask, (len, len), x.device())?;
        let mut x = x.clone();
        for layer in &self.layers {
            let h = layer.input_layernorm.forward(&x)?;
            let h = layer.attn.forward(&h, &self.rope, &positions, &mask)?;
            x = (x + h.broadcast_mul(&layer.attn_scale)?)?;
            let h = layer.post_attention_layernorm.forward(&x)?;
            let h = layer.fc2.forward(&gelu_erf(&layer.fc1.forward(&h)?)?)?;
            x = (x + h.broadcast_mul(&layer.mlp_scale)?)?;
        }
        Ok(x)
    }
}
