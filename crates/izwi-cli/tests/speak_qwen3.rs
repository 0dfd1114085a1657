//! `izwi speak --voice DIR` with the tiny random Qwen3-TTS checkpoint of izwi-core's
//! fixtures: the whole product path (CLI, runtime job, engine, codec, WAV) on a data
//! folder of its own. Random weights say nothing intelligible; this checks the path.

use std::path::PathBuf;

use izwi_test_support::cli::Izwi;
use izwi_test_support::fixtures::{edit_json, qwen3_tts_copy, qwen3_tts_tiny, safetensors_values};

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

fn checkpoint() -> String {
    qwen3_tts_tiny().display().to_string()
}

#[test]
fn speaks_a_text_with_a_checkpoint_folder() {
    let data = Izwi::new(BIN);
    let out = data.path("hello.wav");
    let voice = checkpoint();
    let stdout = data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--text",
        "Hello world, this is izwi.",
        "--output",
        out.to_str().unwrap(),
    ]);
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
fn speaks_a_file_with_a_checkpoint_folder() {
    let data = Izwi::new(BIN);
    let out = data.path("chapter.wav");
    let script = data.path("chapter.txt");
    std::fs::write(&script, "One line.\nAnother line.\n").unwrap();
    let voice = checkpoint();
    data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--file",
        script.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let reader = hound::WavReader::open(&out).expect("a WAV");
    // Two sentences of at least two 80 ms frames each, and the pause between them.
    let samples = reader.duration() as usize;
    assert!(samples >= 4 * 1920 + 3600, "{samples} samples");
}

#[test]
fn refuses_what_a_checkpoint_cannot_do() {
    let data = Izwi::new(BIN);
    let out = data.path("x.wav");
    let script = data.path("script.txt");
    std::fs::write(&script, "One line.\nAnother line.\n").unwrap();
    let voice = checkpoint();
    let out = out.to_str().unwrap();
    for (args, why) in [
        (
            vec!["--text", "Hi there.", "--speed", "1.5", "--output", out],
            "no speed setting",
        ),
        (
            vec![
                "--file",
                script.to_str().unwrap(),
                "--speed",
                "1.5",
                "--output",
                out,
            ],
            "no speed setting",
        ),
    ] {
        let mut all = vec!["speak", "--voice", &voice];
        all.extend(args);
        let stderr = data.fails(&all);
        assert!(stderr.contains(why), "{all:?}: {stderr}");
    }
}

#[test]
fn speaks_in_a_voice_cloned_from_a_recording() {
    let data = Izwi::new(BIN);
    let sample = data.path("me.wav");
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
    let out = data.path("cloned.wav");
    let voice = checkpoint();
    data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--reference-audio",
        sample.to_str().unwrap(),
        "--text",
        "Hello in my own voice.",
        "--output",
        out.to_str().unwrap(),
    ]);
    let reader = hound::WavReader::open(&out).expect("a WAV");
    assert_eq!(reader.spec().sample_rate, 24_000);
    assert!(reader.duration() >= 2 * 1920);

    let missing = data.run(&[
        "speak",
        "--voice",
        &voice,
        "--reference-audio",
        "nowhere.wav",
        "--text",
        "Hi.",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no voice sample"));
}

#[test]
fn speaks_with_a_preset_speaker_instructions_and_a_language() {
    let data = Izwi::new(BIN);
    let out = data.path("vivian.wav");
    let voice = checkpoint();
    let out = out.to_str().unwrap();
    data.ok(&[
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
    ]);
    assert!(hound::WavReader::open(out).unwrap().duration() >= 2 * 1920);
    // A designed voice: only a description (its WAV replacing the last).
    data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--instructions",
        "A calm, low voice.",
        "--text",
        "Hello.",
        "--output",
        out,
        "--force",
    ]);
    for (flag, value, why) in [
        (
            "--speaker",
            "nobody",
            "not one of this model's: dylan, vivian",
        ),
        ("--language", "klingon", "not one of this model's"),
    ] {
        let stderr = data.fails(&[
            "speak", "--voice", &voice, flag, value, "--text", "Hi.", "--output", out, "--force",
        ]);
        assert!(stderr.contains(why), "{flag}: {stderr}");
    }
}

/// A float32 tensor of izwi-core's Qwen3-TTS reference outputs, flattened.
fn reference_tensor(name: &str) -> Vec<f32> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/qwen3-tts/reference.safetensors");
    safetensors_values(&path, name)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// The tiny checkpoint copied to `dir`, with `edit` applied to its config.json and a
/// generation_config.json that decodes greedily, as the reference's fixtures were made.
fn checkpoint_copy(dir: &std::path::Path, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    qwen3_tts_copy(dir, edit);
    edit_json(&dir.join("generation_config.json"), |generation| {
        *generation = serde_json::json!({
            "do_sample": false,
            "subtalker_dosample": false,
            "repetition_penalty": 1.05,
            "max_new_tokens": 40
        });
    });
    dir.display().to_string()
}

#[test]
fn speaks_in_a_voice_cloned_in_context_as_the_reference_does() {
    let data = Izwi::new(BIN);
    let voice = checkpoint_copy(&data.path("base"), |_| {});
    // The reference's voice sample and its ICL utterance (izwi-core's fixture "icl"):
    // English, greedy, repetition penalty 1.05, at most 40 frames.
    let sample = data.path("sample.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 24_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut writer = hound::WavWriter::create(&sample, spec).unwrap();
    for v in reference_tensor("speaker/audio") {
        writer.write_sample(v).unwrap();
    }
    writer.finalize().unwrap();
    let out = data.path("icl.wav");
    data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--reference-audio",
        sample.to_str().unwrap(),
        "--reference-text",
        "a calm low voice reads a short sentence aloud, slowly and clearly.",
        "--language",
        "english",
        "--text",
        "hello world, this is izwi.",
        "--output",
        out.to_str().unwrap(),
    ]);
    let got: Vec<f32> = hound::WavReader::open(&out)
        .expect("a WAV")
        .samples::<i16>()
        .map(|s| f32::from(s.unwrap()) / 32_768.0)
        .collect();
    let want = reference_tensor("icl/wav");
    assert_eq!(got.len(), want.len(), "the reference's length");
    // The WAV holds 16-bit samples: within a step of them.
    let diff = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(diff <= 1.0 / 16_384.0, "the waveform differs by {diff}");
}

#[test]
fn refuses_a_transcript_without_its_sample_or_a_checkpoint_that_cannot_clone() {
    let data = Izwi::new(BIN);
    let out = data.path("x.wav");
    let out = out.to_str().unwrap();
    let voice = checkpoint();
    let stderr = data.fails(&[
        "speak",
        "--voice",
        &voice,
        "--reference-text",
        "What I said.",
        "--text",
        "Hi.",
        "--output",
        out,
    ]);
    assert!(stderr.contains("--reference-audio"), "{stderr}");

    let sample = data.path("sample.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 24_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(&sample, spec).unwrap();
    for n in 0..24_000 {
        writer.write_sample(((n % 100) * 100) as i16).unwrap();
    }
    writer.finalize().unwrap();
    let custom = checkpoint_copy(&data.path("custom"), |config| {
        config["tts_model_type"] = "custom_voice".into();
    });
    for extra in [vec![], vec!["--reference-text", "What I said."]] {
        let mut args = vec![
            "speak",
            "--voice",
            &custom,
            "--reference-audio",
            sample.to_str().unwrap(),
            "--text",
            "Hi.",
            "--output",
            out,
        ];
        args.extend(extra);
        let stderr = data.fails(&args);
        assert!(
            stderr.contains("only a Base checkpoint clones"),
            "{args:?}: {stderr}"
        );
    }
    let stderr = data.fails(&[
        "speak",
        "--voice",
        &voice,
        "--reference-audio",
        sample.to_str().unwrap(),
        "--reference-text",
        " ... ",
        "--text",
        "Hi.",
        "--output",
        out,
    ]);
    assert!(stderr.contains("has no words"), "{stderr}");
}
