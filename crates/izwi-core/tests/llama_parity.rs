//! Parity with the reference implementation: a tiny random-weight Llama made by
//! transformers (tests/fixtures/make_llama_tiny.py), loaded through our Hugging Face
//! loader, must reproduce transformers' greedy tokens and logits on both our dense path
//! and the paged, batched engine.

mod common;

use std::path::PathBuf;

use candle_core::{DType, Device};
use common::{greedy_on_engine, max_abs_diff};
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::llama::{DenseKvCache, Llama};
use izwi_core::models::shared::sampling::argmax;
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
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama-tiny")
}

fn reference() -> Reference {
    let text = std::fs::read_to_string(fixture().join("reference.json")).expect("reference.json");
    serde_json::from_str(&text).expect("valid reference.json")
}

fn load() -> Llama {
    Llama::from_dir(&fixture(), DType::F32, &Device::Cpu).expect("checkpoint loads")
}

fn assert_logits_match(got: &[Vec<f32>], want: &[Vec<f32>], label: &str) {
    assert_eq!(got.len(), want.len(), "{label}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let diff = max_abs_diff(g, w);
        assert!(
            diff <= TOLERANCE,
            "{label}: step {i} logits differ from transformers by {diff}"
        );
    }
}

#[test]
fn dense_path_matches_transformers() {
    let model = load();
    for (n, case) in reference().cases.iter().enumerate() {
        let mut cache = DenseKvCache::default();
        let mut logits = model
            .forward_dense(&case.prompt, &mut cache)
            .expect("forward");
        let (mut tokens, mut rows) = (Vec::new(), Vec::new());
        while tokens.len() < case.greedy_tokens.len() {
            let row = logits.to_vec1::<f32>().expect("row");
            let token = argmax(&row);
            tokens.push(token);
            rows.push(row);
            logits = model.forward_dense(&[token], &mut cache).expect("forward");
        }
        assert_eq!(tokens, case.greedy_tokens, "case {n}");
        assert_logits_match(&rows, &case.logits, &format!("case {n}"));
    }
}

#[test]
fn paged_engine_matches_transformers() {
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(64),
        chunked_prefill_threshold: 8,
        ..EngineCoreConfig::default()
    };
    let reference = reference();
    let cases: Vec<_> = reference
        .cases
        .iter()
        .map(|case| (case.prompt.clone(), case.greedy_tokens.len()))
        .collect();
    let outputs = greedy_on_engine(load(), config, &cases);
    for (n, (out, case)) in outputs.iter().zip(&reference.cases).enumerate() {
        assert_eq!(out.tokens, case.greedy_tokens, "case {n}");
        assert_logits_match(&out.logits, &case.logits, &format!("case {n}"));
    }
}

#[test]
fn unsupported_checkpoints_are_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("izwi-llama-scaled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("config.json")).expect("config"),
    )
    .expect("json");
    config["rope_parameters"]["rope_type"] = "llama3".into();
    std::fs::write(dir.join("config.json"), config.to_string()).expect("write");
    std::fs::copy(
        fixture().join("model.safetensors"),
        dir.join("model.safetensors"),
    )
    .expect("copy");
    let err = Llama::from_dir(&dir, DType::F32, &Device::Cpu)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("RoPE type Some(\"llama3\") is not supported"),
        "{err}"
    );
    std::fs::remove_file(dir.join("model.safetensors")).expect("rm");
    let err = Llama::from_dir(&dir, DType::F32, &Device::Cpu)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("no .safetensors weights"), "{err}");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
