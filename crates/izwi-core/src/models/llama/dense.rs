//! The plain path: one sequence, a contiguous KV cache grown by concatenation. It is
//! the baseline the paged engine is tested for equality against and benchmarked
//! against; the engine never uses it.

use candle_core::{Result, Tensor};

use super::model::Llama;
use crate::engine::ModelExecutor;
use crate::models::shared::paged_attention::dense_attention;

/// Contiguous K/V of one sequence, per layer: `[1, kv_heads, tokens, head_dim]`.
#[derive(Default)]
pub struct DenseKvCache {
    layers: Vec<(Tensor, Tensor)>,
}

impl DenseKvCache {
    pub fn len(&self) -> usize {
        self.layers
            .first()
            .map_or(0, |(k, _)| k.dim(2).unwrap_or(0))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Llama {
    /// Runs `tokens`, the continuation of the sequence in `cache`, and returns the
    /// logits of the last one (`[vocab]`, f32).
    pub fn forward_dense(&self, tokens: &[u32], cache: &mut DenseKvCache) -> Result<Tensor> {
        if tokens.is_empty() {
            candle_core::bail!("forward_dense needs at least one token");
        }
        let start = cache.len();
        let positions = Tensor::arange(
            start as u32,
            (start + tokens.len()) as u32,
            &self.spec().device,
        )?;
        let mut x = self.embed(tokens)?;
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(&x, &self.rope, &positions, |q, k, v| {
                // [tokens, heads, d] -> [1, heads, tokens, d]
                let to_heads = |t: &Tensor| t.transpose(0, 1)?.unsqueeze(0)?.contiguous();
                let (q, mut k, mut v) = (to_heads(q)?, to_heads(k)?, to_heads(v)?);
                if let Some((past_k, past_v)) = cache.layers.get(i) {
                    k = Tensor::cat(&[past_k, &k], 2)?;
                    v = Tensor::cat(&[past_v, &v], 2)?;
                }
                let out = dense_attention(&q, &k, &v)?;
                if i < cache.layers.len() {
                    cache.layers[i] = (k, v);
                } else {
                    cache.layers.push((k, v));
                }
                Ok(out)
            })?;
        }
        let last = x.narrow(0, tokens.len() - 1, 1)?;
        self.logits(&last)?.squeeze(0)
    }
}
