//! LFM2-Audio through the command line, on the tiny random-weight checkpoint of
//! izwi-core's parity tests (its text is the reference ASR turn's, not speech):
//! `izwi models import` recognises the folder and `izwi transcribe --model` runs it;
//! what it cannot do is refused by name.

use std::path::{Path, PathBuf};
use std::process::Command;

use izwi_core::models::lfm2_audio::ChatLayout;
use izwi_test_support::fixtures::lfm2_audio_tiny;
use serde_json::Value;

fn reference() -> std::collections::HashMap<String, candle_core::Tensor> {
    candle_core::safetensors::load(
        lfm2_audio_tiny().join("reference.safetensors"),
        &candle_core::Device::Cpu,
    )
    .unwrap()
}

/// The reference's second of speech as a 32-bit float WAV (the samples liquid-audio
/// heard, unrounded).
fn recording(dir: &Path) -> PathBuf {
    let path = dir.join("speech.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut wav = hound::WavWriter::create(&path, spec).unwrap();
    for s in reference()["audio"].to_vec1::<f32>().unwrap() {
        wav.write_sample(s).unwrap();
    }
    wav.finalize().unwrap();
    path
}

/// The reference ASR turn's text tokens, decoded.
fn reference_text() -> String {
    let reference = reference();
    let kinds = reference["asr_out_kind"].to_vec1::<i64>().unwrap();
    let texts = reference["asr_out_text"].to_vec1::<i64>().unwrap();
    let tokens: Vec<u32> = kinds
        .iter()
        .zip(texts)
        .take_while(|(&k, _)| k == 0)
        .map(|(_, t)| t as u32)
        .collect();
    let layout = ChatLayout::from_dir(&lfm2_audio_tiny()).unwrap();
    layout.decode(&tokens).unwrap().trim().to_string()
}

fn izwi(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

fn ok(output: std::process::Output, args: &[&str]) -> String {
    assert!(
        output.status.success(),
        "izwi {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn an_imported_model_transcribes_to_the_reference_text() {
    let data = tempfile::tempdir().unwrap();
    let wav = recording(data.path());
    let fixture = lfm2_audio_tiny();
    let args = [
        "models",
        "import",
        fixture.to_str().unwrap(),
        "--name",
        "lfm2-audio",
    ];
    ok(izwi(data.path(), &args), &args);
    let args = [
        "transcribe",
        wav.to_str().unwrap(),
        "--model",
        "local/lfm2-audio",
        "--format",
        "json",
    ];
    let transcript: Value = serde_json::from_str(&ok(izwi(data.path(), &args), &args)).unwrap();
    let text: Vec<&str> = transcript["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    let want = reference_text();
    assert!(!want.is_empty());
    assert_eq!(text.join(" "), want);

    let args = [
        "transcribe",
        wav.to_str().unwrap(),
        "--model",
        "local/lfm2-audio",
        "--word-timestamps",
    ];
    let refused = izwi(data.path(), &args);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("cannot give word timestamps"), "{message}");
}
