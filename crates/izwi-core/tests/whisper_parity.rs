//! Parity of our Whisper with the reference implementations on a tiny random-weight
//! checkpoint made by transformers (tests/fixtures/make_whisper_tiny.py) and with
//! OpenAI's own mel filters and log-mel (tests/fixtures/make_mel_filters.py).

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use common::max_abs_diff;
use izwi_core::engine::{EngineCore, EngineCoreConfig, EngineCoreRequest, GenerationParams};
use izwi_core::models::shared::bf16_weights;
use izwi_core::models::whisper::mel::{mel_filters, LogMel};
use izwi_core::models::whisper::{Whisper, WhisperExecutor};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn load(file: &str) -> HashMap<String, Tensor> {
    candle_core::safetensors::load(fixtures().join(file), &Device::Cpu).expect("fixture loads")
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .expect("f32 tensor")
}

fn tokens(t: &Tensor) -> Vec<u32> {
    t.to_dtype(DType::U32)
        .and_then(|t| t.to_vec1::<u32>())
        .expect("token ids")
}

fn model() -> Whisper {
    Whisper::from_dir(
        &fixtures().join("whisper-tiny-random"),
        DType::F32,
        &Device::Cpu,
    )
    .expect("model loads")
}

#[test]
fn mel_filterbank_computed_in_code_equals_openai_whisper_s() {
    let reference = load("mel_filters.safetensors");
    for n_mels in [80, 128] {
        let want = floats(&reference[&format!("mel_{n_mels}")]);
        let diff = max_abs_diff(&mel_filters(n_mels), &want);
        assert!(diff < 1e-7, "{n_mels} bins differ by {diff}");
    }
}

#[test]
fn log_mel_equals_openai_and_transformers() {
    let filters = load("mel_filters.safetensors");
    let reference = load("whisper-tiny-random/reference.safetensors");
    let mel = LogMel::new(80, &Device::Cpu).expect("mel");
    let ours = floats(&mel.compute(&floats(&reference["audio"])).expect("log-mel"));
    let openai = max_abs_diff(&ours, &floats(&filters["log_mel_openai"]));
    let transformers = max_abs_diff(&ours, &floats(&reference["log_mel"]));
    assert!(openai < 1e-4, "differs from OpenAI's by {openai}");
    assert!(
        transformers < 1e-4,
        "differs from transformers' by {transformers}"
    );
    let short = floats(
        &mel.compute(&floats(&reference["audio_short"]))
            .expect("log-mel"),
    );
    let diff = max_abs_diff(&short, &floats(&reference["log_mel_short"]));
    assert!(diff < 1e-4, "short audio differs by {diff}");
}

#[test]
fn encoder_output_equals_transformers() {
    let reference = load("whisper-tiny-random/reference.safetensors");
    let model = model();
    for suffix in ["", "_short"] {
        let mel = reference[&format!("log_mel{suffix}")]
            .unsqueeze(0)
            .expect("batch");
        let encoded = model.encode(&mel).expect("encode");
        let diff = max_abs_diff(
            &floats(&encoded),
            &floats(&reference[&format!("encoder_output{suffix}")]),
        );
        assert!(diff < 1e-4, "encoder{suffix} differs by {diff}");
    }
}

/// The bf16 encoder (AVX512-BF16 CPUs) rounds what enters its projections to 8 bits
/// of mantissa: its output stays within 1% of the output's spread of transformers'
/// f32 one. Without AVX512-BF16 nothing changes and the f32 bound holds.
#[test]
fn bf16_encoder_stays_near_transformers() {
    let reference = load("whisper-tiny-random/reference.safetensors");
    let model = model().with_bf16_encoder().expect("packs");
    let bound = if bf16_weights::available() {
        0.01
    } else {
        1e-4
    };
    for suffix in ["", "_short"] {
        let mel = reference[&format!("log_mel{suffix}")]
            .unsqueeze(0)
            .expect("batch");
        let want = floats(&reference[&format!("encoder_output{suffix}")]);
        let spread = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = max_abs_diff(&floats(&model.encode(&mel).expect("encode")), &want);
        eprintln!("bf16 encoder{suffix}: {diff} of {spread}");
        assert!(
            diff < bound * spread,
            "encoder{suffix} differs by {diff} of {spread}"
        );
    }
}

#[test]
fn paged_decoder_on_the_engine_equals_transformers() {
    let reference = load("whisper-tiny-random/reference.safetensors");
    let executor = WhisperExecutor::new(model(), None).expect("executor");
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(32),
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(executor)).expect("engine");
    let mut cases = HashMap::new();
    for suffix in ["", "_short"] {
        let want = tokens(&reference[&format!("greedy_tokens{suffix}")]);
        let params = GenerationParams {
            max_tokens: want.len(),
            ignore_eos: true,
            return_logits: true,
            ..GenerationParams::default()
        };
        let request =
            EngineCoreRequest::new(tokens(&reference[&format!("decoder_input_ids{suffix}")]))
                .with_audio(floats(&reference[&format!("audio{suffix}")]))
                .with_params(params);
        cases.insert(core.add_request(request).expect("accepted"), suffix);
    }
    let mut finished = 0;
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            let suffix = cases[&out.request_id];
            assert_eq!(
                out.tokens,
                tokens(&reference[&format!("greedy_tokens{suffix}")]),
                "greedy{suffix}"
            );
            let want = reference[&format!("greedy_logits{suffix}")]
                .to_vec2::<f32>()
                .expect("rows");
            for (i, (got, want)) in out.logits.iter().zip(&want).enumerate() {
                let diff = max_abs_diff(got, want);
                assert!(diff < 1e-4, "logits{suffix} step {i} differ by {diff}");
            }
            finished += 1;
        }
    }
    assert_eq!(finished, 2);
    assert_eq!(core.kv_cache_stats().used_blocks(), 0);
}
