use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{RmsNorm, VarBuilder};

use super::config::{LayerKind, Lfm2Config};
use super::short_conv::{conv_groups, ShortConv};
use crate::engine::{
    ConvStateShape, ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec,
};
use crate::models::shared::decoder_weights::DecoderWeights;
use crate::models::shared::embedding::Embedding;
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::rope::RotaryEmbedding;
use crate::models::shared::weights::{load_model_dir, random_weights};

/// An LFM2's weights by their Hugging Face names (`model.layers.0.conv.in_proj`).
pub trait Lfm2Weights: DecoderWeights {
    /// Whether the checkpoint has a tensor of this name.
    fn contains(&self, name: &str) -> bool;
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor>;
}

impl Lfm2Weights for VarBuilder<'_> {
    fn contains(&self, name: &str) -> bool {
        self.contains_tensor(name)
    }

    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let init = candle_nn::Init::Randn {
            mean: 0.,
            stdev: 0.5,
        };
        self.get_with_hints(shape, name, init)
    }
}

/// Grouped-query attention with an RMSNorm over each query and key head before RoPE.
struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    q_layernorm: RmsNorm,
    k_layernorm: RmsNorm,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
}

impl Attention {
    fn load(cfg: &Lfm2Config, w: &dyn Lfm2Weights, prefix: &str) -> Result<Self> {
        let (heads, kv_heads, dim) = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim(),
        );
        let hidden = cfg.hidden_size;
        Ok(Self {
            q_proj: w.linear(&format!("{prefix}.q_proj"), hidden, heads * dim, false)?,
            k_proj: w.linear(&format!("{prefix}.k_proj"), hidden, kv_heads * dim, false)?,
            v_proj: w.linear(&format!("{prefix}.v_proj"), hidden, kv_heads * dim, false)?,
            out_proj: w.linear(&format!("{prefix}.out_proj"), heads * dim, hidden, false)?,
            q_layernorm: w.rms_norm(&format!("{prefix}.q_layernorm"), dim, cfg.norm_eps)?,
            k_layernorm: w.rms_norm(&format!("{prefix}.k_layernorm"), dim, cfg.norm_eps)?,
            num_heads: heads,
            num_kv_heads: kv_heads,
            head_dim: dim,
        })
    }

    /// Queries, keys and values of `x` (`[tokens, heads, dim]` each), the queries and
    /// keys normed per head and rotated to `positions`.
    fn qkv(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let tokens = x.dim(0)?;
        let heads = |proj: &Linear, n: usize| -> Result<Tensor> {
            proj.forward(x)?.reshape((tokens, n, self.head_dim))
        };
        let q = self
            .q_layernorm
            .forward(&heads(&self.q_proj, self.num_heads)?)?;
        let k = self
            .k_layernorm
            .forward(&heads(&self.k_proj, self.num_kv_heads)?)?;
        let v = heads(&self.v_proj, self.num_kv_heads)?;
        Ok((rope.apply(&q, positions)?, rope.apply(&k, positions)?, v))
    }

    fn forward(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        meta: &PagedAttentionMetadata,
        cache: &LayerKvCache,
    ) -> Result<Tensor> {
        let (q, k, v) = self.qkv(x, rope, &meta.positions)?;
        self.out_proj.forward(&meta.attention(cache, &q, &k, &v)?)
    }

    /// Attention over the whole sequence `x` (`[tokens, hidden]`, positions from 0)
    /// under `mask` (`[tokens, tokens]`, 0 where a query sees a key, −∞ elsewhere).
    fn forward_dense(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
        mask: &Tensor,
    ) -> Result<Tensor> {
        let tokens = x.dim(0)?;
        let (q, k, v) = self.qkv(x, rope, positions)?;
        let q = q.transpose(0, 1)?.contiguous()?;
        let group = self.num_heads / self.num_kv_heads;
        // [kv heads, tokens, dim] → [heads, tokens, dim], each KV head serving its group.
        let share = |t: Tensor| -> Result<Tensor> {
            let t = t.transpose(0, 1)?.contiguous()?;
            let (n, len, dim) = t.dims3()?;
            t.unsqueeze(1)?
                .expand((n, group, len, dim))?
                .reshape((n * group, len, dim))
        };
        let k = share(k)?;
        let v = share(v)?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(mask)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let out = weights.matmul(&v)?.transpose(0, 1)?.reshape((tokens, ()))?;
        self.out_proj.forward(&out)
    }
}

/// SwiGLU feed-forward (`w2(silu(w1 x) · w3 x)`).
struct FeedForward {
    w1: Linear,
    w2: Linear,
    w3: Linear,
}

impl FeedForward {
    fn load(cfg: &Lfm2Config, w: &dyn Lfm2Weights, prefix: &str) -> Result<Self> {
        let (hidden, inner) = (cfg.hidden_size, cfg.ff_dim());
        Ok(Self {
            w1: w.linear(&format!("{prefix}.w1"), hidden, inner, false)?,
            w2: w.linear(&format!("{prefix}.w2"), inner, hidden, false)?,
            w3: w.linear(&format!("{prefix}.w3"), hidden, inner, false)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.w1.forward(x)?)?;
        self.w2.forward(&(gate * self.w3.forward(x)?)?)
    }
}

enum Operator {
    /// Attention over the `n`th attention layer's KV cache.
    Attention(Box<Attention>, usize),
    /// A short convolution over the `n`th convolution layer's state.
    Conv(ShortConv, usize),
}

struct Layer {
    operator: Operator,
    operator_norm: RmsNorm,
    feed_forward: FeedForward,
    ffn_norm: RmsNorm,
}

/// What a step's layers share: the attention layout and the convolution groups.
struct Step<'a> {
    meta: PagedAttentionMetadata,
    groups: Vec<super::short_conv::ConvGroup>,
    kv_cache: &'a [LayerKvCache],
    conv_state: &'a [Tensor],
}

impl Layer {
    /// The layer over a whole sequence without the engine: see [`Lfm2::forward_dense`].
    fn forward_dense(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
        mask: &Tensor,
    ) -> Result<Tensor> {
        let h = self.operator_norm.forward(x)?;
        let h = match &self.operator {
            Operator::Attention(attention, _) => {
                attention.forward_dense(&h, rope, positions, mask)?
            }
            Operator::Conv(conv, _) => conv.forward_dense(&h)?,
        };
        let x = (x + h)?;
        let h = self.feed_forward.forward(&self.ffn_norm.forward(&x)?)?;
        x + h
    }

    fn forward(&self, x: &Tensor, rope: &RotaryEmbedding, step: &Step) -> Result<Tensor> {
        let h = self.operator_norm.forward(x)?;
        let h = match &self.operator {
            Operator::Attention(attention, n) => {
                let cache = step
                    .kv_cache
                    .get(*n)
                    .ok_or_else(|| candle_core::Error::msg("missing KV cache layer"))?;
                attention.forward(&h, rope, &step.meta, cache)?
            }
            Operator::Conv(conv, n) => {
                let state = step.conv_state.get(*n).ok_or_else(|| {
                    candle_core::Error::msg("the engine gave no convolution state")
                })?;
                conv.forward(&h, &step.groups, state)?
            }
        };
        let x = (x + h)?;
        let h = self.feed_forward.forward(&self.ffn_norm.forward(&x)?)?;
        x + h
    }
}

/// A Liquid LFM2 language model: gated short-convolution layers and grouped-query
/// attention layers as its config lays them out, on the engine.
pub struct Lfm2 {
    embed_tokens: Embedding,
    layers: Vec<Layer>,
    /// The final norm (transformers names it `embedding_norm`).
    norm: RmsNorm,
    lm_head: Linear,
    rope: RotaryEmbedding,
    config: Lfm2Config,
    conv_state: ConvStateShape,
    spec: ModelSpec,
}

impl Lfm2 {
    /// Builds the model from weights named as in Hugging Face's `Lfm2ForCausalLM`.
    pub fn load(config: Lfm2Config, vb: VarBuilder) -> Result<Self> {
        Self::build(config, &vb)
    }

    pub fn build(config: Lfm2Config, w: &dyn Lfm2Weights) -> Result<Self> {
        config.check_supported().map_err(candle_core::Error::msg)?;
        let kinds = config.layer_kinds().map_err(candle_core::Error::msg)?;
        let device = w.device().clone();
        let dtype = w.dtype();
        let hidden = config.hidden_size;
        let embed_tokens = w.embedding("model.embed_tokens", config.vocab_size, hidden)?;
        let (mut attention_layers, mut conv_layers) = (0, 0);
        let mut layers = Vec::with_capacity(kinds.len());
        for (i, kind) in kinds.iter().enumerate() {
            let prefix = format!("model.layers.{i}");
            let operator = match kind {
                LayerKind::Attention => {
                    attention_layers += 1;
                    Operator::Attention(
                        Box::new(Attention::load(&config, w, &format!("{prefix}.self_attn"))?),
                        attention_layers - 1,
                    )
                }
                LayerKind::Conv => {
                    conv_layers += 1;
                    Operator::Conv(
                        ShortConv::load(
                            w,
                            &format!("{prefix}.conv"),
                            hidden,
                            config.conv_kernel,
                            config.conv_bias,
                        )?,
                        conv_layers - 1,
                    )
                }
            };
            let norm =
                |name: &str| w.rms_norm(&format!("{prefix}.{name}"), hidden, config.norm_eps);
            layers.push(Layer {
                operator,
                operator_norm: norm("operator_norm")?,
                feed_forward: FeedForward::load(&config, w, &format!("{prefix}.feed_forward"))?,
                ffn_norm: norm("ffn_norm")?,
            });
        }
        let norm = w.rms_norm("model.embedding_norm", hidden, config.norm_eps)?;
        // Checkpoints tie the head to the embeddings unless they ship one of their own.
        let lm_head = if config.tie_word_embeddings && !w.contains("lm_head.weight") {
            embed_tokens.as_linear()?
        } else {
            w.linear("lm_head", hidden, config.vocab_size, false)?
        };
        let rope = RotaryEmbedding::new(
            config.head_dim(),
            config.max_position_embeddings,
            config.rope_theta,
            None,
            dtype,
            &device,
        )?;
        let spec = ModelSpec {
            vocab_size: config.vocab_size,
            max_position_embeddings: config.max_position_embeddings,
            eos_token_ids: config.eos_token_ids(),
            kv_cache: KvCacheShape {
                num_layers: attention_layers,
                num_kv_heads: config.num_key_value_heads,
                head_dim: config.head_dim(),
                dtype,
            },
            device,
            audio_seconds_per_token: None,
            requires_audio: false,
        };
        let conv_state = ConvStateShape {
            num_layers: conv_layers,
            channels: hidden,
            width: config.conv_kernel - 1,
            dtype,
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rope,
            config,
            conv_state,
            spec,
        })
    }

    /// A model with seeded random weights: the same seed gives the same model.
    pub fn random(config: Lfm2Config, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        Self::load(config, random_weights(seed, dtype, device))
    }

    /// Loads `config.json` and `*.safetensors` from a Hugging Face model folder.
    pub fn from_dir(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let (config, weights) = load_model_dir(dir, dtype, device)?;
        Self::load(config, weights)
    }

    pub fn config(&self) -> &Lfm2Config {
        &self.config
    }

    /// One engine step over the paged KV cache and the engine's convolution state; see
    /// [`ModelExecutor::execute`].
    pub fn forward_paged(&self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        let tokens: Vec<u32> = batch
            .sequences
            .iter()
            .flat_map(|s| s.tokens.iter().copied())
            .collect();
        let ids = Tensor::new(tokens.as_slice(), &self.spec.device)?;
        let hidden = self.forward_embeddings(batch, kv_cache, &self.embed(&ids)?)?;
        self.lm_head.forward(&hidden)?.to_dtype(DType::F32)
    }

    /// The input embeddings of token ids, in the model's dtype.
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        self.embed_tokens
            .forward(ids)?
            .to_dtype(self.spec.kv_cache.dtype)
    }

    /// The text logits of final hidden states (`[n, hidden]`): `[n, vocab]`, f32.
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        self.lm_head.forward(hidden)?.to_dtype(DType::F32)
    }

    /// One engine step from input embeddings (`[tokens of the batch, hidden]`, one row
    /// per token of `batch` in order) instead of token ids: the final, normed hidden
    /// states of the sequences with `compute_logits`, in batch order.
    pub fn forward_embeddings(
        &self,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
        embeddings: &Tensor,
    ) -> Result<Tensor> {
        let kv_width = self.config.num_key_value_heads * self.config.head_dim();
        let step = Step {
            meta: PagedAttentionMetadata::new(
                batch,
                kv_width,
                self.spec.kv_cache.dtype,
                &self.spec.device,
            )?,
            groups: if self.conv_state.num_layers > 0 {
                conv_groups(batch)?
            } else {
                Vec::new()
            },
            kv_cache,
            conv_state: &batch.conv_state,
        };
        let mut x = embeddings.to_dtype(self.spec.kv_cache.dtype)?;
        for layer in &self.layers {
            x = layer.forward(&x, &self.rope, &step)?;
        }
        let rows = x.index_select(&step.meta.logits_rows, 0)?;
        self.norm.forward(&rows)
    }
}

impl Lfm2 {
    /// The backbone over one whole sequence of input embeddings (`[tokens, hidden]`)
    /// without the engine: attention under `mask` (`[tokens, tokens]`, 0 where a query
    /// sees a key and −∞ elsewhere), convolutions causal from a zero state. Returns the
    /// final, normed hidden states of every token.
    pub fn forward_dense(&self, embeddings: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let tokens = embeddings.dim(0)?;
        if mask.dims() != [tokens, tokens] {
            candle_core::bail!(
                "an attention mask of shape {:?} for {tokens} tokens",
                mask.dims()
            );
        }
        let dtype = self.spec.kv_cache.dtype;
        let positions = Tensor::arange(0u32, tokens as u32, &self.spec.device)?;
        let mask = mask.to_dtype(dtype)?;
        let mut x = embeddings.to_dtype(dtype)?;
        for layer in &self.layers {
            x = layer.forward_dense(&x, &self.rope, &positions, &mask)?;
        }
        self.norm.forward(&x)
    }
}

impl ModelExecutor for Lfm2 {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn conv_state_shape(&self) -> Option<ConvStateShape> {
        (self.conv_state.num_layers > 0).then_some(self.conv_state)
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.forward_paged(batch, kv_cache)
    }
}
