//! Whisper's encoder and decoder. The decoder's self-attention runs on the engine's
//! paged KV cache; its cross-attention reads keys and values computed once per request
//! from the encoder output.

use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{
    conv1d, embedding, layer_norm, Conv1d, Conv1dConfig, Embedding, LayerNorm, VarBuilder,
};

use super::config::WhisperConfig;
use crate::engine::{ForwardBatch, LayerKvCache};
use crate::models::shared::activations::{gelu_erf, softmax_last_dim};
use crate::models::shared::block_attention;
use crate::models::shared::half_weights;
use crate::models::shared::linear::{Linear, MANY_ROWS};
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::row_attention::RowAttention;
use crate::models::shared::weights::{load_model_dir, stores_only};

const LAYER_NORM_EPS: f64 = 1e-5;

struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    heads: usize,
    head_dim: usize,
}

impl Attention {
    fn load(dim: usize, heads: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            q_proj: Linear::load(dim, dim, vb.pp("q_proj"))?,
            // Whisper's key projection has no bias.
            k_proj: Linear::load_no_bias(dim, dim, vb.pp("k_proj"))?,
            v_proj: Linear::load(dim, dim, vb.pp("v_proj"))?,
            out_proj: Linear::load(dim, dim, vb.pp("out_proj"))?,
            heads,
            head_dim: dim / heads,
        })
    }

    /// `[tokens, dim]` → `[tokens, heads, head_dim]`
    fn split(&self, x: &Tensor) -> Result<Tensor> {
        x.reshape((x.dim(0)?, self.heads, self.head_dim))
    }

    /// Keys and values of `x` (`[frames, dim]`), each `[heads, frames, head_dim]`.
    fn kv(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let k = self.split(&self.k_proj.forward(x)?)?;
        let v = self.split(&self.v_proj.forward(x)?)?;
        Ok((
            k.transpose(0, 1)?.contiguous()?,
            v.transpose(0, 1)?.contiguous()?,
        ))
    }
}

/// Plain attention, every key visible: `q` `[n, heads, d]` over keys and values
/// `[heads, m, d]` → `[n, heads * d]`. A few rows (decode steps) go through our row
/// kernel on the CPU, many rows (the encoder's frames) through our block kernel;
/// elsewhere through candle's matmuls. Keys and values kept in f16 for the row kernel
/// ([`Whisper::with_half_decoder`]) are widened for the others.
fn attend(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (n, heads, d) = q.dims3()?;
    if n < MANY_ROWS && RowAttention::runs_on(q) {
        let keys = (0..k.dim(1)?).map(|j| j * d).collect();
        let op = RowAttention {
            sequences: vec![(k.dim(1)? * d, keys)],
            seq_of_row: vec![0; n],
            kv_heads: heads,
        };
        return op.forward(q, k, v);
    }
    let (k, v) = if k.dtype() == q.dtype() {
        (k.clone(), v.clone())
    } else {
        (half_weights::widen(k)?, half_weights::widen(v)?)
    };
    let (k, v) = (&k, &v);
    if block_attention::runs_on(q) {
        return block_attention::block_attention(q, k, v);
    }
    let q = (q.transpose(0, 1)? / (d as f64).sqrt())?.contiguous()?;
    let probs = softmax_last_dim(&q.matmul(&k.t()?)?)?;
    probs.matmul(v)?.transpose(0, 1)?.reshape((n, heads * d))
}

struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    fn load(dim: usize, ffn: usize, vb: &VarBuilder) -> Result<Self> {
        Ok(Self {
            fc1: Linear::load(dim, ffn, vb.pp("fc1"))?,
            fc2: Linear::load(ffn, dim, vb.pp("fc2"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.forward(&gelu_erf(&self.fc1.forward(x)?)?)
    }
}

struct EncoderLayer {
    self_attn: Attention,
    self_attn_layer_norm: LayerNorm,
    mlp: Mlp,
    final_layer_norm: LayerNorm,
}

impl EncoderLayer {
    fn load(cfg: &WhisperConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            self_attn: Attention::load(
                cfg.d_model,
                cfg.encoder_attention_heads,
                vb.pp("self_attn"),
            )?,
            self_attn_layer_norm: layer_norm(
                cfg.d_model,
                LAYER_NORM_EPS,
                vb.pp("self_attn_layer_norm"),
            )?,
            mlp: Mlp::load(cfg.d_model, cfg.encoder_ffn_dim, &vb)?,
            final_layer_norm: layer_norm(cfg.d_model, LAYER_NORM_EPS, vb.pp("final_layer_norm"))?,
        })
    }

    /// `x`: `[frames, dim]` of one input; `bf16`: attention in bf16 where the CPU
    /// multiplies it natively.
    fn forward(&self, x: &Tensor, bf16: bool) -> Result<Tensor> {
        let a = &self.self_attn;
        let h = self.self_attn_layer_norm.forward(x)?;
        let q = a.split(&a.q_proj.forward(&h)?)?;
        let (k, v) = a.kv(&h)?;
        let attended = if bf16 && block_attention::runs_on(&q) {
            block_attention::block_attention_bf16(&q, &k, &v)?
        } else {
            attend(&q, &k, &v)?
        };
        let x = (x + a.out_proj.forward(&attended)?)?;
        let h = self.mlp.forward(&self.final_layer_norm.forward(&x)?)?;
        x + h
    }
}

struct DecoderLayer {
    self_attn: Attention,
    self_attn_layer_norm: LayerNorm,
    encoder_attn: Attention,
    encoder_attn_layer_norm: LayerNorm,
    mlp: Mlp,
    final_layer_norm: LayerNorm,
}

impl DecoderLayer {
    fn load(cfg: &WhisperConfig, vb: VarBuilder) -> Result<Self> {
        let (dim, heads) = (cfg.d_model, cfg.decoder_attention_heads);
        Ok(Self {
            self_attn: Attention::load(dim, heads, vb.pp("self_attn"))?,
            self_attn_layer_norm: layer_norm(dim, LAYER_NORM_EPS, vb.pp("self_attn_layer_norm"))?,
            encoder_attn: Attention::load(dim, heads, vb.pp("encoder_attn"))?,
            encoder_attn_layer_norm: layer_norm(
                dim,
                LAYER_NORM_EPS,
                vb.pp("encoder_attn_layer_norm"),
            )?,
            mlp: Mlp::load(dim, cfg.decoder_ffn_dim, &vb)?,
            final_layer_norm: layer_norm(dim, LAYER_NORM_EPS, vb.pp("final_layer_norm"))?,
        })
    }
}

/// The alignment heads' cross-attention logits for the rows one sequence ran in a
/// step (requests that asked for their alignment).
pub struct StepAlignment {
    /// The sequence's index in the batch.
    pub sequence: usize,
    pub rows: usize,
    pub frames: usize,
    /// `[alignment heads, rows, frames]`, heads in [`Whisper::alignment_heads`] order.
    pub logits: Vec<f32>,
}

/// Cross-attention keys and values (`[heads, frames, head_dim]`) of one audio, per
/// decoder layer.
pub struct CrossKv {
    layers: Vec<(Tensor, Tensor)>,
}

pub struct Whisper {
    conv1: Conv1d,
    conv2: Conv1d,
    encoder_positions: Tensor,
    encoder_layers: Vec<EncoderLayer>,
    encoder_norm: LayerNorm,
    embed_tokens: Embedding,
    decoder_positions: Embedding,
    decoder_layers: Vec<DecoderLayer>,
    decoder_norm: LayerNorm,
    proj_out: Linear,
    /// The encoder's attention in bf16 ([`Whisper::with_bf16_encoder`]).
    bf16_attention: bool,
    /// Cross-attention keys and values kept in f16 ([`Whisper::with_half_decoder`]).
    half_cross_kv: bool,
    /// Decoder (layer, head) pairs that align text with speech, sorted.
    alignment_heads: Vec<(usize, usize)>,
    config: WhisperConfig,
    dtype: DType,
    device: Device,
}

impl Whisper {
    /// Builds the model from weights named as in Hugging Face's
    /// `WhisperForConditionalGeneration`.
    pub fn load(config: WhisperConfig, vb: VarBuilder) -> Result<Self> {
        config.check_supported().map_err(candle_core::Error::msg)?;
        let c = &config;
        let enc = vb.pp("model.encoder");
        let dec = vb.pp("model.decoder");
        let conv = |stride| Conv1dConfig {
            padding: 1,
            stride,
            ..Conv1dConfig::default()
        };
        let embed_tokens = embedding(c.vocab_size, c.d_model, dec.pp("embed_tokens"))?;
        // The output projection is tied to the token embedding.
        let proj_out = Linear::new(embed_tokens.embeddings(), None)?;
        Ok(Self {
            conv1: conv1d(c.num_mel_bins, c.d_model, 3, conv(1), enc.pp("conv1"))?,
            conv2: conv1d(c.d_model, c.d_model, 3, conv(2), enc.pp("conv2"))?,
            encoder_positions: enc.get(
                (c.max_source_positions, c.d_model),
                "embed_positions.weight",
            )?,
            encoder_layers: (0..c.encoder_layers)
                .map(|i| EncoderLayer::load(c, enc.pp(format!("layers.{i}"))))
                .collect::<Result<_>>()?,
            encoder_norm: layer_norm(c.d_model, LAYER_NORM_EPS, enc.pp("layer_norm"))?,
            decoder_positions: embedding(
                c.max_target_positions,
                c.d_model,
                dec.pp("embed_positions"),
            )?,
            decoder_layers: (0..c.decoder_layers)
                .map(|i| DecoderLayer::load(c, dec.pp(format!("layers.{i}"))))
                .collect::<Result<_>>()?,
            decoder_norm: layer_norm(c.d_model, LAYER_NORM_EPS, dec.pp("layer_norm"))?,
            embed_tokens,
            proj_out,
            bf16_attention: false,
            half_cross_kv: false,
            alignment_heads: config.default_alignment_heads(),
            dtype: vb.dtype(),
            device: vb.device().clone(),
            config,
        })
    }

    /// Loads `config.json`, `*.safetensors` and the alignment heads of
    /// `generation_config.json` from a Hugging Face model folder. On the CPU in f32, a
    /// checkpoint stored in f16 keeps its decoder weights in f16
    /// ([`Whisper::with_half_decoder`]).
    pub fn from_dir(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let (config, weights): (WhisperConfig, _) = load_model_dir(dir, dtype, device)?;
        let alignment_heads = config
            .alignment_heads(dir)
            .map_err(candle_core::Error::msg)?;
        let model = Self {
            alignment_heads,
            ..Self::load(config, weights)?
        };
        if device.is_cpu() && dtype == DType::F32 && stores_only(dir, DType::F16)? {
            model.with_half_decoder()
        } else {
            Ok(model)
        }
    }

    /// Keeps the weights the decoder reads for its few rows per step (projections,
    /// MLP, token embedding and output projection) in f16, as an f16 checkpoint stores
    /// them: the decode step is bound by reading weights, and this halves the bytes
    /// while the arithmetic stays f32. Lossless for f16 checkpoints only. The
    /// cross-attention key and value projections, applied to the encoder's 1500
    /// frames, stay in f32 for the fast matmul; the keys and values they make are kept
    /// in f16, as the rest of the decoder's inputs (every step reads them whole: for
    /// tiny, 4.6 MB per layer and audio in f32, more than the layer's weights).
    pub fn with_half_decoder(mut self) -> Result<Self> {
        self.half_cross_kv = true;
        let half = |l: Linear| l.with_half_weight(DType::F16);
        for layer in std::mem::take(&mut self.decoder_layers) {
            let DecoderLayer {
                self_attn,
                self_attn_layer_norm,
                encoder_attn,
                encoder_attn_layer_norm,
                mlp,
                final_layer_norm,
            } = layer;
            self.decoder_layers.push(DecoderLayer {
                self_attn: Attention {
                    q_proj: half(self_attn.q_proj)?,
                    k_proj: half(self_attn.k_proj)?,
                    v_proj: half(self_attn.v_proj)?,
                    out_proj: half(self_attn.out_proj)?,
                    ..self_attn
                },
                self_attn_layer_norm,
                encoder_attn: Attention {
                    q_proj: half(encoder_attn.q_proj)?,
                    out_proj: half(encoder_attn.out_proj)?,
                    ..encoder_attn
                },
                encoder_attn_layer_norm,
                mlp: Mlp {
                    fc1: half(mlp.fc1)?,
                    fc2: half(mlp.fc2)?,
                },
                final_layer_norm,
            });
        }
        let embeddings = half_weights::narrow(self.embed_tokens.embeddings(), DType::F16)?;
        self.proj_out = Linear::new(&embeddings, None)?;
        self.embed_tokens = Embedding::new(embeddings, self.config.d_model);
        Ok(self)
    }

    /// Packs the weights applied to the encoder's 1500 frames (the encoder's
    /// projections and MLPs, the cross-attention key and value projections) in bf16
    /// where the CPU multiplies bf16 natively (AVX512-BF16), and runs the encoder's
    /// attention in bf16 there too: twice the arithmetic per cycle, what enters each
    /// product rounded to bf16, sums and softmax in f32. Everything the decoder reads
    /// per step stays as it was. Elsewhere unchanged.
    pub fn with_bf16_encoder(mut self) -> Result<Self> {
        let bf16 = |l: Linear| l.with_bf16_weight();
        let attention = |a: Attention| -> Result<Attention> {
            Ok(Attention {
                q_proj: bf16(a.q_proj)?,
                k_proj: bf16(a.k_proj)?,
                v_proj: bf16(a.v_proj)?,
                out_proj: bf16(a.out_proj)?,
                ..a
            })
        };
        for layer in std::mem::take(&mut self.encoder_layers) {
            self.encoder_layers.push(EncoderLayer {
                self_attn: attention(layer.self_attn)?,
                mlp: Mlp {
                    fc1: bf16(layer.mlp.fc1)?,
                    fc2: bf16(layer.mlp.fc2)?,
                },
                ..layer
            });
        }
        self.bf16_attention = true;
        for layer in std::mem::take(&mut self.decoder_layers) {
            let cross = layer.encoder_attn;
            self.decoder_layers.push(DecoderLayer {
                encoder_attn: Attention {
                    k_proj: bf16(cross.k_proj)?,
                    v_proj: bf16(cross.v_proj)?,
                    ..cross
                },
                ..layer
            });
        }
        Ok(self)
    }

    pub fn config(&self) -> &WhisperConfig {
        &self.config
    }

    pub fn alignment_heads(&self) -> &[(usize, usize)] {
        &self.alignment_heads
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Encodes log-mel features `[batch, n_mels, 3000]` into `[batch, 1500, d_model]`.
    pub fn encode(&self, mel: &Tensor) -> Result<Tensor> {
        let x = gelu_erf(&self.conv1.forward(&mel.to_dtype(self.dtype)?)?)?;
        let x = gelu_erf(&self.conv2.forward(&x)?)?.transpose(1, 2)?;
        let frames = x.dim(1)?;
        let x = x.broadcast_add(&self.encoder_positions.narrow(0, 0, frames)?)?;
        let outputs = (0..x.dim(0)?)
            .map(|b| {
                let mut h = x.get(b)?.contiguous()?;
                for layer in &self.encoder_layers {
                    h = layer.forward(&h, self.bf16_attention)?;
                }
                self.encoder_norm.forward(&h)
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&outputs, 0)
    }

    /// The cross-attention keys and values of one encoded input (`[frames, d_model]`).
    pub fn cross_kv(&self, encoded: &Tensor) -> Result<CrossKv> {
        let layers = self
            .decoder_layers
            .iter()
            .map(|layer| {
                let (k, v) = layer.encoder_attn.kv(encoded)?;
                if self.half_cross_kv {
                    Ok((
                        half_weights::narrow(&k, DType::F16)?,
                        half_weights::narrow(&v, DType::F16)?,
                    ))
                } else {
                    Ok((k, v))
                }
            })
            .collect::<Result<_>>()?;
        Ok(CrossKv { layers })
    }

    /// One engine step of the decoder. `cross[i]` belongs to `batch.sequences[i]`.
    /// Returns the logits (`[n, vocab]`, f32) of the sequences that want them, and the
    /// alignment of those that asked for it.
    pub fn decode_paged(
        &self,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
        cross: &[&CrossKv],
    ) -> Result<(Tensor, Vec<StepAlignment>)> {
        let meta =
            PagedAttentionMetadata::new(batch, self.config.d_model, self.dtype, &self.device)?;
        let tokens: Vec<u32> = batch
            .sequences
            .iter()
            .flat_map(|s| s.tokens.iter().copied())
            .collect();
        let ids = Tensor::new(tokens.as_slice(), &self.device)?;
        let (groups, restore) = cross_groups(batch, cross, &self.device)?;
        let mut aligned = Vec::new();
        let mut first_row = 0;
        for (i, seq) in batch.sequences.iter().enumerate() {
            if seq.alignment {
                aligned.push((
                    first_row,
                    StepAlignment {
                        sequence: i,
                        rows: seq.tokens.len(),
                        frames: self.config.max_source_positions,
                        logits: Vec::new(),
                    },
                ));
            }
            first_row += seq.tokens.len();
        }
        let mut x = (self.embed_tokens.forward(&ids)?.to_dtype(self.dtype)?
            + self.decoder_positions.forward(&meta.positions)?)?;
        for (l, (layer, cache)) in self.decoder_layers.iter().zip(kv_cache).enumerate() {
            let a = &layer.self_attn;
            let h = layer.self_attn_layer_norm.forward(&x)?;
            let q = a.split(&a.q_proj.forward(&h)?)?;
            let k = a.split(&a.k_proj.forward(&h)?)?;
            let v = a.split(&a.v_proj.forward(&h)?)?;
            x = (x + a.out_proj.forward(&meta.attention(cache, &q, &k, &v)?)?)?;

            let c = &layer.encoder_attn;
            let h = layer.encoder_attn_layer_norm.forward(&x)?;
            let q = c.split(&c.q_proj.forward(&h)?)?;
            for (first_row, alignment) in &mut aligned {
                let (k, _) = &cross[alignment.sequence].layers[l];
                let q = q.narrow(0, *first_row, alignment.rows)?;
                for &(_, head) in self.alignment_heads.iter().filter(|(layer, _)| *layer == l) {
                    alignment
                        .logits
                        .extend(cross_attention_logits(&q, k, head)?);
                }
            }
            let outputs = groups
                .iter()
                .map(|(kv, rows)| {
                    let (k, v) = &kv.layers[l];
                    attend(&q.index_select(rows, 0)?, k, v)
                })
                .collect::<Result<Vec<_>>>()?;
            let mut attended = Tensor::cat(&outputs, 0)?;
            if let Some(order) = &restore {
                attended = attended.index_select(order, 0)?;
            }
            x = (x + c.out_proj.forward(&attended)?)?;

            let h = layer.mlp.forward(&layer.final_layer_norm.forward(&x)?)?;
            x = (x + h)?;
        }
        let x = x.index_select(&meta.logits_rows, 0)?;
        let logits = self
            .proj_out
            .forward(&self.decoder_norm.forward(&x)?)?
            .to_dtype(DType::F32)?;
        Ok((logits, aligned.into_iter().map(|(_, a)| a).collect()))
    }
}

/// `q` (`[rows, heads, d]`) against the keys of one head (`k`: `[heads, frames, d]`),
/// scaled as attention scales them: `[rows, frames]` flattened.
fn cross_attention_logits(q: &Tensor, k: &Tensor, head: usize) -> Result<Vec<f32>> {
    let d = q.dim(2)?;
    let q = q.narrow(1, head, 1)?.squeeze(1)?.to_dtype(DType::F32)?;
    let k = k.get(head)?;
    let k = if k.dtype() == DType::F16 && k.device().is_cpu() {
        half_weights::widen(&k)?
    } else {
        k.to_dtype(DType::F32)?
    };
    (q.contiguous()?.matmul(&k.t()?)? / (d as f64).sqrt())?
        .flatten_all()?
        .to_vec1()
}

/// Rows that attend to the same audio, grouped: cross-attention has no mask, so queries
/// of different requests over one audio (a probe, beams, a fallback) are one matmul.
/// Returns each audio's row indices and, when grouping reordered the rows, the
/// permutation that puts the groups' concatenated outputs back in batch order.
#[allow(clippy::type_complexity)]
fn cross_groups<'a>(
    batch: &ForwardBatch,
    cross: &[&'a CrossKv],
    device: &Device,
) -> Result<(Vec<(&'a CrossKv, Tensor)>, Option<Tensor>)> {
    let mut groups: Vec<(&CrossKv, Vec<u32>)> = Vec::new();
    let mut row = 0u32;
    for (seq, &kv) in batch.sequences.iter().zip(cross) {
        let rows = row..row + seq.tokens.len() as u32;
        row = rows.end;
        match groups.iter_mut().find(|(g, _)| std::ptr::eq(*g, kv)) {
            Some((_, indices)) => indices.extend(rows),
            None => groups.push((kv, rows.collect())),
        }
    }
    let order: Vec<u32> = groups.iter().flat_map(|(_, r)| r.iter().copied()).collect();
    let restore = if order.iter().enumerate().all(|(i, &r)| i as u32 == r) {
        None
    } else {
        let mut inverse = vec![0u32; order.len()];
        for (position, &r) in order.iter().enumerate() {
            inverse[r as usize] = position as u32;
        }
        Some(Tensor::new(inverse.as_slice(), device)?)
    };
    let groups = groups
        .into_iter()
        .map(|(kv, rows)| Ok((kv, Tensor::new(rows.as_slice(), device)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok((groups, restore))
}
