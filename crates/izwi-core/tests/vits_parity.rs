//! Parity of our VITS with piper's own runtime (onnxruntime) on a real Piper voice,
//! en_US-joe-medium: the reference durations and waveforms come from
//! tests/fixtures/make_vits_reference.py (noise off, so nothing is random). Needs
//! `scripts/fetch-assets.sh` first, for the voice.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use candle_core::{Device, Tensor};
use izwi_core::models::shared::bf16_weights;
use izwi_core::models::shared::onnx::OnnxModel;
use izwi_core::models::vits::weights::WeightsError;
use izwi_core::models::vits::{Scales, Vits, VitsError, VoiceConfig};

/// Four sentences: "The quick brown fox...", "Izwi runs Piper voices...", "How much
/// wood...", "Hi."
const SENTENCES: usize = 4;

/// The voice's .onnx and .onnx.json.
fn voice_files() -> (PathBuf, PathBuf) {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.assets/voices/en_US-joe-medium");
    let onnx = dir.join("en_US-joe-medium.onnx");
    assert!(
        onnx.is_file(),
        "{} is missing: run scripts/fetch-assets.sh first",
        onnx.display()
    );
    (onnx, dir.join("en_US-joe-medium.onnx.json"))
}

fn voice() -> &'static Vits {
    static VOICE: OnceLock<Vits> = OnceLock::new();
    VOICE.get_or_init(|| {
        let (onnx, json) = voice_files();
        Vits::from_onnx(&onnx, &json, &Device::Cpu).expect("the voice loads")
    })
}

fn reference() -> HashMap<String, Tensor> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vits/reference.safetensors");
    candle_core::safetensors::load(path, &Device::Cpu).expect("fixture loads")
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.to_vec1::<f32>().expect("f32 vector")
}

fn ids(reference: &HashMap<String, Tensor>, i: usize) -> Vec<i64> {
    reference[&format!("ids_{i}")]
        .to_vec1::<i64>()
        .expect("ids")
}

/// Signal-to-noise ratio of `ours` against `want`, in dB.
fn snr_db(ours: &[f32], want: &[f32]) -> f64 {
    let signal: f64 = want.iter().map(|&v| f64::from(v).powi(2)).sum();
    let noise: f64 = ours
        .iter()
        .zip(want)
        .map(|(&a, &b)| f64::from(a - b).powi(2))
        .sum();
    10.0 * (signal / noise.max(f64::MIN_POSITIVE)).log10()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn durations_and_audio_equal_onnxruntime() {
    let vits = voice();
    let reference = reference();
    assert_eq!(vits.sample_rate(), 22050);
    assert_eq!(vits.hop_length(), 256);
    for i in 0..SENTENCES {
        let ids = ids(&reference, i);
        let out = vits
            .synthesize_batch(&[&ids], None, Scales::deterministic(1.0), 0)
            .expect("synthesis")
            .remove(0);
        let want: Vec<u32> = floats(&reference[&format!("w_ceil_{i}")])
            .iter()
            .map(|&d| d as u32)
            .collect();
        assert_eq!(out.durations, want, "sentence {i}: durations");

        let want = floats(&reference[&format!("audio_{i}")]);
        assert_eq!(out.audio.len(), want.len(), "sentence {i}: length");
        let diff = max_abs_diff(&out.audio, &want);
        let snr = snr_db(&out.audio, &want);
        println!(
            "sentence {i}: {} samples, max |diff| {diff:.2e}, SNR {snr:.1} dB",
            want.len()
        );
        // Achieved: max |diff| ≤ 6.3e-5, SNR ≥ 87 dB.
        assert!(diff < 3e-4, "sentence {i}: max |diff| {diff}");
        assert!(snr > 75.0, "sentence {i}: SNR {snr} dB");
    }
}

/// The vocoder in bf16 (AVX512-BF16 CPUs, as the runtime loads a voice) rounds what
/// enters each convolution to 8 bits of mantissa: measured 37–42 dB SNR against
/// onnxruntime's f32 audio, its spectrum 0.1 dB off on average (docs/speed.md).
/// Without AVX512-BF16 nothing changes and the f32 bound holds.
#[test]
fn bf16_vocoder_stays_near_onnxruntime() {
    let (onnx, json) = voice_files();
    let vits = Vits::from_onnx(&onnx, &json, &Device::Cpu)
        .and_then(Vits::with_bf16_vocoder)
        .expect("the voice loads");
    let reference = reference();
    let least = if bf16_weights::available() {
        35.0
    } else {
        75.0
    };
    for i in 0..SENTENCES {
        let out = vits
            .synthesize_batch(&[&ids(&reference, i)], None, Scales::deterministic(1.0), 0)
            .expect("synthesis")
            .remove(0);
        let want = floats(&reference[&format!("audio_{i}")]);
        assert_eq!(out.audio.len(), want.len(), "sentence {i}: length");
        let snr = snr_db(&out.audio, &want);
        println!("sentence {i}: bf16 vocoder SNR {snr:.1} dB");

        assert!(snr > least, "sentence {i}: SNR {snr} dB");
    }
}

#[test]
fn a_batch_speaks_each_sentence_as_alone() {
    let vits = voice();
    let reference = reference();
    let all: Vec<Vec<i64>> = (0..SENTENCES).map(|i| ids(&reference, i)).collect();
    let batch: Vec<&[i64]> = all.iter().map(Vec::as_slice).collect();
    let out = vits
        .synthesize_batch(&batch, None, Scales::deterministic(1.0), 0)
        .expect("batch synthesis");
    for (i, got) in out.iter().enumerate() {
        let want: Vec<u32> = floats(&reference[&format!("w_ceil_{i}")])
            .iter()
            .map(|&d| d as u32)
            .collect();
        assert_eq!(got.durations, want, "sentence {i}: durations");
        let want = floats(&reference[&format!("audio_{i}")]);
        assert_eq!(got.audio.len(), want.len());
        // Padding after a shorter sentence reaches back through the vocoder's
        // receptive field: compare all but its last 50 ms.
        let keep = want.len() - 1100;
        let snr = snr_db(&got.audio[..keep], &want[..keep]);
        println!("sentence {i} in a batch: SNR {snr:.1} dB before its last 50 ms");
        assert!(snr > 75.0, "sentence {i}: SNR {snr} dB in a batch");
    }
}

#[test]
fn noise_is_drawn_from_the_seed() {
    let vits = voice();
    let ids = ids(&reference(), 3);
    let scales = vits.config().inference;
    assert_eq!(scales.noise_w, 0.8);
    let a = vits.synthesize(&ids, None, scales, 7).expect("synthesis");
    let b = vits.synthesize(&ids, None, scales, 7).expect("synthesis");
    let c = vits.synthesize(&ids, None, scales, 8).expect("synthesis");
    assert_eq!(a, b, "the same seed gives the same audio");
    assert_ne!(a, c, "another seed gives other audio");
    assert!(a.iter().all(|s| s.is_finite() && s.abs() <= 1.0));
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let vits = voice();
    let scales = Scales::deterministic(1.0);
    assert!(matches!(
        vits.synthesize(&[], None, scales, 0),
        Err(VitsError::NoPhonemes)
    ));
    assert!(matches!(
        vits.synthesize(&[1, 0, 256, 0, 2], None, scales, 0),
        Err(VitsError::PhonemeId {
            id: 256,
            symbols: 256
        })
    ));
    assert!(matches!(
        vits.synthesize(&[1, -3, 2], None, scales, 0),
        Err(VitsError::PhonemeId { id: -3, .. })
    ));
    assert!(matches!(
        vits.synthesize(&[1, 0, 2], None, Scales::deterministic(0.0), 0),
        Err(VitsError::Scales(_))
    ));
    assert!(matches!(
        vits.synthesize(&[1, 0, 2], None, Scales::deterministic(1e9), 0),
        Err(VitsError::TooLong { .. })
    ));
}

/// A tiny random voice with 3 speakers, the deterministic duration predictor and
/// HiFi-GAN's type-1 residual blocks (tests/fixtures/make_vits_tiny.py), against
/// onnxruntime: one sentence, then a padded batch of three.
#[test]
fn tiny_multi_speaker_voice_equals_onnxruntime() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vits");
    let vits = Vits::from_onnx(
        &dir.join("tiny.onnx"),
        &dir.join("tiny.onnx.json"),
        &Device::Cpu,
    )
    .expect("the tiny voice loads");
    assert_eq!(vits.hop_length(), 16);
    let reference = candle_core::safetensors::load(dir.join("tiny.safetensors"), &Device::Cpu)
        .expect("fixture");
    for case in 0..2 {
        let get = |name: &str| &reference[&format!("{name}_{case}")];
        let ids = get("ids").to_vec2::<i64>().expect("ids");
        let lengths = get("lengths").to_vec1::<i64>().expect("lengths");
        let speaker = get("sid").to_vec1::<i64>().expect("sid")[0];
        let w_ceil = get("w_ceil").to_vec2::<f32>().expect("durations");
        let audio = get("audio").to_vec2::<f32>().expect("audio");
        let sentences: Vec<&[i64]> = ids
            .iter()
            .zip(&lengths)
            .map(|(row, &n)| &row[..n as usize])
            .collect();
        let out = vits
            .synthesize_batch(&sentences, Some(speaker), Scales::deterministic(1.0), 0)
            .expect("synthesis");
        for (b, got) in out.iter().enumerate() {
            let n = lengths[b] as usize;
            let want: Vec<u32> = w_ceil[b][..n].iter().map(|&d| d as u32).collect();
            assert_eq!(got.durations, want, "case {case} item {b}: durations");
            let want = &audio[b][..got.audio.len()];
            let frames: u32 = got.durations.iter().sum();
            assert_eq!(got.audio.len(), frames as usize * 16);
            let diff = max_abs_diff(&got.audio, want);
            let snr = snr_db(&got.audio, want);
            println!("tiny case {case} item {b}: max |diff| {diff:.2e}, SNR {snr:.1} dB");
            assert!(
                diff < 1e-5 && snr > 100.0,
                "case {case} item {b}: {diff}, {snr} dB"
            );
        }
    }
    let other = vits
        .synthesize(&[1, 5, 2], Some(0), Scales::deterministic(1.0), 0)
        .expect("speaker 0");
    assert_ne!(
        other,
        vits.synthesize(&[1, 5, 2], Some(2), Scales::deterministic(1.0), 0)
            .expect("speaker 2"),
        "speakers sound different"
    );
    assert!(matches!(
        vits.synthesize(&[1, 5, 2], Some(3), Scales::deterministic(1.0), 0),
        Err(VitsError::Speaker { id: 3, speakers: 3 })
    ));
}

#[test]
fn a_voice_missing_weights_names_every_one() {
    let (onnx, json) = voice_files();
    let bytes = std::fs::read(onnx).expect("voice");
    let mut graph = OnnxModel::parse(&bytes).expect("the voice parses");
    // A named weight, the embedding piper's exporter calls `sid`, and a folded
    // weight-normed convolution of the flow.
    let dropped = ["dec.ups.1.weight", "sid", "onnx::Conv_8240"];
    graph
        .initializers
        .retain(|t| !dropped.contains(&t.name.as_str()));
    let config = VoiceConfig::from_json(&std::fs::read_to_string(json).expect("config"))
        .expect("config parses");
    let err = Vits::from_graph(&graph, config, &Device::Cpu)
        .err()
        .expect("a voice without those weights does not load");
    let VitsError::Weights(WeightsError::Missing(names)) = &err else {
        panic!("unexpected error: {err}");
    };
    assert_eq!(
        names,
        &[
            "dec.ups.1.weight",
            "enc_p.emb.weight",
            "flow.flows.0.enc.in_layers.0.weight"
        ]
    );
    assert!(err
        .to_string()
        .contains("lacks 3 weight(s): dec.ups.1.weight, enc_p.emb.weight"));
}
