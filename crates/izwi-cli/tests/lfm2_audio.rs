//! LFM2-Audio through the command line, on the tiny random-weight checkpoint of
//! izwi-core's parity tests (its text is the reference ASR turn's, not speech):
//! `izwi models import` recognises the folder and `izwi transcribe --model` runs it; its
//! voices are listed and `izwi speak` speaks in one; what it cannot do is refused by
//! name.

use std::path::Path;
use std::process::Command;

use izwi_core::models::lfm2_audio::ChatLayout;
use izwi_test_support::fixtures::{
    lfm2_audio_reference_asr_tokens, lfm2_audio_reference_speech, lfm2_audio_tiny,
};
use serde_json::Value;

/// The reference ASR turn's text tokens, decoded.
fn reference_text() -> String {
    let tokens = lfm2_audio_reference_asr_tokens();
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
    let wav = lfm2_audio_reference_speech(&data.path().join("speech.wav"));
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

/// An imported LFM2-Audio model's four voices are in `izwi voices list`, and `izwi speak`
/// in one writes a 24 kHz WAV, recorded in the history; what it cannot honour is refused
/// by name. (The seed is one with which the tiny random model ends its turn.)
#[test]
fn its_voices_are_listed_and_speak() {
    let izwi = izwi_test_support::cli::Izwi::new(env!("CARGO_BIN_EXE_izwi"));
    izwi.import(&lfm2_audio_tiny(), &["--name", "lfm2-audio"]);
    let list = izwi.ok(&["voices", "list"]);
    for name in ["US male", "US female", "UK male", "UK female"] {
        assert!(list.contains(name), "{name} in {list}");
    }
    let out = izwi.path("hello.wav");
    let args = [
        "speak",
        "--voice",
        "UK male",
        "--text",
        "Hello, how are you today?",
        "--seed",
        "2",
        "--output",
        out.to_str().unwrap(),
    ];
    izwi.ok(&args);
    let audio = izwi_audio::decode_file(&out).unwrap();
    assert_eq!(audio.sample_rate, 24_000);
    assert!(!audio.to_mono().is_empty());
    let jobs = izwi.jobs();
    assert_eq!(jobs[0]["kind"], "speak");
    assert_eq!(jobs[0]["status"], "done");
    assert_eq!(jobs[0]["model_id"], "local/lfm2-audio");

    let refused = izwi.fails(&[
        "speak",
        "--voice",
        "local/lfm2-audio",
        "--speaker",
        "scottish",
        "--text",
        "Hi.",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(refused.contains("uk-female"), "{refused}");
    let refused = izwi.fails(&[
        "speak",
        "--voice",
        "UK male",
        "--text",
        "Hi.",
        "--speed",
        "1.5",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(refused.contains("speed"), "{refused}");
}
