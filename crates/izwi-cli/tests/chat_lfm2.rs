//! `izwi chat --llm FOLDER` with an LFM2 Hugging Face folder: the tiny random
//! checkpoint of crates/izwi-core/tests/fixtures/lfm2 (its answers are noise; what they
//! are is held to transformers in crates/izwi-runtime/tests/lfm2_chat.rs) opens and
//! answers a typed question.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn an_lfm2_folder_answers_a_typed_question() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/lfm2/tiny");
    let data = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_izwi"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["chat", "--json", "--llm"])
        .arg(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("izwi runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"What is the capital of France?\n")
        .expect("writes the question");
    let out = child.wait_with_output().expect("izwi finishes");
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
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0]["tokens"].as_u64().expect("tokens") > 0);
    assert!(replies[0]["reply_text"].is_string());
}
