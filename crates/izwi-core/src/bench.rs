//! Benchmarks of the engine: decode throughput of the same model at several batch sizes
//! in one run, beside a named baseline (the model's plain dense path, one sequence); and
//! the batch strategies side by side on a mixed load.

use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device};
use serde::Serialize;

use crate::engine::{
    BatchStrategy, EngineCore, EngineCoreConfig, EngineCoreRequest, EngineError, GenerationParams,
    ModelExecutor, RequestId,
};
use crate::models::lfm2::{Lfm2, Lfm2Config};
use crate::models::llama::{DenseKvCache, Llama, LlamaConfig};
use crate::models::voxtral_realtime::VoxtralRealtime;

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
    let make = || -> Result<Box<dyn ModelExecutor>, EngineError> {
        Ok(Box::new(Llama::random(
            model.clone(),
            config.seed,
            DType::F32,
            &device,
        )?))
    };
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

    Ok(DecodeBenchReport {
        parameters,
        dense_tokens_per_sec,
        rows: engine_decode(
            &make,
            &config.batch_sizes,
            &prompt,
            config.prompt_len,
            config.new_tokens,
        )?,
    })
}

/// LFM2 decode throughput on the engine at each batch size: the checkpoint in `dir`
/// (a Hugging Face folder), or random weights of LFM2-350M's shape.
pub fn lfm2_decode_throughput(
    dir: Option<&Path>,
    batch_sizes: &[usize],
    prompt_len: usize,
    new_tokens: usize,
) -> Result<Vec<ThroughputRow>, EngineError> {
    let device = Device::Cpu;
    let make = || -> Result<Box<dyn ModelExecutor>, EngineError> {
        Ok(Box::new(match dir {
            Some(dir) => Lfm2::from_dir(dir, DType::F32, &device)?,
            None => Lfm2::random(Lfm2Config::lfm2_350m(), 0, DType::F32, &device)?,
        }))
    };
    let vocab = match dir {
        Some(dir) => {
            let path = dir.join("config.json");
            let text = std::fs::read_to_string(&path)
                .map_err(|e| EngineError::Config(format!("{}: {e}", path.display())))?;
            serde_json::from_str::<Lfm2Config>(&text)
                .map_err(|e| EngineError::Config(format!("{}: {e}", path.display())))?
                .vocab_size
        }
        None => Lfm2Config::lfm2_350m().vocab_size,
    };
    let prompt = |i: usize| -> Vec<u32> {
        (0..prompt_len)
            .map(|j| ((i * 7919 + j * 104_729) % (vocab - 1) + 1) as u32)
            .collect()
    };
    engine_decode(&make, batch_sizes, &prompt, prompt_len, new_tokens)
}

/// One row of [`voxtral_throughput`]: `streams` recordings transcribed at once.
#[derive(Debug, Clone, Serialize)]
pub struct StreamsRow {
    pub streams: usize,
    pub seconds: f64,
    pub audio_seconds_per_second: f64,
}

/// Voxtral Realtime on the engine: `audio` (16 kHz mono) transcribed by each number of
/// `streams` at once, every position decoded (the end token ignored, as the reference
/// side does), timed from the requests' arrival to the last token, the model's load
/// excluded. The checkpoint in `dir` is a Hugging Face folder.
pub fn voxtral_throughput(
    dir: &Path,
    streams: &[usize],
    audio: &[f32],
) -> Result<Vec<StreamsRow>, EngineError> {
    let model = VoxtralRealtime::from_dir(dir, None, DType::F32, &Device::Cpu)?;
    let format = model.format().clone();
    let most = streams.iter().copied().max().unwrap_or(1);
    let request = |max_tokens: Option<usize>| {
        let mut request = format.recording_request(audio);
        request.params.ignore_eos = true;
        if let Some(max) = max_tokens {
            request.params.max_tokens = max;
        }
        request
    };
    let positions = format.prompt().len() + request(None).params.max_tokens;
    let config = EngineCoreConfig {
        block_size: 16,
        max_batch_size: most,
        num_blocks: Some(most * positions.div_ceil(16) + 1),
        enable_prefix_caching: false,
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(model))?;
    let seconds_of_audio = audio.len() as f64 / 16_000.0;
    // A first short request warms the caches and the thread pool.
    core.add_request(request(Some(2)))?;
    while core.has_unfinished() {
        core.step();
    }
    let mut rows = Vec::new();
    for &n in streams {
        let started = Instant::now();
        for _ in 0..n {
            core.add_request(request(None))?;
        }
        while core.has_unfinished() {
            core.step();
        }
        let seconds = started.elapsed().as_secs_f64();
        rows.push(StreamsRow {
            streams: n,
            seconds,
            audio_seconds_per_second: n as f64 * seconds_of_audio / seconds,
        });
    }
    Ok(rows)
}

/// Decodes `new_tokens` after a prompt in each of `batch_size` sequences on a fresh
/// engine per batch size, prefill excluded from the timing.
fn engine_decode(
    make: &dyn Fn() -> Result<Box<dyn ModelExecutor>, EngineError>,
    batch_sizes: &[usize],
    prompt: &dyn Fn(usize) -> Vec<u32>,
    prompt_len: usize,
    new_tokens: usize,
) -> Result<Vec<ThroughputRow>, EngineError> {
    let mut rows: Vec<ThroughputRow> = Vec::new();
    for &batch_size in batch_sizes {
        let executor = make()?;
        let tokens_per_seq = prompt_len + new_tokens + 1;
        let engine_config = EngineCoreConfig {
            max_batch_size: batch_size,
            max_tokens_per_step: (batch_size * prompt_len).max(512),
            chunked_prefill_threshold: prompt_len,
            num_blocks: Some(batch_size * tokens_per_seq.div_ceil(16) + 1),
            enable_prefix_caching: false,
            ..EngineCoreConfig::default()
        };
        let mut core = EngineCore::new(engine_config, executor)?;
        let params = GenerationParams {
            max_tokens: new_tokens + 1,
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
        let decode_tokens = batch_size * new_tokens;
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
    Ok(rows)
}

/// Streams decoding while long prompts arrive: what each batch strategy costs the
/// streams (the gaps between their tokens) and gives the arrivals (their first token).
#[derive(Debug, Clone)]
pub struct StrategyBenchConfig {
    pub model: LlamaConfig,
    /// Sequences already decoding when the prompts arrive.
    pub streams: usize,
    /// Requests with long prompts arriving together.
    pub arrivals: usize,
    pub arrival_prompt_len: usize,
    /// Tokens each stream decodes after the arrivals came.
    pub stream_tokens: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StrategyRow {
    pub strategy: &'static str,
    /// Between two tokens of a stream, while the arrivals are read and decoded.
    pub stream_gap_p50_ms: f64,
    pub stream_gap_p99_ms: f64,
    /// From the arrivals' admission to each one's first token.
    pub arrival_first_token_p50_ms: f64,
    pub arrival_first_token_max_ms: f64,
    /// Until every request has finished.
    pub total_s: f64,
}

/// Runs the mixed load once per strategy on the CPU, random weights of `config.model`.
pub fn batch_strategies(config: &StrategyBenchConfig) -> Result<Vec<StrategyRow>, EngineError> {
    let model = &config.model;
    let token = |i: usize, j: usize| ((i * 7919 + j * 104_729) % (model.vocab_size - 1) + 1) as u32;
    let mut rows = Vec::new();
    for strategy in BatchStrategy::ALL {
        let executor = Llama::random(model.clone(), config.seed, DType::F32, &Device::Cpu)?;
        let engine_config = EngineCoreConfig {
            max_batch_size: config.streams + config.arrivals,
            batch_strategy: strategy,
            enable_prefix_caching: false,
            ..EngineCoreConfig::default()
        };
        let mut core = EngineCore::new(engine_config, Box::new(executor))?;
        let mut streams = Vec::new();
        for i in 0..config.streams {
            let params = GenerationParams {
                max_tokens: config.stream_tokens + 2,
                ignore_eos: true,
                ..GenerationParams::default()
            };
            let prompt = (0..16).map(|j| token(i, j)).collect();
            let request = EngineCoreRequest::new(prompt)
                .with_params(params)
                .with_streaming(true);
            streams.push(core.add_request(request)?);
        }
        // Every stream past its prompt before the arrivals come.
        while core.num_waiting() > 0 || core.metrics().snapshot().steps == 0 {
            core.step();
        }
        core.step();
        let started = Instant::now();
        let mut arrivals = Vec::new();
        for i in 0..config.arrivals {
            let params = GenerationParams {
                max_tokens: 16,
                ignore_eos: true,
                ..GenerationParams::default()
            };
            let prompt = (0..config.arrival_prompt_len)
                .map(|j| token(1000 + i, j))
                .collect();
            let request = EngineCoreRequest::new(prompt)
                .with_params(params)
                .with_streaming(true);
            arrivals.push(core.add_request(request)?);
        }
        let mut last_token: std::collections::HashMap<RequestId, f64> =
            streams.iter().map(|id| (id.clone(), 0.0)).collect();
        let (mut gaps, mut first_tokens) = (Vec::new(), Vec::new());
        while core.has_unfinished() {
            let outputs = core.step();
            let now = started.elapsed().as_secs_f64();
            for output in outputs.iter().filter(|o| !o.tokens.is_empty()) {
                let id = &output.request_id;
                if let Some(last) = last_token.get_mut(id) {
                    gaps.push((now - *last) * 1e3);
                    *last = now;
                } else if arrivals.contains(id) && output.sequence == 0 {
                    first_tokens.push(now * 1e3);
                }
            }
        }
        gaps.sort_by(f64::total_cmp);
        first_tokens.sort_by(f64::total_cmp);
        rows.push(StrategyRow {
            strategy: strategy.name(),
            stream_gap_p50_ms: percentile(&gaps, 0.5),
            stream_gap_p99_ms: percentile(&gaps, 0.99),
            arrival_first_token_p50_ms: percentile(&first_tokens, 0.5),
            arrival_first_token_max_ms: first_tokens.last().copied().unwrap_or(f64::NAN),
            total_s: started.elapsed().as_secs_f64(),
        });
    }
    Ok(rows)
}

/// The value at fraction `p` of sorted `values` (nearest rank); NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
