//! Voxtral Realtime through the command line, on the tiny random-weight checkpoint of
//! izwi-core's parity tests (its text is the reference's, not speech): `izwi transcribe`
//! and `izwi listen --realtime` with the model folder given directly, and the
//! dictation saved with its recording and transcribed again from it by the history.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../izwi-core/tests/fixtures/voxtral-realtime-tiny")
}

/// The reference transcript of the fixture's audio, without its whitespace (the
/// random model writes control characters that split words differently).
fn reference_text() -> String {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("reference.json")).unwrap())
            .unwrap();
    squeeze(reference["text"].as_str().unwrap())
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect()
}

/// The fixture's audio, the first 2 s of jfk.wav (`scripts/fetch-assets.sh`), as a WAV.
fn recording(dir: &Path) -> PathBuf {
    let jfk = izwi_runtime::load_for_asr(izwi_test_support::asset("speech/jfk.wav")).unwrap();
    let path = dir.join("two-seconds.wav");
    izwi_runtime::write_wav(&path, &jfk[..32_000], 16_000).unwrap();
    path
}

fn izwi(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

/// `izwi listen` fed `wav` at its own pace by the model folder, with `extra` arguments.
fn listen<'a>(model: &'a Path, wav: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "listen",
        "--model",
        model.to_str().unwrap(),
        "--input",
        wav.to_str().unwrap(),
        "--realtime",
    ];
    args.extend_from_slice(extra);
    args
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
fn a_file_transcribes_to_the_reference_text_with_word_times() {
    let data = tempfile::tempdir().unwrap();
    let wav = recording(data.path());
    let model = fixture();
    let args = [
        "transcribe",
        wav.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--format",
        "json",
    ];
    let transcript: Value = serde_json::from_str(&ok(izwi(data.path(), &args), &args)).unwrap();
    let segments = transcript["segments"].as_array().unwrap();
    let text: String = segments
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert_eq!(squeeze(&text), reference_text());
    // Every word has its time, in order, within the 2 s.
    let words: Vec<&Value> = segments
        .iter()
        .flat_map(|s| s["words"].as_array().unwrap())
        .collect();
    assert!(!words.is_empty());
    let mut last_end = 0.0;
    for word in words {
        let (start, end) = (
            word["start"].as_f64().unwrap(),
            word["end"].as_f64().unwrap(),
        );
        assert!(last_end <= start && start <= end && end <= 2.0, "{word}");
        last_end = end;
    }

    // What it cannot do is refused by name.
    let args = [
        "transcribe",
        wav.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--language",
        "en",
    ];
    let refused = izwi(data.path(), &args);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("cannot take a language"), "{message}");
}

#[test]
fn live_dictation_streams_the_reference_text_and_is_saved() {
    let data = tempfile::tempdir().unwrap();
    let wav = recording(data.path());
    let model = fixture();
    let args = listen(&model, &wav, &["--json"]);
    let out = ok(izwi(data.path(), &args), &args);
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let finals: Vec<&Value> = events.iter().filter(|e| e["type"] == "final").collect();
    assert!(!finals.is_empty(), "{out}");
    let heard: String = finals.iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(squeeze(&heard), reference_text());
    for pair in finals.windows(2) {
        assert!(
            pair[0]["end_s"].as_f64() <= pair[1]["start_s"].as_f64(),
            "{out}"
        );
        assert!(pair[0]["emitted_at_s"].as_f64() <= pair[1]["emitted_at_s"].as_f64());
    }

    // Saved as a transcription job with its recording, which the history can
    // transcribe again with the same model: the same text.
    let jobs: Value =
        serde_json::from_str(&ok(izwi(data.path(), &["history", "--json"]), &["history"])).unwrap();
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["status"], "done");
    let recorded = PathBuf::from(jobs[0]["input"].as_str().unwrap());
    let args = [
        "transcribe",
        recorded.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--format",
        "json",
    ];
    let again: Value = serde_json::from_str(&ok(izwi(data.path(), &args), &args)).unwrap();
    let text: String = again["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert_eq!(squeeze(&text), reference_text());
}

/// The reference transcript of the fixture's audio with the text 160 ms behind it.
fn reference_text_at_160ms() -> String {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("reference.json")).unwrap())
            .unwrap();
    squeeze(reference["delay_160ms"]["text"].as_str().unwrap())
}

#[test]
fn a_chosen_delay_writes_the_text_of_that_delay() {
    let data = tempfile::tempdir().unwrap();
    let wav = recording(data.path());
    let model = fixture();
    assert_ne!(reference_text_at_160ms(), reference_text());
    let args = [
        "transcribe",
        wav.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--delay-ms",
        "160",
    ];
    assert_eq!(
        squeeze(&ok(izwi(data.path(), &args), &args)),
        reference_text_at_160ms()
    );
    let args = listen(&model, &wav, &["--json", "--delay-ms", "160", "--no-save"]);
    let out = ok(izwi(data.path(), &args), &args);
    let heard: String = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("one JSON object per line"))
        .filter(|e| e["type"] == "final")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(squeeze(&heard), reference_text_at_160ms());

    // A delay that is not a whole number of 80 ms positions is refused by name, before
    // a job is made.
    let wav_arg = wav.to_str().unwrap();
    let model_arg = model.to_str().unwrap();
    for (args, delay) in [
        (
            vec![
                "transcribe",
                wav_arg,
                "--model",
                model_arg,
                "--delay-ms",
                "100",
            ],
            "100",
        ),
        (listen(&model, &wav, &["--delay-ms", "2480"]), "2480"),
    ] {
        let refused = izwi(data.path(), &args);
        assert!(!refused.status.success(), "{args:?}");
        let message = String::from_utf8_lossy(&refused.stderr);
        assert!(
            message.contains(&format!("a delay of {delay} ms")),
            "{message}"
        );
    }
    let jobs: Value =
        serde_json::from_str(&ok(izwi(data.path(), &["history", "--json"]), &["history"])).unwrap();
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
}

#[test]
fn the_bench_measures_a_folder_on_the_engine_alone() {
    let data = tempfile::tempdir().unwrap();
    let model = fixture();
    let args = [
        "bench",
        "voxtral",
        "--checkpoint",
        model.to_str().unwrap(),
        "--streams",
        "1,2",
        "--seconds",
        "2",
    ];
    let out = ok(izwi(data.path(), &args), &args);
    for streams in ["1", "2"] {
        let row: Vec<&str> = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cells| cells.first() == Some(&streams))
            .unwrap_or_else(|| panic!("no row for {streams} streams: {out}"));
        let rate: f64 = row[1].parse().expect("audio seconds per second");
        assert!(rate > 0.0, "{out}");
        assert_eq!(&row[2..], ["-", "-"], "no reference side was run: {out}");
    }
    let refused = izwi(data.path(), &["bench", "voxtral"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("give --python"));
}
