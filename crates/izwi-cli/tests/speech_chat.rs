//! `izwi chat --speech-to-speech`: spoken turns answered aloud by the tiny
//! random-weight LFM2-Audio checkpoint (its words are noise: the test checks structure
//! and that greedy turns repeat); and `--mic` through a PulseAudio server of the test's
//! own, as live_chat.rs does for the cascade.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use izwi_test_support::fixtures::{lfm2_audio_reference_speech, lfm2_audio_tiny};
use izwi_test_support::pulse::{PulseAudio, MIC_SINK, OUT_SINK};
use izwi_test_support::{install_vad, spoken};
use serde_json::Value;

fn izwi(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

fn ok(out: Output, args: &[&str]) -> String {
    assert!(
        out.status.success(),
        "izwi {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn fails(out: Output, args: &[&str]) -> String {
    assert!(!out.status.success(), "izwi {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Two turns of one speech-to-speech chat on `wav`, greedy; their JSON lines.
fn two_turns(data: &Path, wav: &str) -> Vec<Value> {
    let args = [
        "chat",
        "--speech-to-speech",
        "local/lfm2-audio",
        "--input",
        wav,
        "--input",
        wav,
        "--temperature",
        "0",
        "--max-tokens",
        "24",
        "--json",
    ];
    ok(izwi(data, &args), &args)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn import(data: &Path) {
    let fixture = lfm2_audio_tiny();
    let args = [
        "models",
        "import",
        fixture.to_str().unwrap(),
        "--name",
        "lfm2-audio",
    ];
    ok(izwi(data, &args), &args);
}

#[test]
fn spoken_turns_are_answered_aloud_by_an_lfm2_audio_model() {
    let data = tempfile::tempdir().unwrap();
    let wav = lfm2_audio_reference_speech(&data.path().join("speech.wav"));
    let wav = wav.to_str().unwrap();
    import(data.path());

    let turns = two_turns(data.path(), wav);
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["chat_id"], turns[1]["chat_id"], "one chat");
    for turn in &turns {
        let frames = turn["reply_frames"].as_u64().unwrap();
        assert!(frames > 0, "the reply spoke: {turn}");
        let seconds = turn["reply_seconds"].as_f64().unwrap();
        assert!((seconds - frames as f64 * 0.08).abs() < 1e-6, "{turn}");
        assert!(turn["first_audio_ms"].as_f64().is_some());
        assert!(Path::new(turn["reply_audio"].as_str().unwrap()).is_file());
        assert!(Path::new(turn["user_audio"].as_str().unwrap()).is_file());
    }
    // Greedy: a new chat with the same speech says the same again.
    let again = two_turns(data.path(), wav);
    assert_ne!(again[0]["chat_id"], turns[0]["chat_id"]);
    for (a, b) in turns.iter().zip(&again) {
        assert_eq!(a["reply_text"], b["reply_text"]);
        assert_eq!(a["reply_frames"], b["reply_frames"]);
        let audio = |t: &Value| std::fs::read(t["reply_audio"].as_str().unwrap()).unwrap();
        assert_eq!(audio(a), audio(b));
    }

    let args = ["chat", "--speech-to-speech", "local/lfm2-audio"];
    let message = fails(izwi(data.path(), &args), &args);
    assert!(
        message.contains("give --input recordings or --mic"),
        "{message}"
    );
    let args = [
        "chat",
        "--speech-to-speech",
        "local/lfm2-audio",
        "--voice",
        "joe",
        "--input",
        wav,
    ];
    let message = fails(izwi(data.path(), &args), &args);
    assert!(message.contains("cannot be used with"), "{message}");
}

#[test]
fn speech_into_the_microphone_is_answered_on_the_speaker() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    install_vad(&izwi_runtime::vad_path(&data));
    import(&data);
    let question = spoken(&dir.path().join("q.wav"), "What is the capital of France?");
    let pulse = PulseAudio::start();
    let captured = dir.path().join("speaker.wav");
    let recorder = pulse.record(OUT_SINK, &captured);
    let mut child = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", &data)
        .env("HF_HOME", data.join("hf"))
        .envs(pulse.env())
        .args([
            "chat",
            "--speech-to-speech",
            "local/lfm2-audio",
            "--mic",
            "--max-turns",
            "1",
            "--temperature",
            "0",
            "--max-tokens",
            "24",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("izwi runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("izwi said it listens").unwrap();
        if line.contains("listening on") {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(|l| eprintln!("izwi: {}", l.unwrap_or_default())));
    pulse.play(MIC_SINK, &question);
    let out = child.wait_with_output().expect("izwi ends after one turn");
    recorder.finish();
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON event per line"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for kind in ["speech_started", "speech_ended", "turn"] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    assert!(!kinds.contains(&"heard"), "nothing transcribes the user");
    let turn = events.last().unwrap();
    assert_eq!(turn["event"], "turn");
    assert!(turn["reply_frames"].as_u64().unwrap() > 0, "{turn}");
    // The speaker played the reply: as many seconds of sound as the stored reply has.
    let played = izwi_runtime::load_for_asr(&captured).unwrap();
    let loud = played.iter().filter(|x| x.abs() > 1e-4).count() as f64 / 16_000.0;
    let reply = turn["reply_seconds"].as_f64().unwrap();
    assert!(loud > 0.0, "the speaker stayed silent");
    assert!(
        loud <= reply + 0.1,
        "{loud} s of sound for a {reply} s reply"
    );
}
