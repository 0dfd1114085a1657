//! The code predictor: from the talker's hidden state and codebook 0 of a frame, a small
//! Qwen3 decoder predicts codebooks 1.. one after another. Every frame is its own short
//! sequence (at most one position per codebook), so it runs on a plain cache of its own,
//! all of a step's frames in one batch.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::CodePredictorConfig;
use crate::models::llama::DecoderLayer;
use crate::models::shared::decoder_weights::{DecoderWeights, KeptIn};
use crate::models::shared::embedding::Embedding;
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::dense_attention;
use crate::models::shared::rope::RotaryEmbedding;

pub struct CodePredictor {
    /// From the talker's hidden size to the predictor's, when they differ.
    projection: Option<Linear>,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    /// Embeddings of codebooks 1.. in the talker's hidden size.
    codec_embedding: Vec<Embedding>,
    /// Heads for codebooks 1..
    lm_head: Vec<Linear>,
    rope: RotaryEmbedding,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    device: Device,
    dtype: DType,
}

/// Keys and values of every frame being predicted: `[frames, kv_heads, positions, head_dim]`.
#[derive(Default)]
struct LayerCache {
    kv: Option<(Tensor, Tensor)>,
}

impl CodePredictor {
    /// Loads the weights under `talker.code_predictor.`; `talker_hidden` is the talker's
    /// hidden size. With `half` (f16 or bf16, as the checkpoint stores them) its weights
    /// stay in it, as the talker's do ([`super::talker::Talker::load`]).
    pub fn load(
        config: &CodePredictorConfig,
        talker_hidden: usize,
        vb: VarBuilder,
        half: Option<DType>,
    ) -> Result<Self> {
        let layers_config = config.layers();
        let weights = KeptIn::new(vb.clone(), half);
        let model = weights.pp("model");
        let groups = config.num_code_groups - 1;
        let projection = (config.hidden_size != talker_hidden)
            .then(|| {
                weights.linear(
                    "small_to_mtp_projection",
                    talker_hidden,
                    config.hidden_size,
                    true,
                )
            })
            .transpose()?;
        Ok(Self {
            projection,
            layers: (0..config.num_hidden_layers)
                .map(|i| DecoderLayer::load(&layers_config, &model, &format!("layers.{i}")))
                .collect::<Result<Vec<_>>>()?,
            norm: rms_norm(config.hidden_size, config.rms_norm_eps, vb.pp("model.norm"))?,
            codec_embedding: (0..groups)
                .map(|i| {
                    model.embedding(
                        &format!("codec_embedding.{i}"),
                        config.vocab_size,
                        talker_hidden,
                    )
                })
                .collect::<Result<Vec<_>>>()?,
            lm_head: (0..groups)
                .map(|i| {
                    weights.linear(
                        &format!("lm_head.{i}"),
                        config.hidden_size,
                        config.vocab_size,
                        false,
                    )
                })
                .collect::<Result<Vec<_>>>()?,
            rope: RotaryEmbedding::new(
                config.head_dim(),
                config.max_position_embeddings,
                config.rope_theta,
                None,
                vb.dtype(),
                vb.device(),
            )?,
            heads: config.num_attention_heads,
            kv_heads: config.num_key_value_heads,
            head_dim: config.head_dim(),
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// Codebooks predicted per frame (all but codebook 0).
    pub fn groups(&self) -> usize {
        self.lm_head.len()
    }

    /// Codes of codebook `group + 1` in the talker's space: `[n, talker hidden]`.
    pub fn embed(&self, group: usize, codes: &[u32]) -> Result<Tensor> {
        let ids = Tensor::new(codes, &self.device)?;
        self.codec_embedding[group]
            .forward(&ids)?
            .to_dtype(self.dtype)
    }

    /// Predicts codebooks 1.. of `n` frames at once. `hidden` (`[n, talker hidden]`) is
    /// the talker's last hidden state of each, `code0` (`[n, talker hidden]`) its
    /// codebook-0 embedding. `pick(frame, group, logits)` chooses each code from its
    /// logits (f32), so every frame can sample with its own random state.
    pub fn predict(
        &self,
        hidden: &Tensor,
        code0: &Tensor,
        mut pick: impl FnMut(usize, usize, &mut [f32]) -> u32,
    ) -> Result<Vec<Vec<u32>>> {
        let n = hidden.dim(0)?;
        let mut caches: Vec<LayerCache> =
            self.layers.iter().map(|_| LayerCache::default()).collect();
        let mut codes = vec![Vec::with_capacity(self.groups()); n];
        // The first step sees two positions per frame (hidden state, codebook 0), each
        // later step one (the code just chosen).
        let mut x = Tensor::stack(&[hidden, code0], 1)?.reshape((n * 2, hidden.dim(1)?))?;
        let (mut start, mut len) = (0u32, 2usize);
        for group in 0..self.groups() {
            let positions: Vec<u32> = (0..n).flat_map(|_| start..start + len as u32).collect();
            let mut h = match &self.projection {
                Some(p) => p.forward(&x)?,
                None => x.clone(),
            };
            let pos = Tensor::new(positions.as_slice(), &self.device)?;
            for (layer, cache) in self.layers.iter().zip(caches.iter_mut()) {
                h = layer.forward(&h, &self.rope, &pos, |q, k, v| {
                    self.attend(cache, q, k, v, n, len)
                })?;
            }
            let last = h
                .reshape((n, len, h.dim(1)?))?
                .narrow(1, len - 1, 1)?
                .squeeze(1)?;
            let logits = self.lm_head[group]
                .forward(&self.norm.forward(&last)?)?
                .to_dtype(DType::F32)?
                .to_vec2::<f32>()?;
            let chosen: Vec<u32> = logits
                .into_iter()
                .enumerate()
                .map(|(frame, mut row)| pick(frame, group, &mut row))
                .collect();
            for (frame, &code) in chosen.iter().enumerate() {
                codes[frame].push(code);
            }
            if group + 1 < self.groups() {
                x = self.embed(group, &chosen)?;
                start += len as u32;
                len = 1;
            }
        }
        Ok(codes)
    }

    /// Causal attention of `len` new positions per frame over the frame's cache.
    /// `q`: `[n * len, heads, d]`, `k`/`v`: `[n * len, kv_heads, d]`.
    fn attend(
        &self,
        cache: &mut LayerCache,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        n: usize,
        len: usize,
    ) -> Result<Tensor> {
        let (heads, kv_heads, d) = (self.heads, self.kv_heads, self.head_dim);
        let q = q
            .reshape((n, len, heads, d))?
            .transpose(1, 2)?
            .contiguous()?;
        let k = k
            .reshape((n, len, kv_heads, d))?
            .transpose(1, 2)?
            .contiguous()?;
        let v = v
            .reshape((n, len, kv_heads, d))?
            .transpose(1, 2)?
            .contiguous()?;
        let (k, v) = match cache.kv.take() {
            Some((ck, cv)) => (Tensor::cat(&[&ck, &k], 2)?, Tensor::cat(&[&cv, &v], 2)?),
            None => (k, v),
        };
        cache.kv = Some((k.clone(), v.clone()));
        dense_attention(&q, &k, &v)
    }
}
