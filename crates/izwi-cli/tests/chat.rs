//! `izwi chat` with the real SmolLM2-135M-Instruct (scripts/fetch-assets.sh): typed
//! questions on standard input get sensible answers, the conversation carries over
//! from one question to the next, and a file that is not a chat model is refused by name.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use izwi_test_support::asset;

fn chat(args: &[&str], input: &str) -> Output {
    let data = tempfile::tempdir().expect("temp dir");
    chat_in(data.path(), args, input)
}

fn chat_in(data: &std::path::Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .arg("--data-dir")
        .arg(data)
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("izwi runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writes the questions");
    child.wait_with_output().expect("izwi finishes")
}

fn smollm2() -> String {
    asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf")
        .display()
        .to_string()
}

#[test]
fn answers_typed_questions_in_one_conversation() {
    let out = chat(
        &["--llm", &smollm2(), "--json"],
        "What is the capital of France?\nAnd what is the capital of Italy?\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replies: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON object per reply"))
        .collect();
    assert_eq!(replies.len(), 2, "{replies:?}");
    let text = |i: usize| {
        replies[i]["reply_text"]
            .as_str()
            .expect("text")
            .to_lowercase()
    };
    assert!(text(0).contains("paris"), "{}", text(0));
    // "And what..." only makes sense after the first question.
    assert!(text(1).contains("rome"), "{}", text(1));
    for reply in &replies {
        assert_eq!(reply["finished_turn"], true, "{reply}");
        assert!(reply["first_token_ms"].as_f64().expect("ms") > 0.0);
    }
}

#[test]
fn streams_plain_text_without_json() {
    let out = chat(&["--llm", &smollm2()], "What is the capital of France?\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("Paris"), "{text}");
    assert!(!text.contains("<|im_end|>"), "control tokens leak: {text}");
}

#[test]
fn a_file_that_is_not_a_chat_model_is_refused() {
    let whisper = asset("models/whisper-tiny.en/config.json")
        .display()
        .to_string();
    let out = chat(&["--llm", &whisper], "hi\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("or a chat model (.gguf)"), "{err}");
    let folder = asset("models/whisper-tiny.en").display().to_string();
    let out = chat(&["--llm", &folder], "hi\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a speech-to-text model, not a chat model"),
        "{err}"
    );
    let out = chat(&["--llm", "/no/such/model.gguf"], "hi\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such file"), "{err}");
}

#[test]
fn a_stored_chat_is_listed_and_resumed_with_what_was_said() {
    let data = tempfile::tempdir().expect("temp dir");
    let out = chat_in(
        data.path(),
        &["--llm", &smollm2()],
        "What is the capital of France?\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["chats", "--json"])
        .output()
        .expect("izwi runs");
    assert!(listed.status.success());
    let chats: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["title"], "What is the capital of France?");
    let id = chats[0]["id"].to_string();
    // "And what about Italy?" only makes sense after the first question.
    let out = chat_in(
        data.path(),
        &["--llm", &smollm2(), "--resume", &id, "--json"],
        "And what is the capital of Italy?\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reply["chat_id"].to_string(), id);
    let text = reply["reply_text"].as_str().expect("text").to_lowercase();
    assert!(text.contains("rome"), "{text}");
    let out = chat_in(
        data.path(),
        &["--llm", &smollm2(), "--resume", "999"],
        "hi\n",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no chat 999"));
}

#[test]
fn an_imported_chat_model_is_chosen_by_its_id() {
    let data = tempfile::tempdir().expect("temp dir");
    let izwi = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_izwi"))
            .arg("--data-dir")
            .arg(data.path())
            .args(args)
            .output()
            .expect("izwi runs")
    };
    let out = izwi(&["models", "import", &smollm2(), "--name", "smol"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = String::from_utf8_lossy(&izwi(&["models", "list"]).stdout).into_owned();
    let row = list
        .lines()
        .find(|l| l.contains("local/smol"))
        .unwrap_or_default();
    assert!(row.contains("chat"), "{list}");
    let out = chat_in(
        data.path(),
        &["--llm", "local/smol"],
        "What is the capital of France?\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("Paris"), "{text}");

    // A file named .gguf that is not one is refused by name, and nothing is imported.
    let fake = data.path().join("fake.gguf");
    std::fs::write(&fake, b"not a model").unwrap();
    let out = izwi(&["models", "import", fake.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("fake.gguf"), "{err}");
    let list = String::from_utf8_lossy(&izwi(&["models", "list"]).stdout).into_owned();
    assert!(!list.contains("local/fake"), "{list}");
}
