//! `izwi chat --mic` through a real audio path: a PulseAudio server of the test's own
//! (izwi-test-support's `pulse`), the question played into the "microphone" sink in real
//! time, the reply captured from the speaker sink. With real weights (Whisper tiny.en,
//! SmolLM2-135M-Instruct, the joe voice); the captured reply, transcribed by Whisper
//! base, says what the reply's text says. Barge-in: a second question played over a long
//! reply stops it and is answered in its turn.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use izwi_core::word_errors::{word_errors, words};
use izwi_test_support::pulse::{PulseAudio, MIC_SINK, OUT_SINK};
use izwi_test_support::{asset, install_vad, spoken};
use serde_json::Value;

fn say(dir: &Path, name: &str, text: &str) -> PathBuf {
    spoken(&dir.join(name), text)
}

fn data_dir(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    install_vad(&izwi_runtime::vad_path(&data));
    data
}

/// `izwi chat --mic --json` on the test's PulseAudio, its events read line by line.
fn live_chat(pulse: &PulseAudio, data: &Path, extra: &[&str]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_izwi"));
    command
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .envs(pulse.env())
        .arg("chat")
        .arg("--mic")
        .arg("--llm")
        .arg(asset(
            "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf",
        ))
        .arg("--asr")
        .arg(asset("models/whisper-tiny.en"))
        .arg("--voice")
        .arg(asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"))
        .arg("--json")
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("izwi runs")
}

/// Waits for the "listening" line: the microphone is open.
fn wait_listening(child: &mut Child) {
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    loop {
        let line = lines.next().expect("izwi said it listens").expect("text");
        eprintln!("izwi: {line}");
        if line.contains("listening on") {
            break;
        }
    }
    // Keep draining stderr so izwi never blocks on it.
    std::thread::spawn(move || lines.for_each(|l| eprintln!("izwi: {}", l.unwrap_or_default())));
}

fn transcribe(data: &Path, audio: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .arg("transcribe")
        .arg(audio)
        .arg("--model")
        .arg(asset("models/whisper-base"))
        .args(["--format", "txt"])
        .output()
        .expect("izwi transcribe runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn a_question_spoken_into_the_microphone_is_answered_on_the_speaker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = data_dir(dir.path());
    let question = say(dir.path(), "q.wav", "What is the capital of France?");
    let pulse = PulseAudio::start();
    let captured = dir.path().join("speaker.wav");
    let recorder = pulse.record(OUT_SINK, &captured);
    let mut izwi = live_chat(&pulse, &data, &["--max-turns", "1"]);
    wait_listening(&mut izwi);
    pulse.play(MIC_SINK, &question);
    let out = izwi.wait_with_output().expect("izwi ends after one turn");
    recorder.finish();
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON event per line"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for kind in [
        "speech_started",
        "speech_ended",
        "heard",
        "reply_sentence",
        "turn",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let turn = events.last().expect("the turn");
    assert_eq!(turn["event"], "turn");
    assert_eq!(
        words(turn["user_text"].as_str().expect("text")),
        words("What is the capital of France?")
    );
    let reply = turn["reply_text"].as_str().expect("text");
    assert!(reply.contains("Paris"), "{reply}");
    assert_eq!(turn["interrupted"], false);
    // What the speaker played is the reply ("France is" is heard as "Francis": see
    // voice_chat.rs).
    let heard = transcribe(&data, &captured);
    assert!(
        word_errors(&words(reply), &words(&heard)) <= 2,
        "the speaker played {heard:?} for {reply:?}"
    );
}

#[test]
fn speaking_over_a_reply_stops_it_and_is_answered_next() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = data_dir(dir.path());
    let story = say(
        dir.path(),
        "story.wav",
        "Tell me a long story about a lighthouse keeper.",
    );
    let france = say(dir.path(), "france.wav", "What is the capital of France?");
    let pulse = PulseAudio::start();
    let mut izwi = live_chat(
        &pulse,
        &data,
        &[
            "--max-turns",
            "2",
            "--system",
            "You are a storyteller. Tell long stories.",
            "--max-tokens",
            "300",
        ],
    );
    wait_listening(&mut izwi);
    pulse.play(MIC_SINK, &story);
    let stdout = izwi.stdout.take().expect("stdout");
    let mut events = Vec::new();
    let mut interrupted = false;
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.expect("a line")).expect("JSON");
        // The reply has begun to play: ask something else over it.
        if event["event"] == "reply_sentence" && !interrupted {
            interrupted = true;
            pulse.play(MIC_SINK, &france);
        }
        events.push(event);
    }
    assert!(izwi.wait().expect("izwi ends").success());
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(kinds.contains(&"barge_in"), "{kinds:?}");
    let turns: Vec<&Value> = events.iter().filter(|e| e["event"] == "turn").collect();
    assert_eq!(turns.len(), 2, "{events:?}");
    assert_eq!(turns[0]["interrupted"], true, "{}", turns[0]);
    let second = turns[1]["reply_text"].as_str().expect("text");
    assert!(second.contains("Paris"), "{}", turns[1]);
}

#[test]
fn the_devices_are_listed_with_the_defaults() {
    let pulse = PulseAudio::start();
    let out = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .envs(pulse.env())
        .args(["devices", "--json"])
        .output()
        .expect("izwi runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let devices: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for kind in ["inputs", "outputs"] {
        let list = devices[kind].as_array().expect("a list");
        let defaults = list.iter().filter(|d| d["default"] == true).count();
        assert_eq!(defaults, 1, "{kind}: {list:?}");
        assert!(list
            .iter()
            .all(|d| d["id"].as_str().is_some_and(|id| !id.is_empty())));
    }
}
