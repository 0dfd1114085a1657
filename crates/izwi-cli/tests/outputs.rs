//! What `izwi speak` and `izwi transcribe` write never lands on a file the user already
//! has unless they pass --force, never inside the data folder, and several inputs
//! never share one transcript; a listing piped into a reader that stops early ends
//! quietly. With the real Piper voice en_US-joe-medium and Whisper tiny.en
//! (scripts/fetch-assets.sh).

use std::process::Stdio;

use izwi_test_support::asset;
use izwi_test_support::cli::Izwi;

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

fn joe() -> String {
    asset("voices/en_US-joe-medium/en_US-joe-medium.onnx")
        .display()
        .to_string()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn is_wav(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.starts_with(b"RIFF"))
}

#[test]
fn speech_keeps_a_file_already_there_unless_forced() {
    let izwi = Izwi::new(BIN);
    let notes = izwi.path("notes.txt");
    std::fs::write(&notes, "my essay").unwrap();
    let notes_arg = notes.to_str().unwrap();
    let voice = joe();
    let speak = |output: &str, force: bool| -> Vec<String> {
        let mut args = [
            "speak",
            "--voice",
            &voice,
            "--text",
            "Hello there.",
            "-o",
            output,
        ]
        .map(String::from)
        .to_vec();
        if force {
            args.push("--force".into());
        }
        args
    };
    let args = speak(notes_arg, false);
    let refused = izwi.fails(&strs(&args));
    assert!(
        refused.contains("already exists") && refused.contains("--force replaces it"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my essay");
    // Refused before a job was made.
    assert!(izwi.jobs().is_empty());

    let db = izwi.data_dir().join("izwi.db");
    let args = speak(db.to_str().unwrap(), true);
    let refused = izwi.fails(&strs(&args));
    assert!(refused.contains("inside Izwi's data folder"), "{refused}");
    assert!(izwi.jobs().is_empty(), "the database still opens");

    let args = speak(notes_arg, true);
    izwi.ok(&strs(&args));
    assert!(is_wav(&notes));
}

#[test]
fn transcripts_are_checked_before_any_work_and_named_after_each_file() {
    let izwi = Izwi::new(BIN);
    let model = asset("models/whisper-tiny.en").display().to_string();
    let jfk = asset("speech/jfk.wav");
    let (a, b) = (izwi.path("a"), izwi.path("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    for file in [a.join("talk.wav"), b.join("talk.wav")] {
        std::fs::copy(&jfk, file).unwrap();
    }
    let take1 = izwi.path("take.v1.wav");
    let take2 = izwi.path("take.v2.wav");
    std::fs::copy(&jfk, &take1).unwrap();
    std::fs::copy(&jfk, &take2).unwrap();
    let out = izwi.path("out");
    let (a_talk, b_talk) = (a.join("talk.wav"), b.join("talk.wav"));
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();

    // Two files of one name would share a transcript.
    let refused = izwi.fails(&[
        "transcribe",
        "--model",
        &model,
        &s(&a_talk),
        &s(&b_talk),
        "-o",
        &s(&out),
    ]);
    assert!(refused.contains("would both be written to"), "{refused}");
    // The folder made to check them went with the refusal.
    assert!(!out.exists());

    // A transcript already there is kept; forced, it still never replaces its input.
    let notes = izwi.path("notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    let refused = izwi.fails(&[
        "transcribe",
        "--model",
        &model,
        &s(&take1),
        "-o",
        &s(&notes),
    ]);
    assert!(refused.contains("already exists"), "{refused}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    let refused = izwi.fails(&[
        "transcribe",
        "--model",
        &model,
        &s(&take1),
        "-o",
        &s(&take1),
        "--force",
    ]);
    assert!(
        refused.contains("is one of the files to transcribe"),
        "{refused}"
    );
    assert!(is_wav(&take1));
    assert!(izwi.jobs().is_empty(), "every refusal came before a job");

    izwi.ok(&[
        "transcribe",
        "--model",
        &model,
        &s(&take1),
        &s(&take2),
        "-o",
        &s(&out),
    ]);
    for name in ["take.v1.txt", "take.v2.txt"] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(text.contains("country"), "{name}: {text}");
    }
}

#[cfg(unix)]
#[test]
fn a_listing_into_a_closed_pipe_ends_without_a_panic() {
    let izwi = Izwi::new(BIN);
    izwi.ok(&["models", "import", &joe(), "--name", "joe"]);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = izwi
        .command()
        .arg("voices")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
}
