//! Decode-throughput benchmark of the engine: the same model at several batch sizes in
//! one run, beside a named baseline (the model's plain dense path, one sequence).

use std::time::Instant;

use candle_core::{DType, Device};
use serde::Serialize;

use crate::engine::{
    EngineCore, EngineCoreConfig, EngineCoreRequest, EngineError, GenerationParams,
};
use crate::models::llama::{DenseKvCache, Llama, LlamaConfig};

#[derive(Debug, Clone)]
pub struct DecodeBenchConfig {
    pub model: LlamaConfig,
    pub batch_sizes: Vec<usize>,
    pub prompt_len: usize,
    /// Tokens each sequence decodes after its prefill.
    pub new_tokens: usize,
    pub seed: u64,
}

impl Default for DecodeBenchConfig {
    fn default() -> Self {
        Self {
            model: LlamaConfig::bench(),
            batch_sizes: vec![1, 2, 4, 8, 16],
            prompt_len: 32,
            new_tokens: 64,
            seed: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ThroughputRow {
    pub batch_size: usize,
    pub decode_tokens: usize,
    pub seconds: f64,
    pub tokens_per_sec: f64,
    /// Throughput relative to batch size 1 through the engine.
    pub ratio_to_batch_1: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DecodeBenchReport {
    pub parameters: usize,
    /// The baseline: one sequence decoded by the model's dense path, no engine.
    pub dense_tokens_per_sec: f64,
    pub rows: Vec<ThroughputRow>,
}

/// Runs the benchmark on the CPU with random weights of `config.model`'s shape.
pub fn decode_throughput(config: &DecodeBenchConfig) -> Result<DecodeBenchReport, EngineError> {
    let device = Device::Cpu;
    let model = &config.model;
    let prompt = |i: usize| -> Vec<u32> {
        (0..config.prompt_len)
            .map(|j| ((i * 7919 + j * 104_729) % (model.vocab_size - 1) + 1) as u32)
            .collect()
    };

    let dense = Llama::random(model.clone(), config.seed, DType::F32, &device)?;
    let mut cache = DenseKvCache::default();
    let logits = dense.forward_dense(&prompt(0), &mut cache)?;
    let mut token = crate::models::shared::sampling::argmax(&logits.to_vec1::<f32>()?);
    let started = Instant::now();
    for _ in 0..config.new_tokens {
        let logits = dense.forward_dense(&[token], &mut cache)?;
        token = crate::models::shared::sampling::argmax(&logits.to_vec1::<f32>()?);
    }
    let dense_tokens_per_sec = config.new_tokens as f64 / started.elapsed().as_secs_f64();
    let parameters = dense_parameter_count(model);
    drop(dense);

    let mut rows: Vec<ThroughputRow> = Vec::new();
    for &batch_size in &config.batch_sizes {
        let executor = Llama::random(model.clone(), config.seed, DType::F32, &device)?;
        let tokens_per_seq = config.prompt_len + config.new_tokens + 1;
        let engine_config = EngineCoreConfig {
            max_batch_size: batch_size,
            max_tokens_per_step: (batch_size * config.prompt_len).max(512),
            chunked_prefill_threshold: config.prompt_len,
            num_blocks: Some(batch_size * tokens_per_seq.div_ceil(16) + 1),
            enable_prefix_caching: false,
            ..EngineCoreConfig::default()
        };
        let mut core = EngineCore::new(engine_config, Box::new(executor))?;
        let params = GenerationParams {
            max_tokens: config.new_tokens + 1,
            ignore_eos: true,
            ..GenerationParams::default()
        };
        for i in 0..batch_size {
            core.add_request(EngineCoreRequest::new(prompt(i)).with_params(params.clone()))?;
        }
        // Prefill every sequence first (each yields its first token), then time decode alone.
        let mut finished = 0;
        while core.num_waiting() > 0 || core.metrics().snapshot().steps == 0 {
            finished += core.step().iter().filter(|o| o.is_final()).count();
        }
        let started = Instant::now();
        while core.has_unfinished() {
            finished += core.step().iter().filter(|o| o.is_final()).count();
        }
        let seconds = started.elapsed().as_secs_f64();
        debug_assert_eq!(finished, batch_size);
        let decode_tokens = batch_size * config.new_tokens;
        let tokens_per_sec = decode_tokens as f64 / seconds;
        let base = rows.first().map_or(tokens_per_sec, |r| r.tokens_per_sec);
        rows.push(ThroughputRow {
            batch_size,
            decode_tokens,
            seconds,
            tokens_per_sec,
            ratio_to_batch_1: tokens_per_sec / base,
        });
    }
    Ok(DecodeBenchReport {
        parameters,
        dense_tokens_per_sec,
        rows,
    })
}

fn dense_parameter_count(c: &LlamaConfig) -> usize {
    let (h, d) = (c.hidden_size, c.head_dim());
    let attention = h * c.num_attention_heads * d * 2 + h * c.num_kv_heads() * d * 2;
    let mlp = 3 * h * c.intermediate_size;
    let head = if c.tie_word_embeddings {
        0
    } else {
        c.vocab_size * h
    };
    c.num_hidden_layers * (attention + mlp + 2 * h) + c.vocab_size * h + h + head
}
