//! `izwi speak --voice DIR` with the tiny random Qwen3-TTS checkpoint of izwi-core's
//! fixtures: the whole product path (CLI, runtime job, engine, codec, WAV) on a data
//! folder of its own. Random weights say nothing intelligible; this checks the path.

use std::path::PathBuf;
use std::process::{Command, Output};

fn checkpoint() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/qwen3-tts-tiny")
        .display()
        .to_string()
}

fn izwi(data: &tempfile::TempDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .arg("--data-dir")
        .arg(data.path().join("izwi"))
        .env("HF_HOME", data.path().join("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

#[test]
fn speaks_a_text_with_a_checkpoint_folder() {
    let data = tempfile::tempdir().unwrap();
    let out = data.path().join("hello.wav");
    let voice = checkpoint();
    let run = izwi(
        &data,
        &[
            "speak",
            "--voice",
            &voice,
            "--text",
            "Hello world, this is izwi.",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        run.status.success(),
        "izwi speak failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("hello.wav"), "names the file: {stdout}");
    let reader = hound::WavReader::open(&out).expect("a WAV");
    let spec = reader.spec();
    assert_eq!((spec.channels, spec.sample_rate), (1, 24_000));
    // Whole 80 ms frames, at least the two the model must say.
    let samples = reader.duration() as usize;
    assert!(samples >= 2 * 1920, "{samples} samples");
    assert_eq!(samples % 1920, 0, "{samples} samples is not whole frames");
}

#[test]
fn refuses_what_a_checkpoint_cannot_do_yet() {
    let data = tempfile::tempdir().unwrap();
    let out = data.path().join("x.wav");
    let script = data.path().join("script.txt");
    std::fs::write(&script, "One line.\nAnother line.\n").unwrap();
    let voice = checkpoint();
    let out = out.to_str().unwrap();
    for (args, why) in [
        (
            vec!["--text", "Hi there.", "--speed", "1.5", "--output", out],
            "no speed setting",
        ),
        (
            vec!["--file", script.to_str().unwrap(), "--output", out],
            "speak a --text",
        ),
    ] {
        let mut all = vec!["speak", "--voice", &voice];
        all.extend(args);
        let run = izwi(&data, &all);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success() && stderr.contains(why),
            "{all:?}: {stderr}"
        );
    }
}

#[test]
fn speaks_in_a_voice_cloned_from_a_recording() {
    let data = tempfile::tempdir().unwrap();
    let sample = data.path().join("me.wav");
    // Two seconds of a 44.1 kHz stereo hum: decoded, mixed down and resampled to 24 kHz.
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 44_100,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(&sample, spec).unwrap();
    for n in 0..88_200 {
        let t = n as f32 / 44_100.0;
        let v = (0.3 * (2.0 * std::f32::consts::PI * 160.0 * t).sin() * 32_767.0) as i16;
        writer.write_sample(v).unwrap();
        writer.write_sample(v).unwrap();
    }
    writer.finalize().unwrap();
    let out = data.path().join("cloned.wav");
    let voice = checkpoint();
    let run = izwi(
        &data,
        &[
            "speak",
            "--voice",
            &voice,
            "--reference-audio",
            sample.to_str().unwrap(),
            "--text",
            "Hello in my own voice.",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        run.status.success(),
        "izwi speak failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reader = hound::WavReader::open(&out).expect("a WAV");
    assert_eq!(reader.spec().sample_rate, 24_000);
    assert!(reader.duration() >= 2 * 1920);

    let missing = izwi(
        &data,
        &[
            "speak",
            "--voice",
            &voice,
            "--reference-audio",
            "nowhere.wav",
            "--text",
            "Hi.",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no voice sample"));
}

#[test]
fn speaks_with_a_preset_speaker_instructions_and_a_language() {
    let data = tempfile::tempdir().unwrap();
    let out = data.path().join("vivian.wav");
    let voice = checkpoint();
    let out = out.to_str().unwrap();
    let run = izwi(
        &data,
        &[
            "speak",
            "--voice",
            &voice,
            "--speaker",
            "Vivian",
            "--instructions",
            "Speak slowly.",
            "--language",
            "English",
            "--text",
            "Hello.",
            "--output",
            out,
        ],
    );
    assert!(
        run.status.success(),
        "izwi speak failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(hound::WavReader::open(out).unwrap().duration() >= 2 * 1920);
    // A designed voice: only a description.
    let run = izwi(
        &data,
        &[
            "speak",
            "--voice",
            &voice,
            "--instructions",
            "A calm, low voice.",
            "--text",
            "Hello.",
            "--output",
            out,
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for (flag, value, why) in [
        (
            "--speaker",
            "nobody",
            "not one of this model's: dylan, vivian",
        ),
        ("--language", "klingon", "not one of this model's"),
    ] {
        let run = izwi(
            &data,
            &[
                "speak", "--voice", &voice, flag, value, "--text", "Hi.", "--output", out,
            ],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success() && stderr.contains(why),
            "{flag}: {stderr}"
        );
    }
}
