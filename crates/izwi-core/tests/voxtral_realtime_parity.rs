//! Parity of our Voxtral Realtime with transformers' on a tiny random-weight checkpoint
//! (tests/fixtures/make_voxtral_realtime_tiny.py): the streaming log-mel, the streamed
//! encoder, the decoder's logits and greedy text on the engine, and several streams
//! batched at different offsets, through preemption, equal to each alone.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use common::max_abs_diff;
use izwi_core::engine::{EngineCore, EngineCoreConfig, EngineCoreRequest};
use izwi_core::models::voxtral_realtime::mel::StreamingMel;
use izwi_core::models::voxtral_realtime::VoxtralRealtime;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/voxtral-realtime-tiny")
}

fn reference() -> HashMap<String, Tensor> {
    candle_core::safetensors::load(dir().join("reference.safetensors"), &Device::Cpu)
        .expect("reference loads")
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .expect("f32 tensor")
}

fn ids(t: &Tensor) -> Vec<u32> {
    t.to_dtype(DType::U32)
        .and_then(|t| t.to_vec1::<u32>())
        .expect("token ids")
}

fn model() -> VoxtralRealtime {
    VoxtralRealtime::from_dir(&dir(), None, DType::F32, &Device::Cpu).expect("model loads")
}

#[test]
fn prompt_and_padding_equal_the_processor_s() {
    let reference = reference();
    let model = model();
    assert_eq!(
        model.prompt().expect("prompt"),
        ids(&reference["input_ids"])
    );
    let padded = model.pad_recording(&floats(&reference["audio"]));
    let frames = reference["input_features"].dim(1).expect("frames");
    assert_eq!(StreamingMel::available(padded.len(), true), frames);
}

#[test]
fn streaming_log_mel_equals_the_feature_extractor_s() {
    let reference = reference();
    let model = model();
    let padded = model.pad_recording(&floats(&reference["audio"]));
    let want = floats(&reference["input_features"].t().expect("t"));
    let mel = StreamingMel::new(128, 1.5, &Device::Cpu).expect("mel");
    let frames = StreamingMel::available(padded.len(), true);
    // In pieces, each as soon as its audio has arrived, then the end.
    let mut rows = Vec::new();
    let mut done = 0;
    for arrived in (1000..padded.len()).step_by(1700) {
        let ready = StreamingMel::available(arrived, false);
        rows.push(
            mel.frames(&padded[..arrived], false, done, ready - done)
                .expect("frames"),
        );
        done = ready;
    }
    rows.push(
        mel.frames(&padded, true, done, frames - done)
            .expect("frames"),
    );
    let ours = floats(&Tensor::cat(&rows, 0).expect("cat"));
    let diff = max_abs_diff(&ours, &want);
    assert!(diff < 1e-4, "log-mel differs by {diff}");
}

#[test]
fn streamed_encoder_equals_transformers_in_any_chunking() {
    let reference = reference();
    let model = model();
    let padded = model.pad_recording(&floats(&reference["audio"]));
    let want = floats(&reference["audio_embeds"]);
    let streamed = floats(&reference["streamed_embeds"]);
    assert!(max_abs_diff(&want, &streamed) < 1e-4);
    // One position (80 ms) at a time as the reference streamed it, a few at a time
    // (the window of 12 frames is crossed inside a chunk), and all at once.
    for chunk in [1, 3, 7, 1000] {
        let ours = floats(&model.encode_recording(&padded, chunk).expect("encodes"));
        let diff = max_abs_diff(&ours, &want);
        assert!(
            diff < 1e-4,
            "chunks of {chunk}: embeddings differ by {diff}"
        );
    }
}

fn engine(num_blocks: usize) -> EngineCore {
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(num_blocks),
        ..EngineCoreConfig::default()
    };
    EngineCore::new(config, Box::new(model())).expect("engine")
}

#[test]
fn greedy_transcription_on_the_engine_equals_transformers() {
    let reference = reference();
    let model = model();
    let generated = ids(&reference["generated"]);
    let prompt_len = ids(&reference["input_ids"]).len();
    let mut request = model
        .recording_request(&floats(&reference["audio"]))
        .expect("request");
    request.params.return_logits = true;
    let mut core = engine(64);
    core.add_request(request).expect("accepted");
    let mut outputs = Vec::new();
    while core.has_unfinished() {
        outputs.extend(core.step().into_iter().filter_map(|o| o.finished));
    }
    let out = outputs.pop().expect("finished");
    assert_eq!(out.tokens, generated[prompt_len..]);
    let want = reference["logits"].to_vec2::<f32>().expect("rows");
    assert_eq!(out.logits.len(), want.len() + 1 - prompt_len);
    for (i, got) in out.logits.iter().enumerate() {
        let diff = max_abs_diff(got, &want[prompt_len - 1 + i]);
        assert!(
            diff < 1e-4,
            "logits at position {} differ by {diff}",
            prompt_len - 1 + i
        );
    }
    let text = model.tokenizer().decode(&out.tokens);
    let want_text: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    assert_eq!(text, want_text["text"].as_str().expect("text"));
    assert_eq!(core.kv_cache_stats().used_blocks(), 0);
}

/// Runs requests arriving at the given steps; returns each one's tokens by index.
fn run(core: &mut EngineCore, requests: Vec<(usize, EngineCoreRequest)>) -> Vec<Vec<u32>> {
    let mut ids = HashMap::new();
    let mut tokens = vec![Vec::new(); requests.len()];
    let mut pending: Vec<(usize, usize, EngineCoreRequest)> = requests
        .into_iter()
        .enumerate()
        .map(|(i, (step, r))| (step, i, r))
        .collect();
    let mut step = 0;
    while !pending.is_empty() || core.has_unfinished() {
        let (now, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(s, _, _)| *s <= step);
        pending = later;
        for (_, i, request) in now {
            ids.insert(core.add_request(request).expect("accepted"), i);
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            tokens[ids[&out.request_id]] = out.tokens;
        }
        step += 1;
    }
    tokens
}

#[test]
fn streams_batched_at_different_offsets_and_preempted_equal_each_alone() {
    let reference = reference();
    let model = model();
    let audio = floats(&reference["audio"]);
    let recordings = [
        audio.clone(),
        audio[..16_000].to_vec(),
        audio[8_000..].to_vec(),
        audio.clone(),
    ];
    let request = |samples: &[f32]| model.recording_request(samples).expect("request");
    let alone: Vec<Vec<u32>> = recordings
        .iter()
        .map(|r| run(&mut engine(64), vec![(0, request(r))]).remove(0))
        .collect();
    assert_eq!(alone[0], ids(&reference["generated"])[9..]);
    let arrivals = [0, 2, 5, 11];
    let batch = |num_blocks| {
        let requests = recordings
            .iter()
            .zip(arrivals)
            .map(|(r, step)| (step, request(r)))
            .collect();
        let mut core = engine(num_blocks);
        let tokens = run(&mut core, requests);
        assert_eq!(core.kv_cache_stats().used_blocks(), 0);
        (tokens, core)
    };
    let (together, _) = batch(64);
    assert_eq!(together, alone, "batched with room for all");
    // 24 blocks of 4 hold two of the 44-position streams: the others wait or are
    // preempted and recomputed from their kept audio embeddings.
    let (squeezed, core) = batch(24);
    assert_eq!(squeezed, alone, "batched through preemption");
    assert!(
        core.metrics().snapshot().preemptions > 0,
        "the small cache preempted"
    );
}
