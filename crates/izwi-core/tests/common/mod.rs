//! Helpers shared by the engine's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

pub mod lfm2_audio;

use candle_core::{DType, Device};
use izwi_core::engine::{
    EngineCore, EngineCoreConfig, EngineCoreRequest, EngineOutput, GenerationParams, ModelExecutor,
};
use izwi_core::models::llama::{DenseKvCache, Llama, LlamaConfig};
use izwi_core::models::shared::sampling::argmax;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const SEED: u64 = 1234;

pub fn tiny_model() -> Llama {
    Llama::random(LlamaConfig::tiny(), SEED, DType::F32, &Device::Cpu).expect("tiny model builds")
}

/// Greedy decoding of one sequence on the plain dense path: the reference the paged,
/// batched engine must reproduce. Returns the tokens and the logits of each.
pub fn reference_decode(
    model: &Llama,
    prompt: &[u32],
    params: &GenerationParams,
) -> (Vec<u32>, Vec<Vec<f32>>) {
    let eos = model.config().eos_token_ids();
    let mut cache = DenseKvCache::default();
    let mut logits = model
        .forward_dense(prompt, &mut cache)
        .expect("dense forward");
    let (mut tokens, mut rows) = (Vec::new(), Vec::new());
    loop {
        let row = logits.to_vec1::<f32>().expect("logits row");
        let token = argmax(&row);
        tokens.push(token);
        rows.push(row);
        if (!params.ignore_eos && eos.contains(&token)) || tokens.len() >= params.max_tokens {
            return (tokens, rows);
        }
        logits = model
            .forward_dense(&[token], &mut cache)
            .expect("dense forward");
    }
}

/// A random workload: prompts built from a few shared prefixes (so the prefix cache
/// has something to find) plus random tails, with random output lengths.
pub struct Workload {
    pub prompts: Vec<Vec<u32>>,
    pub max_tokens: Vec<usize>,
    /// Step (or millisecond) at which each request arrives.
    pub arrivals: Vec<u64>,
}

pub fn workload(n: usize, seed: u64) -> Workload {
    let mut rng = StdRng::seed_from_u64(seed);
    let vocab = LlamaConfig::tiny().vocab_size as u32;
    let shared: Vec<Vec<u32>> = (0..3)
        .map(|_| {
            (0..rng.random_range(16..40))
                .map(|_| rng.random_range(1..vocab))
                .collect()
        })
        .collect();
    let mut w = Workload {
        prompts: Vec::new(),
        max_tokens: Vec::new(),
        arrivals: Vec::new(),
    };
    for _ in 0..n {
        let mut prompt = if rng.random_bool(0.6) {
            shared[rng.random_range(0..shared.len())].clone()
        } else {
            Vec::new()
        };
        let tail = rng.random_range(1..48);
        prompt.extend((0..tail).map(|_| rng.random_range(1..vocab)));
        w.prompts.push(prompt);
        w.max_tokens.push(rng.random_range(1..40));
        w.arrivals.push(rng.random_range(0..30));
    }
    w
}

/// A deliberately small cache and step so chunked prefill, preemption and prefix
/// reuse all happen: 24 blocks of 8 tokens (192 tokens) for up to 6 sequences.
pub fn tight_config() -> EngineCoreConfig {
    EngineCoreConfig {
        max_batch_size: 6,
        max_tokens_per_step: 40,
        block_size: 8,
        num_blocks: Some(24),
        chunked_prefill_threshold: 16,
        ..EngineCoreConfig::default()
    }
}

pub fn greedy(max_tokens: usize) -> GenerationParams {
    GenerationParams {
        max_tokens,
        return_logits: true,
        ..GenerationParams::default()
    }
}

/// Runs each `(prompt, new tokens)` through one engine together, greedy with every
/// logit returned and end-of-sequence ignored, and gives the outputs in case order.
pub fn greedy_on_engine(
    model: impl ModelExecutor + 'static,
    config: EngineCoreConfig,
    cases: &[(Vec<u32>, usize)],
) -> Vec<EngineOutput> {
    let mut core = EngineCore::new(config, Box::new(model)).expect("engine");
    let mut ids = std::collections::HashMap::new();
    for (n, (prompt, new_tokens)) in cases.iter().enumerate() {
        let params = GenerationParams {
            max_tokens: *new_tokens,
            ignore_eos: true,
            ..greedy(*new_tokens)
        };
        let id = core
            .add_request(EngineCoreRequest::new(prompt.clone()).with_params(params))
            .expect("accepted");
        ids.insert(id, n);
    }
    let mut outputs: Vec<Option<EngineOutput>> = vec![None; cases.len()];
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            let n = ids[&out.request_id];
            outputs[n] = Some(out);
        }
    }
    outputs
        .into_iter()
        .map(|out| out.expect("every case finished"))
        .collect()
}

/// Largest absolute difference between two logits rows.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
