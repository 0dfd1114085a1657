//! `izwi transcribe` refuses bad input with a message that names the problem, and one
//! bad file does not stop the others.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn izwi(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        // Jobs are recorded: keep them out of the user's own history.
        .env(
            "IZWI_DATA_DIR",
            std::env::temp_dir().join(format!("izwi-test-data-{}", std::process::id())),
        )
        .env(
            "HF_HOME",
            std::env::temp_dir().join(format!("izwi-test-hf-{}", std::process::id())),
        )
        // Jobs are recorded: keep them out of the user's own history and cache.
        .env("IZWI_DATA_DIR", scratch("data"))
        .env("HF_HOME", scratch("hf"))
        .args(args)
        .output()
        .expect("izwi runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn tiny_en() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.assets/models/whisper-tiny.en");
    assert!(
        path.exists(),
        "{} is missing: run scripts/fetch-assets.sh first",
        path.display()
    );
    path
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("izwi-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).expect("temp file");
    path
}

#[test]
fn a_missing_model_folder_is_named() {
    let audio = temp("a.wav", b"RIFF");
    let out = izwi(&[
        "transcribe".as_ref(),
        audio.as_os_str(),
        "--model".as_ref(),
        "/nonexistent/model".as_ref(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/nonexistent/model"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_file_fails_alone_with_its_reason() {
    let model = tiny_en();
    let text = temp(
        "notes.mp3",
        b"these are not audio bytes, just text saved as .mp3\n",
    );
    let empty = temp("empty.wav", b"");
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.assets/speech/jfk.wav");
    let out_dir = std::env::temp_dir().join(format!("izwi-errors-out-{}", std::process::id()));
    let out = izwi(&[
        "transcribe".as_ref(),
        text.as_os_str(),
        empty.as_os_str(),
        good.as_os_str(),
        "--model".as_ref(),
        model.as_os_str(),
        "--output".as_ref(),
        out_dir.as_os_str(),
    ]);
    let err = stderr(&out);
    assert!(!out.status.success(), "two of three files failed");
    assert!(
        err.contains("notes.mp3") && err.contains("2 of 3 files failed"),
        "{err}"
    );
    assert!(err.contains("empty.wav"), "{err}");
    let written =
        std::fs::read_to_string(out_dir.join("jfk.txt")).expect("the good file is transcribed");
    assert!(
        written.contains("ask not what your country can do for you"),
        "{written}"
    );
    for path in [text, empty] {
        let _ = std::fs::remove_file(path);
    }
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn an_english_only_model_will_not_translate() {
    let model = tiny_en();
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.assets/speech/jfk.wav");
    let out = izwi(&[
        "transcribe".as_ref(),
        good.as_os_str(),
        "--model".as_ref(),
        model.as_os_str(),
        "--task".as_ref(),
        "translate".as_ref(),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("English-only"), "{}", stderr(&out));
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("izwi-test-{name}-{}", std::process::id()))
}
