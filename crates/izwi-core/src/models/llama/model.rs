use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{embedding, rms_norm, Embedding, RmsNorm, VarBuilder};

use super::config::LlamaConfig;
use crate::engine::{ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec};
use crate::models::shared::linear::Linear;
use crate::models::shared::paged_attention::PagedAttentionMetadata;
use crate::models::shared::rope::RotaryEmbedding;
use crate::models::shared::weights::{load_model_dir, random_weights};

pub(super) struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
}

impl Attention {
    fn load(cfg: &LlamaConfig, vb: VarBuilder) -> Result<Self> {
        let (heads, kv_heads, dim) = (cfg.num_attention_heads, cfg.num_kv_heads(), cfg.head_dim());
        Ok(Self {
            q_proj: Linear::load_no_bias(cfg.hidden_size, heads * dim, vb.pp("q_proj"))?,
            k_proj: Linear::load_no_bias(cfg.hidden_size, kv_heads * dim, vb.pp("k_proj"))?,
            v_proj: Linear::load_no_bias(cfg.hidden_size, kv_heads * dim, vb.pp("v_proj"))?,
            o_proj: Linear::load_no_bias(heads * dim, cfg.hidden_size, vb.pp("o_proj"))?,
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
    fn load(cfg: &LlamaConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            gate_proj: Linear::load_no_bias(
                cfg.hidden_size,
                cfg.intermediate_size,
                vb.pp("gate_proj"),
            )?,
            up_proj: Linear::load_no_bias(
                cfg.hidden_size,
                cfg.intermediate_size,
                vb.pp("up_proj"),
            )?,
            down_proj: Linear::load_no_bias(
                cfg.intermediate_size,
                cfg.hidden_size,
                vb.pp("down_proj"),
            )?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate_proj.forward(x)?)?;
        self.down_proj.forward(&(gate * self.up_proj.forward(x)?)?)
    }
}

pub(super) struct DecoderLayer {
    pub(super) self_attn: Attention,
    mlp: Mlp,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
}

impl DecoderLayer {
    fn load(cfg: &LlamaConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            self_attn: Attention::load(cfg, vb.pp("self_attn"))?,
            mlp: Mlp::load(cfg, vb.pp("mlp"))?,
            input_layernorm: rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?,
            post_attention_layernorm: rms_norm(
                cfg.hidden_size,
                cfg.rms_norm_eps,
                vb.pp("post_attention_layernorm"),
            )?,
        })
    }

    /// One pre-norm residual block; `attend` is the attention over this layer's cache.
    pub(super) fn forward(
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
        config.check_supported().map_err(candle_core::Error::msg)?;
        let device = vb.device().clone();
        let dtype = vb.dtype();
        let embed_tokens = embedding(
            config.vocab_size,
            config.hidden_size,
            vb.pp("model.embed_tokens"),
        )?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| DecoderLayer::load(&config, vb.pp(format!("model.layers.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let norm = rms_norm(config.hidden_size, config.rms_norm_eps, vb.pp("model.norm"))?;
        let lm_head = if config.tie_word_embeddings {
            Linear::new(embed_tokens.embeddings(), None)?
        } else {
            Linear::load_no_bias(config.hidden_size, config.vocab_size, vb.pp("lm_head"))?
        };
        let rope = RotaryEmbedding::new(
            config.head_dim(),
            config.max_position_embeddings,
            config.rope_theta(),
            dtype,
            &device,
        )?;
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
        self.embed_tokens.forward(&ids)
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
