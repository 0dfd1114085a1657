use serde::{Deserialize, Serialize};

use super::batch_strategy::BatchStrategy;
use super::error::{EngineError, Result};
use super::types::SchedulingPolicy;

/// Settings of one engine instance.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineCoreConfig {
    /// Most sequences running at once.
    pub max_batch_size: usize,
    /// Longest sequence (prompt plus output) accepted.
    pub max_seq_len: usize,
    /// Most tokens processed by one step, prefill and decode together.
    pub max_tokens_per_step: usize,
    pub scheduling_policy: SchedulingPolicy,
    /// How each step's token budget is shared between decodes and prefill chunks.
    pub batch_strategy: BatchStrategy,
    /// Tokens per KV-cache block.
    pub block_size: usize,
    /// Memory the KV cache may use; the number of blocks is derived from it and the
    /// model's shape.
    pub kv_cache_bytes: usize,
    /// Exact number of blocks, overriding `kv_cache_bytes` (tests, benchmarks).
    pub num_blocks: Option<usize>,
    /// Split prompts longer than `chunked_prefill_threshold` over several steps so
    /// running decodes are not stalled by one long prefill.
    pub enable_chunked_prefill: bool,
    pub chunked_prefill_threshold: usize,
    /// Reuse the KV blocks of earlier requests that share a token prefix.
    pub enable_prefix_caching: bool,
}

impl Default for EngineCoreConfig {
    fn default() -> Self {
        Self {
            max_batch_size: 8,
            max_seq_len: 4096,
            max_tokens_per_step: 512,
            scheduling_policy: SchedulingPolicy::Fcfs,
            batch_strategy: BatchStrategy::default(),
            block_size: 16,
            kv_cache_bytes: 1 << 30,
            num_blocks: None,
            enable_chunked_prefill: true,
            chunked_prefill_threshold: 256,
            enable_prefix_caching: true,
        }
    }
}

impl EngineCoreConfig {
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("max_batch_size", self.max_batch_size),
            ("max_seq_len", self.max_seq_len),
            ("max_tokens_per_step", self.max_tokens_per_step),
            ("block_size", self.block_size),
            ("chunked_prefill_threshold", self.chunked_prefill_threshold),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(EngineError::Config(format!("{name} must be at least 1")));
            }
        }
        if self.max_tokens_per_step < self.max_batch_size {
            return Err(EngineError::Config(format!(
                "max_tokens_per_step ({}) must be at least max_batch_size ({}) so every \
                 running sequence can decode in one step",
                self.max_tokens_per_step, self.max_batch_size
            )));
        }
        Ok(())
    }

    /// Most tokens one sequence may process in one step.
    pub fn max_chunk_tokens(&self) -> usize {
        if self.enable_chunked_prefill {
            self.chunked_prefill_threshold.min(self.max_tokens_per_step)
        } else {
            self.max_tokens_per_step
        }
    }
}
