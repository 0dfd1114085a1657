//! A hundred clients transcribing the same clip at the same moment through a real
//! `izwi serve` (`izwi bench load`): every one answered, every answer the text a lone
//! request gets, under each batch strategy.

use std::process::Command;

use izwi_test_support::asset;
use serde_json::Value;

#[test]
fn a_hundred_clients_at_once_are_all_answered_correctly_under_every_strategy() {
    let data = tempfile::tempdir().expect("temp dir");
    let izwi = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_izwi"))
            .arg("--data-dir")
            .arg(data.path())
            .env("HF_HOME", data.path().join("hf"))
            .args(args)
            .output()
            .expect("izwi runs");
        assert!(
            out.status.success(),
            "izwi {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let model = asset("models/whisper-tiny.en");
    izwi(&["models", "import", &model.display().to_string()]);
    let jfk = asset("speech/jfk.wav");
    let report = izwi(&[
        "bench",
        "load",
        "--model",
        "local/whisper-tiny.en",
        "--audio",
        &jfk.display().to_string(),
        "--clients",
        "100",
        "--json",
    ]);
    let rows: Vec<Value> = serde_json::from_str(&report).expect("JSON report");
    let strategies: Vec<&str> = rows.iter().filter_map(|r| r["strategy"].as_str()).collect();
    assert_eq!(
        strategies,
        ["decode-maximal", "prefill-priority", "balanced"]
    );
    for row in &rows {
        assert_eq!(row["failures"], Value::Array(Vec::new()), "{row}");
        assert_eq!(row["answered"], 100, "{row}");
        assert_eq!(row["correct"], 100, "{row}");
    }
}
