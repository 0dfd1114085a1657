//! Spoken turns through `izwi chat --input`: questions synthesised by espeak-ng are heard
//! by Whisper tiny.en, answered by SmolLM2-135M-Instruct and spoken by the joe voice; the
//! spoken answers, transcribed again by Whisper base, say what the reply's text says. Real weights from
//! scripts/fetch-assets.sh.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use izwi_core::word_errors::{word_errors, words};
use izwi_test_support::{asset, install_vad, spoken};
use serde_json::Value;

fn izwi(data: &Path, args: &[&std::ffi::OsStr]) -> Output {
    install_vad(&izwi_runtime::vad_path(data));
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env("HF_HOME", data.join("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

fn succeeded(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn say(dir: &Path, name: &str, text: &str) -> PathBuf {
    spoken(&dir.join(name), text)
}

fn model_args(extra: &[&std::ffi::OsStr]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "chat".into(),
        "--llm".into(),
        asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf").into(),
        "--asr".into(),
        asset("models/whisper-tiny.en").into(),
        "--voice".into(),
        asset("voices/en_US-joe-medium/en_US-joe-medium.onnx").into(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|a| a.to_os_string()));
    args
}

/// What Whisper base (a larger model than the turn's) hears in `audio`.
fn transcribe(data: &Path, audio: &Path) -> String {
    let model = asset("models/whisper-base");
    let json = succeeded(izwi(
        data,
        &[
            "transcribe".as_ref(),
            audio.as_os_str(),
            "--model".as_ref(),
            model.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ],
    ));
    let transcript: Value = serde_json::from_str(&json).expect("a JSON transcript");
    transcript["text"].as_str().expect("text").to_string()
}

#[test]
fn spoken_questions_get_spoken_answers_that_say_the_reply() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let france = say(dir.path(), "france.wav", "What is the capital of France?");
    // Questions tiny.en hears exactly in espeak-ng's voice ("the sky" it hears as
    // "this guy").
    let romeo = say(dir.path(), "romeo.wav", "Who wrote Romeo and Juliet?");
    let output = dir.path().join("reply.wav");

    // One question with its reply written where asked.
    let args = model_args(&[
        "--input".as_ref(),
        france.as_os_str(),
        "--output".as_ref(),
        output.as_os_str(),
    ]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let stdout = succeeded(izwi(&data, &args));
    let turn: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let text = |key: &str| turn[key].as_str().expect(key).to_string();
    assert_eq!(
        words(&text("user_text")),
        words("What is the capital of France?")
    );
    assert!(text("reply_text").contains("Paris"), "{turn}");
    for key in ["asr_ms", "first_token_ms", "first_audio_ms", "total_ms"] {
        assert!(turn[key].as_f64().expect(key) > 0.0, "{key}: {turn}");
    }
    let heard = transcribe(&data, &output);
    let reply = words(&text("reply_text"));
    // Two: joe runs "France is" together, and Whisper hears "Francis" (`izwi speak`
    // of the sentence is heard the same way), one word for two.
    assert!(
        word_errors(&reply, &words(&heard)) <= 2,
        "the voice said {heard:?} for {reply:?}"
    );
    // The data folder keeps both sides of the turn.
    let kept = PathBuf::from(text("reply_audio"));
    assert!(kept.starts_with(&data), "{}", kept.display());
    assert_eq!(
        std::fs::read(&kept).expect("the reply is kept"),
        std::fs::read(&output).expect("the reply was written")
    );

    // Two questions in one conversation: each turn's reply is its own.
    let args = model_args(&[
        "--input".as_ref(),
        france.as_os_str(),
        "--input".as_ref(),
        romeo.as_os_str(),
    ]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let stdout = succeeded(izwi(&data, &args));
    let turns: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per turn"))
        .collect();
    assert_eq!(turns.len(), 2, "{stdout}");
    assert_eq!(turns[0]["chat_id"], turns[1]["chat_id"]);
    assert_eq!(
        words(turns[1]["user_text"].as_str().expect("text")),
        words("Who wrote Romeo and Juliet?")
    );
    let romeo_reply = turns[1]["reply_text"].as_str().expect("text");
    assert!(romeo_reply.contains("Shakespeare"), "{romeo_reply}");
    let heard = transcribe(
        &data,
        Path::new(turns[1]["reply_audio"].as_str().expect("path")),
    );
    // Two: "playwright" is heard as "player at".
    assert!(
        word_errors(&words(romeo_reply), &words(&heard)) <= 2,
        "the voice said {heard:?} for {romeo_reply:?}"
    );
}

#[test]
fn a_recording_without_words_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let silence = dir.path().join("silence.wav");
    izwi_runtime::write_wav(&silence, &vec![0.0; 32_000], 16_000).expect("silence written");
    let args = model_args(&["--input".as_ref(), silence.as_os_str()]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = izwi(&dir.path().join("data"), &args);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no words were heard in") && stderr.contains("silence.wav"),
        "{stderr}"
    );
}
