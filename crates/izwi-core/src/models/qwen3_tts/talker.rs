//! The talker: a Qwen3 decoder over the sum of text and codec embeddings, run on the
//! engine's paged KV cache, whose head gives codebook 0 of the next frame.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::config::TalkerConfig;
use crate::engine::{ForwardBatch, LayerKvCache};
use crate::models::llama::DecoderLayer;
use crate::models::shared::decoder_weights::{DecoderWeights, KeptIn};
use crate::models::shared::embedding::Embedding;
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::rope::RotaryEmbedding;

pub struct Talker {
    text_embedding: Embedding,
    /// `text_projection`: text hidden size to the talker's, through a SiLU MLP.
    text_fc1: Linear,
    text_fc2: Linear,
    codec_embedding: Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    codec_head: Linear,
    rope: RotaryEmbedding,
    kv_width: usize,
    dtype: DType,
    /// The 16-bit type the weights are kept in, if not `dtype`.
    half: Option<DType>,
    device: Device,
}

/// What one step of the talker gives back for the sequences that wanted logits.
pub struct TalkerOutput {
    /// The final-norm hidden state of each sequence's last position: `[n, hidden]`;
    /// the code predictor starts from it.
    pub hidden: Tensor,
    /// Codebook-0 logits: `[n, vocab]`, f32.
    pub logits: Tensor,
}

impl Talker {
    /// Loads the weights under `talker.` of a Qwen3-TTS checkpoint. With `half` (f16
    /// or bf16, as the checkpoint stores them) the weights a decode step reads stay in
    /// it, read as stored ([`KeptIn`], [`Linear::with_half_weight`]). The embedding
    /// tables too; their rows are widened as they are looked up.
    pub fn load(config: &TalkerConfig, vb: VarBuilder, half: Option<DType>) -> Result<Self> {
        let layers_config = config.layers();
        let weights = KeptIn::new(vb.clone(), half);
        let model = weights.pp("model");
        let (text_hidden, hidden) = (config.text_hidden_size, config.hidden_size);
        let layers = (0..config.num_hidden_layers)
            .map(|i| DecoderLayer::load(&layers_config, &model, &format!("layers.{i}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            text_embedding: model.embedding(
                "text_embedding",
                config.text_vocab_size,
                text_hidden,
            )?,
            text_fc1: weights.linear(
                "text_projection.linear_fc1",
                text_hidden,
                text_hidden,
                true,
            )?,
            text_fc2: weights.linear("text_projection.linear_fc2", text_hidden, hidden, true)?,
            codec_embedding: model.embedding("codec_embedding", config.vocab_size, hidden)?,
            layers,
            norm: rms_norm(hidden, config.rms_norm_eps, vb.pp("model.norm"))?,
            codec_head: weights.linear("codec_head", hidden, config.vocab_size, false)?,
            rope: RotaryEmbedding::new(
                config.head_dim(),
                config.max_position_embeddings,
                config.rope_theta,
                None,
                vb.dtype(),
                vb.device(),
            )?,
            kv_width: config.num_key_value_heads * config.head_dim(),
            dtype: vb.dtype(),
            half,
            device: vb.device().clone(),
        })
    }

    /// The 16-bit type (f16 or bf16) the weights are kept in, if not the model's dtype.
    pub fn half_weights(&self) -> Option<DType> {
        self.half
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The type its products are computed in: bf16 where its layers are packed for
    /// the bf16 kernel (they all are, or none), its dtype otherwise.
    pub fn products_dtype(&self) -> DType {
        if self.codec_head.is_bf16_packed() {
            DType::BF16
        } else {
            self.dtype
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Text tokens in the talker's space: `[n, hidden]`.
    pub fn text(&self, ids: &[u32]) -> Result<Tensor> {
        let ids = Tensor::new(ids, &self.device)?;
        let x = self.text_embedding.forward(&ids)?.to_dtype(self.dtype)?;
        let x = candle_nn::ops::silu(&self.text_fc1.forward(&x)?)?;
        self.text_fc2.forward(&x)
    }

    /// Codec tokens (codebook 0 and control tokens): `[n, hidden]`.
    pub fn codec(&self, ids: &[u32]) -> Result<Tensor> {
        let ids = Tensor::new(ids, &self.device)?;
        self.codec_embedding.forward(&ids)?.to_dtype(self.dtype)
    }

    /// One engine step: `x` holds the input embedding of every token of `batch`, flat
    /// (`[tokens, hidden]`).
    pub fn forward_paged(
        &self,
        x: Tensor,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
    ) -> Result<TalkerOutput> {
        let meta = PagedAttentionMetadata::new(batch, self.kv_width, self.dtype, &self.device)?;
        let mut x = x;
        for (layer, cache) in self.layers.iter().zip(kv_cache) {
            x = layer.forward(&x, &self.rope, &meta.positions, |q, k, v| {
                meta.attention(cache, q, k, v)
            })?;
        }
        let hidden = self.norm.forward(&x.index_select(&meta.logits_rows, 0)?)?;
        let logits = self.codec_head.forward(&hidden)?.to_dtype(DType::F32)?;
        Ok(TalkerOutput { hidden, logits })
    }
}
