//! Speech out: from one backbone output, a frame of Mimi codes (one per codebook), and
//! from a frame, the backbone's next input embedding.
//!
//! liquid-audio's depthformer: `depth_linear` turns the backbone output into one input
//! per codebook; codebook `i`'s input plus the embedding of codebook `i-1`'s chosen code
//! runs through a small transformer (pre-norm blocks of GQA attention with per-head
//! RMSNorm on queries and keys, RoPE on interleaved pairs, and a SwiGLU) as position `i`
//! of a sequence of `codebooks` positions; codebook `i`'s own embedding table, after an
//! RMSNorm, gives its logits. Rows of a batch (one per sequence) run together.

use candle_core::{Module, Result, Tensor, D};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::{Lfm2AudioConfig, AUDIO_VOCAB};
use crate::models::shared::activations::softmax_last_dim;
use crate::models::shared::linear::Linear;
use crate::models::shared::rope::{RotaryEmbedding, RotaryPairs};
use crate::models::shared::sampling::Sampler;

const NORM_EPS: f64 = 1e-5;
/// liquid-audio builds the depthformer's attention with its defaults: 32 query heads
/// over 8 key/value heads, RoPE base 1e6.
const HEADS: usize = 32;
const KV_HEADS: usize = 8;
const ROPE_THETA: f64 = 1_000_000.0;
/// SwiGLU width: `4·dim`, times 2/3, rounded up to a multiple of 256 (liquid-audio's
/// `GLU` defaults).
fn ffn_dim(dim: usize) -> usize {
    let ff = 2 * (4 * dim) / 3;
    ff.div_ceil(256) * 256
}

struct Block {
    operator_norm: RmsNorm,
    qkv: Linear,
    q_norm: RmsNorm,
    k_norm: RmsNorm,
    out: Linear,
    ffn_norm: RmsNorm,
    w1: Linear,
    w2: Linear,
    w3: Linear,
    head_dim: usize,
}

/// One block's keys and values so far: `[rows, KV_HEADS, positions, head_dim]`.
struct LayerCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
}

impl Block {
    fn load(dim: usize, vb: VarBuilder) -> Result<Self> {
        let head_dim = dim / HEADS;
        let op = vb.pp("operator");
        let ff = vb.pp("feed_forward");
        let ffn = ffn_dim(dim);
        Ok(Self {
            operator_norm: rms_norm(dim, NORM_EPS, vb.pp("operator_norm"))?,
            qkv: Linear::load_no_bias(dim, dim + 2 * KV_HEADS * head_dim, op.pp("qkv_proj"))?,
            q_norm: rms_norm(head_dim, NORM_EPS, op.pp("bounded_attention.q_layernorm"))?,
            k_norm: rms_norm(head_dim, NORM_EPS, op.pp("bounded_attention.k_layernorm"))?,
            out: Linear::load_no_bias(dim, dim, op.pp("out_proj"))?,
            ffn_norm: rms_norm(dim, NORM_EPS, vb.pp("ffn_norm"))?,
            w1: Linear::load_no_bias(dim, ffn, ff.pp("w1"))?,
            w2: Linear::load_no_bias(ffn, dim, ff.pp("w2"))?,
            w3: Linear::load_no_bias(dim, ffn, ff.pp("w3"))?,
            head_dim,
        })
    }

    /// One position for every row: `x` `[rows, dim]` at `position`.
    fn forward(
        &self,
        x: &Tensor,
        position: &Tensor,
        rope: &RotaryEmbedding,
        cache: &mut LayerCache,
    ) -> Result<Tensor> {
        let (rows, dim) = x.dims2()?;
        let hd = self.head_dim;
        let qkv = self.qkv.forward(&self.operator_norm.forward(x)?)?;
        let q = qkv.narrow(1, 0, dim)?.reshape((rows, HEADS, hd))?;
        let k = qkv
            .narrow(1, dim, KV_HEADS * hd)?
            .reshape((rows, KV_HEADS, hd))?;
        let v = qkv
            .narrow(1, dim + KV_HEADS * hd, KV_HEADS * hd)?
            .reshape((rows, KV_HEADS, 1, hd))?;
        let positions = position.broadcast_as(rows)?.contiguous()?;
        let q = rope.apply(&self.q_norm.forward(&q)?.contiguous()?, &positions)?;
        let k = rope.apply(&self.k_norm.forward(&k)?.contiguous()?, &positions)?;
        let k = k.reshape((rows, KV_HEADS, 1, hd))?;
        let (k, v) = match (cache.k.take(), cache.v.take()) {
            (Some(pk), Some(pv)) => (Tensor::cat(&[pk, k], 2)?, Tensor::cat(&[pv, v], 2)?),
            _ => (k, v),
        };
        cache.k = Some(k.clone());
        cache.v = Some(v.clone());
        // Query head h reads key/value head h / (HEADS / KV_HEADS).
        let q = q.reshape((rows, KV_HEADS, HEADS / KV_HEADS, hd))?;
        let scores = (q.matmul(&k.t()?.contiguous()?)? / (hd as f64).sqrt())?;
        let attn = softmax_last_dim(&scores)?.matmul(&v)?; // [rows, KV, group, hd]
        let h = (x + self.out.forward(&attn.reshape((rows, dim))?)?)?;
        let n = self.ffn_norm.forward(&h)?;
        let gated = (self.w1.forward(&n)?.silu()? * self.w3.forward(&n)?)?;
        h + self.w2.forward(&gated)?
    }
}

/// liquid-audio's depthformer: pre-norm blocks run one position at a time over a
/// frame's codebooks, keeping their keys and values.
pub struct Depthformer {
    blocks: Vec<Block>,
    rope: RotaryEmbedding,
}

/// A depthformer's keys and values for the positions run so far.
pub struct DepthCache(Vec<LayerCache>);

impl Depthformer {
    /// `layers` blocks of width `dim` at `vb` (`layers.{i}.*`), for up to `positions`
    /// positions.
    pub fn load(dim: usize, layers: usize, positions: usize, vb: VarBuilder) -> Result<Self> {
        if !dim.is_multiple_of(HEADS) || !(dim / HEADS).is_multiple_of(2) {
            candle_core::bail!("depthformer width {dim} does not split into {HEADS} even heads");
        }
        let blocks = (0..layers)
            .map(|i| Block::load(dim, vb.pp(format!("layers.{i}"))))
            .collect::<Result<_>>()?;
        let rope = RotaryEmbedding::new(
            dim / HEADS,
            positions,
            ROPE_THETA,
            None,
            vb.dtype(),
            vb.device(),
        )?
        .with_pairs(RotaryPairs::Interleaved);
        Ok(Self { blocks, rope })
    }

    pub fn new_cache(&self) -> DepthCache {
        DepthCache(
            (0..self.blocks.len())
                .map(|_| LayerCache { k: None, v: None })
                .collect(),
        )
    }

    /// The next position of every row: `x` `[rows, dim]` → `[rows, dim]`.
    pub fn forward(&self, x: &Tensor, cache: &mut DepthCache) -> Result<Tensor> {
        let position = cache.0[0].k.as_ref().map_or(Ok(0), |k| k.dim(2))?;
        let position = Tensor::new(&[position as u32], x.device())?;
        let mut x = x.clone();
        for (block, layer_cache) in self.blocks.iter().zip(cache.0.iter_mut()) {
            x = block.forward(&x, &position, &self.rope, layer_cache)?;
        }
        Ok(x)
    }
}

/// A codebook's code embeddings and logit head.
struct Codebook {
    table: Tensor,
    norm: RmsNorm,
    to_logits: Linear,
}

pub struct AudioHead {
    depth_linear: Linear,
    depthformer: Depthformer,
    codebooks: Vec<Codebook>,
    /// `[codebooks · AUDIO_VOCAB, hidden]`: codebook `i`'s code `c` at row
    /// `i · AUDIO_VOCAB + c`.
    audio_embedding: Tensor,
    dim: usize,
}

impl AudioHead {
    /// `vb` at the checkpoint's root (`depth_linear`, `depthformer`, `depth_embeddings`,
    /// `audio_embedding`).
    pub fn load(config: &Lfm2AudioConfig, vb: &VarBuilder) -> Result<Self> {
        let dim = config.depthformer.dim;
        let hidden = config.lfm.hidden_size;
        let n = config.codebooks;
        let depthformer =
            Depthformer::load(dim, config.depthformer.layers, n, vb.pp("depthformer"))?;
        let codebooks = (0..n)
            .map(|i| {
                let vb = vb.pp(format!("depth_embeddings.{i}"));
                let table = vb.get((AUDIO_VOCAB, dim), "embedding.weight")?;
                // A tied head may be stored under either name, or only as the table.
                let logits = if vb.contains_tensor("to_logits.weight") {
                    vb.get((AUDIO_VOCAB, dim), "to_logits.weight")?
                } else if config.depthformer.tie {
                    table.clone()
                } else {
                    candle_core::bail!("depth_embeddings.{i}.to_logits.weight is missing");
                };
                Ok(Codebook {
                    norm: rms_norm(dim, NORM_EPS, vb.pp("embedding_norm"))?,
                    to_logits: Linear::new(&logits, None)?,
                    table,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            depth_linear: Linear::load(hidden, dim * n, vb.pp("depth_linear"))?,
            depthformer,
            codebooks,
            audio_embedding: vb.get(
                (n * AUDIO_VOCAB, hidden),
                "audio_embedding.embedding.weight",
            )?,
            dim,
        })
    }

    pub fn codebooks(&self) -> usize {
        self.codebooks.len()
    }

    /// A frame for each row of `hidden` (`[rows, hidden]`, backbone outputs), row `r`'s
    /// codes drawn by `samplers[r]` (greedy at temperature 0).
    pub fn frames(&self, hidden: &Tensor, samplers: &mut [Sampler]) -> Result<Vec<Vec<u32>>> {
        let rows = hidden.dim(0)?;
        if samplers.len() != rows {
            candle_core::bail!("{} samplers for {rows} rows", samplers.len());
        }
        let n = self.codebooks.len();
        let inputs = self
            .depth_linear
            .forward(hidden)?
            .reshape((rows, n, self.dim))?;
        let mut cache = self.depthformer.new_cache();
        let mut frames = vec![Vec::with_capacity(n); rows];
        let mut previous: Option<Tensor> = None;
        for (i, codebook) in self.codebooks.iter().enumerate() {
            let mut x = inputs.narrow(1, i, 1)?.squeeze(1)?;
            if let Some(prev) = &previous {
                x = (x + prev)?;
            }
            x = self.depthformer.forward(&x, &mut cache)?;
            let logits = codebook
                .to_logits
                .forward(&codebook.norm.forward(&x)?)?
                .to_vec2::<f32>()?;
            let mut codes = Vec::with_capacity(rows);
            for (r, mut row) in logits.into_iter().enumerate() {
                let code = samplers[r].sample(&mut row, &[]);
                frames[r].push(code);
                codes.push(code);
            }
            let codes = Tensor::new(codes.as_slice(), hidden.device())?;
            previous = Some(codebook.table.index_select(&codes, 0)?);
        }
        Ok(frames)
    }

    /// The backbone's next input for each frame: the sum of its codes' embeddings,
    /// `[frames, hidden]`.
    pub fn frame_embeddings(&self, frames: &[Vec<u32>]) -> Result<Tensor> {
        let n = self.codebooks.len() as u32;
        let mut ids = Vec::with_capacity(frames.len() * n as usize);
        for frame in frames {
            if frame.len() != n as usize {
                candle_core::bail!("a frame of {} codes, the model has {n}", frame.len());
            }
            for (i, &code) in frame.iter().enumerate() {
                if code as usize >= AUDIO_VOCAB {
                    candle_core::bail!("audio code {code} is out of range");
                }
                ids.push(i as u32 * AUDIO_VOCAB as u32 + code);
            }
        }
        let ids = Tensor::from_vec(
            ids,
            frames.len() * n as usize,
            self.audio_embedding.device(),
        )?;
        self.audio_embedding
            .index_select(&ids, 0)?
            .reshape((frames.len(), n as usize, ()))?
            .sum(D::Minus2)
    }
}
