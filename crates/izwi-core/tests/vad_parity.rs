//! Silero VAD against the silero-vad package's own ONNX model on onnxruntime
//! (tests/fixtures/make_vad_reference.py wrote tests/fixtures/vad/reference.json):
//! frame probabilities on real speech and on a tone with noise, the speech segments
//! faster-whisper's segmenter makes of them, and the streaming form giving the same.

use std::path::{Path, PathBuf};

use candle_core::Device;
use izwi_core::models::vad::{speech_segments, SileroVad, VadEvent, VadOptions, VadStream};
use izwi_test_support::asset;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vad() -> SileroVad {
    let path = asset("models/silero-vad/silero_vad_16k_op15.onnx");
    SileroVad::load(&path, &Device::Cpu).expect("the VAD loads")
}

fn reference() -> Value {
    let text = std::fs::read_to_string(root().join("tests/fixtures/vad/reference.json"))
        .expect("tests/fixtures/vad/reference.json");
    serde_json::from_str(&text).expect("reference JSON")
}

/// The synthetic input as the fixture script builds it: 3 s of silence, 2 s of a
/// 440 Hz tone, 1 s of low noise from a linear congruential generator.
fn synthetic() -> Vec<f32> {
    let rate = 16_000usize;
    let mut samples = vec![0f32; 3 * rate];
    samples.extend((0..2 * rate).map(|i| {
        (0.3 * (2.0 * std::f64::consts::PI * 440.0 * i as f64 / rate as f64).sin()) as f32
    }));
    let mut state: u64 = 12345;
    for _ in 0..rate {
        state = (1_103_515_245 * state + 12345) % (1 << 31);
        samples.push(((state as f64 / (1u64 << 31) as f64 - 0.5) * 0.1) as f32);
    }
    samples
}

fn load(name: &str) -> Vec<f32> {
    if name == "synthetic" {
        return synthetic();
    }
    let reader = hound::WavReader::open(root().join(".assets/speech").join(name))
        .unwrap_or_else(|e| panic!("{name}: {e} (run scripts/fetch-assets.sh)"));
    assert_eq!(reader.spec().sample_rate, 16_000);
    reader
        .into_samples::<i16>()
        .map(|s| f32::from(s.expect("a sample")) / 32768.0)
        .collect()
}

fn ranges(value: &Value) -> Vec<std::ops::Range<usize>> {
    value
        .as_array()
        .expect("segments")
        .iter()
        .map(|pair| pair[0].as_u64().unwrap() as usize..pair[1].as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn probabilities_and_segments_match_the_package() {
    let vad = vad();
    let reference = reference();
    for input in reference["inputs"].as_array().expect("inputs") {
        let name = input["input"].as_str().unwrap();
        let samples = load(name);
        assert_eq!(
            samples.len() as u64,
            input["samples"].as_u64().unwrap(),
            "{name}"
        );
        let want: Vec<f32> = input["probabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_f64().unwrap() as f32)
            .collect();
        let ours = vad.probabilities(&samples).expect("probabilities");
        assert_eq!(ours.len(), want.len(), "{name}: frames");
        let worst = ours
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-4, "{name}: max |diff| {worst}");

        let default = speech_segments(&ours, samples.len(), &VadOptions::default());
        assert_eq!(
            default,
            ranges(&input["segments"]["default"]),
            "{name}: default"
        );
        let chunked = speech_segments(&ours, samples.len(), &VadOptions::for_chunks(30.0));
        assert_eq!(
            chunked,
            ranges(&input["segments"]["chunks"]),
            "{name}: chunks"
        );
    }
}

#[test]
fn streaming_in_odd_pieces_gives_the_whole_file_answer() {
    let vad = vad();
    let options = VadOptions::for_chunks(30.0);
    for name in ["jfk.wav", "synthetic"] {
        let samples = load(name);
        let mut stream = VadStream::new(&vad, options);
        let mut events = Vec::new();
        for piece in samples.chunks(777) {
            events.extend(stream.push(piece).expect("push"));
        }
        events.extend(stream.finish().expect("finish"));
        let streamed: Vec<_> = events
            .into_iter()
            .filter_map(|e| match e {
                VadEvent::SpeechEnd { speech } => Some(speech),
                VadEvent::SpeechStart { .. } => None,
            })
            .collect();
        // Offline segments are these, widened by the padding.
        let offline = speech_segments(
            &vad.probabilities(&samples).unwrap(),
            samples.len(),
            &VadOptions {
                speech_pad_ms: 0,
                ..options
            },
        );
        assert_eq!(streamed, offline, "{name}");
        assert_eq!(
            streamed.is_empty(),
            name == "synthetic",
            "{name}: {streamed:?}"
        );
    }
}

#[test]
fn chunks_cover_all_speech_and_fit_the_window() {
    let vad = vad();
    let samples = load("jfk.wav");
    let chunks = vad.speech_chunks(&samples, 30.0).expect("chunks");
    assert!(!chunks.is_empty());
    for c in &chunks {
        assert!(c.len() <= 30 * 16_000, "{c:?}");
    }
    let segments = speech_segments(
        &vad.probabilities(&samples).unwrap(),
        samples.len(),
        &VadOptions::for_chunks(30.0),
    );
    for s in segments {
        assert!(
            chunks.iter().any(|c| c.start <= s.start && s.end <= c.end),
            "{s:?} not inside a chunk of {chunks:?}"
        );
    }
}
