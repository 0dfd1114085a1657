use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{RmsNorm, VarBuilder};

use super::config::LlamaConfig;
use crate::engine::{ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec};
use crate::models::shared::decoder_weights::{DecoderWeights, KeptIn};
use crate::models::shared::embedding::Embedding;
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::rope::{RotaryEmbedding, RotaryPairs};
use crate::models::shared::weights::{load_model_dir, random_weights};

/// A Llama's weights by their Hugging Face names (`model.layers.0.self_attn.q_proj`),
/// from a checkpoint folder or a GGUF file.
pub(crate) trait LlamaWeights: DecoderWeights {
    /// Which dimensions RoPE rotates together in the stored query and key weights.
    fn rotary_pairs(&self) -> RotaryPairs;
    /// What each RoPE frequency is divided by (Llama 3.1's long-context scaling), if the
    /// checkpoint stores them: `head_dim / 2` numbers.
    fn rope_freq_factors(&self, count: usize) -> Result<Option<Vec<f32>>>;
}

impl LlamaWeights for VarBuilder<'_> {
    fn rotary_pairs(&self) -> RotaryPairs {
        RotaryPairs::Halves
    }

    fn rope_freq_factors(&self, _count: usize) -> Result<Option<Vec<f32>>> {
        // Hugging Face configs describe scaling in `rope_scaling`, which
        // `LlamaConfig::check_supported` refuses.
        Ok(None)
    }
}

impl LlamaWeights for KeptIn<'_> {
    fn rotary_pairs(&self) -> RotaryPairs {
        self.vb().rotary_pairs()
    }

    fn rope_freq_factors(&self, count: usize) -> Result<Option<Vec<f32>>> {
        self.vb().rope_freq_factors(count)
    }
}

pub(super) struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    /// Qwen3's per-head norms of queries and keys, applied before RoPE.
    q_norm: Option<RmsNorm>,
    k_norm: Option<RmsNorm>,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
}

impl Attention {
    fn load(cfg: &LlamaConfig, w: &dyn LlamaWeights, prefix: &str) -> Result<Self> {
        let (heads, kv_heads, dim) = (cfg.num_attention_heads, cfg.num_kv_heads(), cfg.head_dim());
        let hidden = cfg.hidden_size;
        let bias = cfg.architecture.qkv_bias();
        let head_norm = |name: &str| -> Result<Option<RmsNorm>> {
            cfg.architecture
                .qk_norm()
                .then(|| w.rms_norm(&format!("{prefix}.{name}"), dim, cfg.rms_norm_eps))
                .transpose()
        };
        Ok(Self {
            q_proj: w.linear(&format!("{prefix}.q_proj"), hidden, heads * dim, bias)?,
            k_proj: w.linear(&format!("{prefix}.k_proj"), hidden, kv_heads * dim, bias)?,
            v_proj: w.linear(&format!("{prefix}.v_proj"), hidden, kv_heads * dim, bias)?,
            o_proj: w.linear(&format!("{prefix}.o_proj"), heads * dim, hidden, false)?,
            q_norm: head_norm("q_norm")?,
            k_norm: head_norm("k_norm")?,
            num_heads: heads,
            num_kv_heads: kv_heads,
            head_dim: dim,
        })
    }

    /// Projects `x` (`[tokens, hidden]`) to rotated q, k and v
    /// (`[tokens, heads, head_dim]`), hands them to `attend`, and projects its output.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
        attend: impl FnOnce(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let tokens = x.dim(0)?;
        let q = self
            .q_proj
            .forward(x)?
            .reshape((tokens, self.num_heads, self.head_dim))?;
        let k = self
            .k_proj
            .forward(x)?
            .reshape((tokens, self.num_kv_heads, self.head_dim))?;
        let v = self
            .v_proj
            .forward(x)?
            .reshape((tokens, self.num_kv_heads, self.head_dim))?;
        let (q, k) = match (&self.q_norm, &self.k_norm) {
            (Some(q_norm), Some(k_norm)) => (q_norm.forward(&q)?, k_norm.forward(&k)?),
            _ => (q, k),
        };
        let q = rope.apply(&q, positions)?;
        let k = rope.apply(&k, positions)?;
        self.o_proj.forward(&attend(&q, &k, &v)?)
    }
}

struct Mlp {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

impl Mlp {
    fn load(cfg: &LlamaConfig, w: &dyn LlamaWeights, prefix: &str) -> Result<Self> {
        let (hidden, inner) = (cfg.hidden_size, cfg.intermediate_size);
        Ok(Self {
            gate_proj: w.linear(&format!("{prefix}.gate_proj"), hidden, inner, false)?,
            up_proj: w.linear(&format!("{prefix}.up_proj"), hidden, inner, false)?,
            down_proj: w.linear(&format!("{prefix}.down_proj"), inner, hidden, false)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate_proj.forward(x)?)?;
        self.down_proj.forward(&(gate * self.up_proj.forward(x)?)?)
    }
}

pub(crate) struct DecoderLayer {
    pub(super) self_attn: Attention,
    mlp: Mlp,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
}

impl DecoderLayer {
    pub(crate) fn load(cfg: &LlamaConfig, w: &dyn LlamaWeights, prefix: &str) -> Result<Self> {
        let norm = |name: &str| {
            w.rms_norm(
                &format!("{prefix}.{name}"),
                cfg.hidden_size,
                cfg.rms_norm_eps,
            )
        };
        Ok(Self {
            self_attn: Attention::load(cfg, w, &format!("{prefix}.self_attn"))?,
            mlp: Mlp::load(cfg, w, &format!("{prefix}.mlp"))?,
            input_layernorm: norm("input_layernorm")?,
            post_attention_layernorm: norm("post_attention_layernorm")?,
        })
    }

    /// One pre-norm residual block; `attend` is the attention over this layer's cache.
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        rope: &RotaryEmbedding,
        positions: &Tensor,
        attend: impl FnOnce(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let h =
            self.self_attn
                .forward(&self.input_layernorm.forward(x)?, rope, positions, attend)?;
        let x = (x + h)?;
        let h = self
            .mlp
            .forward(&self.post_attention_layernorm.forward(&x)?)?;
        x + h
    }
}

/// A Llama model, runnable on the engine (paged, batched) and on its own (dense).
pub struct Llama {
    embed_tokens: Embedding,
    pub(super) layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    lm_head: Linear,
    pub(super) rope: RotaryEmbedding,
    pub(super) config: LlamaConfig,
    spec: ModelSpec,
}

impl Llama {
    /// Builds the model from weights named as in Hugging Face's `LlamaForCausalLM`.
    pub fn load(config: LlamaConfig, vb: VarBuilder) -> Result<Self> {
        Self::build(config, &vb)
    }

    pub(super) fn build(config: LlamaConfig, w: &dyn LlamaWeights) -> Result<Self> {
        config.check_supported().map_err(candle_core::Error::msg)?;
        let device = w.device().clone();
        let dtype = w.dtype();
        let embed_tokens =
            w.embedding("model.embed_tokens", config.vocab_size, config.hidden_size)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| DecoderLayer::load(&config, w, &format!("model.layers.{i}")))
            .collect::<Result<Vec<_>>>()?;
        let norm = w.rms_norm("model.norm", config.hidden_size, config.rms_norm_eps)?;
        let lm_head = if config.tie_word_embeddings {
            embed_tokens.as_linear()?
        } else {
            w.linear("lm_head", config.hidden_size, config.vocab_size, false)?
        };
        let rope = RotaryEmbedding::new(
            config.head_dim(),
            config.max_position_embeddings,
            config.rope_theta(),
            w.rope_freq_factors(config.head_dim() / 2)?.as_deref(),
            dtype,
            &device,
        )?
        .with_pairs(w.rotary_pairs());
        let spec = ModelSpec {
            vocab_size: config.vocab_size,
            max_position_embeddings: config.max_position_embeddings,
            eos_token_ids: config.eos_token_ids(),
            kv_cache: KvCacheShape {
                num_layers: config.num_hidden_layers,
                num_kv_heads: config.num_kv_heads(),
                head_dim: config.head_dim(),
                dtype,
            },
            device,
            audio_seconds_per_token: None,
            requires_audio: false,
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rope,
            config,
            spec,
        })
    }

    /// A model with seeded random weights: the same seed gives the same model.
    pub fn random(config: LlamaConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        Self::load(config, random_weights(seed, dtype, device))
    }

    /// Loads `config.json` and `*.safetensors` from a Hugging Face model folder.
    pub fn from_dir(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let (config, weights) = load_model_dir(dir, dtype, device)?;
        Self::load(config, weights)
    }

    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    pub(super) fn embed(&self, tokens: &[u32]) -> Result<Tensor> {
        let ids = Tensor::new(tokens, &self.spec.device)?;
        self.embed_tokens
            .forward(&ids)?
            .to_dtype(self.spec.kv_cache.dtype)
    }

    /// Final norm and output projection of the given rows of `hidden`.
    pub(super) fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        self.lm_head
            .forward(&self.norm.forward(hidden)?)?
            .to_dtype(DType::F32)
    }

    /// One engine step over the paged cache; see [`ModelExecutor::execute`].
    pub fn forward_paged(&self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        let kv_width = self.config.num_kv_heads() * self.config.head_dim();
        let meta = PagedAttentionMetadata::new(
            batch,
            kv_width,
            self.spec.kv_cache.dtype,
            &self.spec.device,
        )?;
        let tokens: Vec<u32> = batch
            .sequences
            .iter()
            .flat_map(|s| s.tokens.iter().copied())
            .collect();
        let mut x = self.embed(&tokens)?;
        for (layer, cache) in self.layers.iter().zip(kv_cache) {
            x = layer.forward(&x, &self.rope, &meta.positions, |q, k, v| {
                meta.attention(cache, q, k, v)
            })?;
        }
        self.logits(&x.index_select(&meta.logits_rows, 0)?)
    }
}

impl ModelExecutor for Llama {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.forward_paged(batch, kv_cache)
    }
}
