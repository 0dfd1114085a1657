//! Parity with transformers' Lfm2ForCausalLM: a tiny random-weight LFM2
//! (tests/fixtures/lfm2/make_fixtures.py), loaded through our Hugging Face loader and run
//! on the engine, must reproduce transformers' greedy tokens and logits with several
//! sequences batched at different positions, prompts prefilled in chunks, and after a
//! preemption (whose convolution state is recomputed from the tokens).

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device};
use common::max_abs_diff;
use izwi_core::engine::{
    EngineCore, EngineCoreConfig, EngineCoreRequest, EngineOutput, GenerationParams,
    MetricsSnapshot,
};
use izwi_core::models::lfm2::Lfm2;
use izwi_core::models::llama::GgufWeights;
use izwi_core::models::shared::gguf::GgufFile;
use izwi_core::text::{ChatFormat, ChatMessage};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    prompt: Vec<u32>,
    greedy_tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lfm2/tiny")
}

fn reference() -> Reference {
    let text = std::fs::read_to_string(fixture().join("reference.json")).expect("reference.json");
    serde_json::from_str(&text).expect("valid reference.json")
}

fn load() -> Lfm2 {
    Lfm2::from_dir(&fixture(), DType::F32, &Device::Cpu).expect("checkpoint loads")
}

/// Runs every case greedily on one engine, case `i` arriving at step `arrivals[i]`,
/// and checks its tokens and logits against transformers'. Returns the metrics.
fn check_on_engine(model: Lfm2, config: EngineCoreConfig, arrivals: &[u64]) -> MetricsSnapshot {
    let reference = reference();
    let mut core = EngineCore::new(config, Box::new(model)).expect("engine");
    let total_blocks = core.kv_cache_stats().total_blocks;
    let mut ids = HashMap::new();
    let mut done: HashMap<usize, EngineOutput> = HashMap::new();
    let mut step = 0;
    while done.len() < reference.cases.len() {
        for (n, case) in reference.cases.iter().enumerate() {
            if arrivals[n] == step {
                let params = GenerationParams {
                    max_tokens: case.greedy_tokens.len(),
                    ignore_eos: true,
                    return_logits: true,
                    ..GenerationParams::default()
                };
                let request = EngineCoreRequest::new(case.prompt.clone()).with_params(params);
                ids.insert(core.add_request(request).expect("accepted"), n);
            }
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            done.insert(ids[&out.request_id], out);
        }
        step += 1;
        assert!(step < 10_000, "the engine stopped making progress");
    }
    for (n, case) in reference.cases.iter().enumerate() {
        let out = &done[&n];
        assert_eq!(out.tokens, case.greedy_tokens, "case {n}: tokens");
        assert_eq!(out.logits.len(), case.logits.len(), "case {n}");
        for (i, (got, want)) in out.logits.iter().zip(&case.logits).enumerate() {
            let diff = max_abs_diff(got, want);
            assert!(
                diff <= TOLERANCE,
                "case {n}: token {i} logits differ from transformers by {diff}"
            );
        }
    }
    assert_eq!(core.kv_cache_stats().free_blocks, total_blocks);
    assert_eq!(core.num_conv_states(), 0, "every convolution state freed");
    core.metrics().snapshot()
}

#[test]
fn batched_at_different_positions_with_chunked_prefill() {
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(128),
        chunked_prefill_threshold: 8,
        max_tokens_per_step: 24,
        ..EngineCoreConfig::default()
    };
    let metrics = check_on_engine(load(), config, &[0, 0, 2, 3, 7]);
    assert!(
        metrics.chunked_prefills > 0,
        "prompts were prefilled in chunks"
    );
    assert_eq!(metrics.preemptions, 0);
}

#[test]
fn after_a_preemption_the_recomputed_state_matches() {
    // Room for about two of the five sequences at once: later ones preempt.
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(14),
        chunked_prefill_threshold: 6,
        max_tokens_per_step: 16,
        ..EngineCoreConfig::default()
    };
    let metrics = check_on_engine(load(), config, &[0, 0, 0, 1, 1]);
    assert!(
        metrics.preemptions > 0,
        "the cache is small enough to preempt"
    );
}

#[test]
fn every_case_alone_matches() {
    let config = EngineCoreConfig {
        max_batch_size: 1,
        ..EngineCoreConfig::default()
    };
    check_on_engine(load(), config, &[0; 5]);
}

/// The same weights written as llama.cpp lays out an `lfm2` GGUF file
/// (tests/fixtures/lfm2/make_gguf.py), held to the same logits.
#[test]
fn the_gguf_file_matches_transformers() {
    let path = fixture().with_file_name("tiny.gguf");
    let file = GgufFile::open(&path).expect("opens");
    for weights in [GgufWeights::Dequantized, GgufWeights::Quantized] {
        let model = Lfm2::from_gguf(&file, weights, &Device::Cpu).expect("loads");
        // The layers as config.json lays them out, read from the tensors present.
        assert_eq!(model.config().layer_kinds(), load().config().layer_kinds());
        assert_eq!(model.config().ff_dim(), load().config().ff_dim());
        let config = EngineCoreConfig {
            block_size: 4,
            chunked_prefill_threshold: 8,
            ..EngineCoreConfig::default()
        };
        check_on_engine(model, config, &[0, 0, 1, 2, 3]);
    }
}

#[derive(Deserialize)]
struct ChatReference {
    messages: Vec<ChatMessage>,
    prompt: Vec<u32>,
}

#[test]
fn the_folder_renders_chat_prompts_as_transformers_does() {
    let text =
        std::fs::read_to_string(fixture().join("chat_reference.json")).expect("chat reference");
    let reference: ChatReference = serde_json::from_str(&text).expect("valid");
    let format = ChatFormat::from_dir(&fixture()).expect("chat format");
    let prompt = format.prompt_tokens(&reference.messages).expect("prompt");
    assert_eq!(prompt, reference.prompt);
    assert_eq!(format.stop_tokens(), [2], "<|im_end|> ends a turn");
}
