//! Qwen3-TTS checkpoints as models and voices: `izwi models import` of the tiny random
//! checkpoint of izwi-core's fixtures (and of copies made CustomVoice and VoiceDesign
//! checkpoints by their config), `izwi voices clone` and `design`, the CustomVoice
//! speakers as presets, and `izwi speak --voice NAME` for each kind, compared, seeded,
//! with the same request made through the checkpoint folder. Random weights say nothing
//! intelligible: this checks the path, not the voice.

use std::path::{Path, PathBuf};

use izwi_test_support::cli::Izwi;
use izwi_test_support::fixtures::{qwen3_tts_tiny as fixture, qwen3_tts_variant};

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

/// `izwi speak` with `args`, seeded; the samples of the WAV it wrote.
fn speak(izwi: &Izwi, name: &str, args: &[&str]) -> Vec<i16> {
    let out = izwi.path(name);
    let mut all = vec!["speak", "--seed", "7", "--output", out.to_str().unwrap()];
    all.extend(args);
    izwi.ok(&all);
    let mut reader = hound::WavReader::open(&out).unwrap();
    assert_eq!(reader.spec().sample_rate, 24_000);
    let samples: Vec<i16> = reader.samples().map(Result::unwrap).collect();
    assert!(samples.len() >= 2 * 1920, "{} samples", samples.len());
    samples
}

fn listed_voices(izwi: &Izwi) -> Vec<serde_json::Value> {
    serde_json::from_str(&izwi.ok(&["voices", "list", "--json"])).unwrap()
}

/// Two seconds of a 44.1 kHz stereo hum.
fn recording(path: &Path, seconds: u32) {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 44_100,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for n in 0..44_100 * seconds {
        let t = n as f32 / 44_100.0;
        let v = (0.3 * (2.0 * std::f32::consts::PI * 160.0 * t).sin() * 32_767.0) as i16;
        writer.write_sample(v).unwrap();
        writer.write_sample(v).unwrap();
    }
    writer.finalize().unwrap();
}

#[test]
fn an_imported_checkpoint_is_a_speak_model() {
    let izwi = Izwi::new(BIN);
    izwi.import(&fixture(), &["--name", "qwen"]);
    let models: Vec<serde_json::Value> =
        serde_json::from_str(&izwi.ok(&["models", "list", "--json"])).unwrap();
    let qwen = models.iter().find(|m| m["id"] == "local/qwen").unwrap();
    assert_eq!(qwen["family"], "qwen3_tts");
    assert_eq!(qwen["task"], "speak");
    assert_eq!(qwen["status"], "installed");
    // Spoken by its id as by its folder.
    let by_id = speak(
        &izwi,
        "id.wav",
        &["--voice", "local/qwen", "--text", "Hello there."],
    );
    let by_folder = speak(
        &izwi,
        "folder.wav",
        &[
            "--voice",
            fixture().to_str().unwrap(),
            "--text",
            "Hello there.",
        ],
    );
    assert!(by_id == by_folder, "the import speaks as its folder");
    // A Base checkpoint has no preset speakers.
    assert!(listed_voices(&izwi).is_empty());
}

#[test]
fn a_voice_cloned_from_a_recording_speaks_as_that_recording() {
    let izwi = Izwi::new(BIN);
    izwi.import(&fixture(), &["--name", "qwen"]);
    let sample = izwi.path("me.wav");
    recording(&sample, 2);
    let before = std::fs::read(&sample).unwrap();
    let said = izwi.ok(&[
        "voices",
        "clone",
        "Me",
        "--model",
        "local/qwen",
        "--audio",
        sample.to_str().unwrap(),
        "--text",
        "A low hum.",
    ]);
    assert!(said.contains("cloned voice"), "{said}");
    assert_eq!(std::fs::read(&sample).unwrap(), before, "the user's file");
    let voices = listed_voices(&izwi);
    let me = voices.iter().find(|v| v["name"] == "Me").unwrap();
    assert_eq!(me["source"], "cloned");
    assert_eq!(me["model_id"], "local/qwen");
    assert_eq!(me["reference_text"], "A low hum.");
    let copy = izwi
        .data_dir()
        .join(me["reference_audio"].as_str().unwrap());
    assert!(copy.starts_with(izwi.data_dir().join("voices")), "{copy:?}");
    assert_eq!(std::fs::read(&copy).unwrap(), before);

    let cloned = speak(
        &izwi,
        "me-out.wav",
        &["--voice", "Me", "--text", "Hello in my voice."],
    );
    let direct = speak(
        &izwi,
        "direct.wav",
        &[
            "--voice",
            fixture().to_str().unwrap(),
            "--reference-audio",
            sample.to_str().unwrap(),
            "--reference-text",
            "A low hum.",
            "--text",
            "Hello in my voice.",
        ],
    );
    // Not assert_eq: a failure would print a second of samples. With its transcript the
    // clone speaks in context, as the recording and its transcript given directly do.
    assert!(cloned == direct, "the clone speaks as its recording does");

    // No transcript and no Whisper model: the voice is kept, and it says so.
    let said = izwi.ok(&[
        "voices",
        "clone",
        "Me again",
        "--model",
        "local/qwen",
        "--audio",
        sample.to_str().unwrap(),
    ]);
    assert!(
        said.contains("no transcript: no Whisper model is installed"),
        "{said}"
    );
    let voices = listed_voices(&izwi);
    let again = voices.iter().find(|v| v["name"] == "Me again").unwrap();
    assert!(again["reference_text"].is_null());

    // Deleting a clone removes its copy of the recording, never the user's file.
    let id = me["id"].as_i64().unwrap().to_string();
    izwi.ok(&["voices", "rm", &id]);
    assert!(!copy.exists());
    assert!(sample.exists());
}

#[test]
fn a_clone_refuses_what_it_cannot_use() {
    let izwi = Izwi::new(BIN);
    izwi.import(&fixture(), &["--name", "qwen"]);
    let clone = |audio: &Path, model: &str| {
        izwi.fails(&[
            "voices",
            "clone",
            "X",
            "--model",
            model,
            "--audio",
            audio.to_str().unwrap(),
            "--text",
            "x",
        ])
    };
    let long = izwi.path("long.wav");
    recording(&long, 61);
    assert!(clone(&long, "local/qwen").contains("at most 60 s"));
    let garbage = izwi.path("garbage.wav");
    std::fs::write(&garbage, b"this is not audio at all").unwrap();
    let err = clone(&garbage, "local/qwen");
    assert!(err.contains("garbage.wav"), "{err}");
    assert!(clone(&izwi.path("nowhere.wav"), "local/qwen").contains("no recording at"));
    let short = izwi.path("short.wav");
    recording(&short, 1);
    let custom = qwen3_tts_variant(izwi.folder(), "custom_voice");
    let err = clone(&short, custom.to_str().unwrap());
    assert!(
        err.contains("only a Base checkpoint clones voices"),
        "{err}"
    );
    // Nothing was kept of the refused ones.
    assert!(listed_voices(&izwi).is_empty());
    let kept = izwi.data_dir().join("voices");
    assert!(!kept.exists() || std::fs::read_dir(kept).unwrap().next().is_none());
}

#[test]
fn a_designed_voice_speaks_its_description() {
    let izwi = Izwi::new(BIN);
    let design = qwen3_tts_variant(izwi.folder(), "voice_design");
    izwi.import(&design, &["--name", "designer"]);
    let description = "A calm, low voice, slightly amused.";
    izwi.ok(&[
        "voices",
        "design",
        "Calm",
        "--model",
        "local/designer",
        "--description",
        description,
    ]);
    let voices = listed_voices(&izwi);
    let calm = voices.iter().find(|v| v["name"] == "Calm").unwrap();
    assert_eq!(calm["source"], "designed");
    assert_eq!(calm["settings"]["instructions"], description);
    let designed = speak(
        &izwi,
        "calm.wav",
        &["--voice", "Calm", "--text", "Good evening."],
    );
    let direct = speak(
        &izwi,
        "direct.wav",
        &[
            "--voice",
            design.to_str().unwrap(),
            "--instructions",
            description,
            "--text",
            "Good evening.",
        ],
    );
    assert!(
        designed == direct,
        "the designed voice speaks its description"
    );
    let err = izwi.fails(&[
        "voices",
        "design",
        "Nope",
        "--model",
        fixture().to_str().unwrap(),
        "--description",
        description,
    ]);
    assert!(
        err.contains("only a VoiceDesign checkpoint designs voices"),
        "{err}"
    );
}

#[test]
fn a_custom_voice_checkpoints_speakers_are_presets() {
    let izwi = Izwi::new(BIN);
    let custom = qwen3_tts_variant(izwi.folder(), "custom_voice");
    izwi.import(&custom, &["--name", "custom"]);
    let voices = listed_voices(&izwi);
    let mut names: Vec<_> = voices.iter().map(|v| v["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["Dylan", "Vivian"]);
    assert!(voices.iter().all(|v| v["source"] == "preset"));
    // Listed once, however often the library is read.
    assert_eq!(listed_voices(&izwi).len(), 2);
    let list = izwi.ok(&["voices"]);
    assert!(list.contains("preset"), "{list}");

    let preset = speak(
        &izwi,
        "vivian.wav",
        &[
            "--voice",
            "Vivian",
            "--language",
            "English",
            "--text",
            "Hello.",
        ],
    );
    let direct = speak(
        &izwi,
        "direct.wav",
        &[
            "--voice",
            "local/custom",
            "--speaker",
            "vivian",
            "--language",
            "English",
            "--text",
            "Hello.",
        ],
    );
    assert!(preset == direct, "the preset speaks as its speaker");
    let id = voices[0]["id"].as_i64().unwrap().to_string();
    assert!(izwi
        .fails(&["voices", "rm", &id])
        .contains("preset speaker"));
}

#[test]
fn a_clone_without_a_transcript_gets_whispers() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.assets");
    let (whisper, jfk) = (
        assets.join("models/whisper-tiny.en"),
        assets.join("speech/jfk.wav"),
    );
    assert!(jfk.is_file(), "run scripts/fetch-assets.sh first");
    let izwi = Izwi::new(BIN);
    izwi.import(&fixture(), &["--name", "qwen"]);
    izwi.import(&whisper, &["--name", "tiny"]);
    let said = izwi.ok(&[
        "voices",
        "clone",
        "Kennedy",
        "--model",
        "local/qwen",
        "--audio",
        jfk.to_str().unwrap(),
    ]);
    assert!(said.contains("transcript by local/tiny"), "{said}");
    let voices = listed_voices(&izwi);
    let text = voices[0]["reference_text"].as_str().unwrap().to_lowercase();
    assert!(
        text.contains("ask not what your country can do for you"),
        "{text}"
    );
}
