//! `izwi bench lfm2-audio` on the tiny LFM2-Audio fixture, liquid-audio absent: the
//! engine side's whole path runs (no timing is asserted).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../izwi-core/tests/fixtures/lfm2-audio-tiny")
}

fn izwi(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_izwi"))
        .env("IZWI_DATA_DIR", data)
        .env_remove("IZWI_BENCH_PYTHON")
        .args(args)
        .output()
        .expect("izwi runs")
}

/// The fixture's model, Mimi and a bench.json: the fixture's TTS prompt (its
/// `<|audio_start|>` row was set so that this prompt opens the audio at once;
/// reference.safetensors `tts_text`) and its narrow Mimi's shape.
fn bench_folder(dir: &Path) {
    for file in [
        "config.json",
        "model.safetensors",
        "tokenizer-e351c8d8-checkpoint125.safetensors",
    ] {
        std::fs::copy(fixture().join(file), dir.join(file)).expect("copy the fixture");
    }
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("reference.json")).expect("reference.json"),
    )
    .expect("valid reference.json");
    let text_ids = [
        1, 6, 241, 254, 181, 178, 187, 7, 166, 6, 242, 231, 208, 212, 235, 247, 244, 252, 133, 7,
        166, 6, 248, 205, 191,
    ];
    let bench = serde_json::json!({ "text_ids": text_ids, "mimi": reference["mimi"] });
    std::fs::write(dir.join("bench.json"), bench.to_string()).expect("write bench.json");
}

#[test]
fn the_bench_runs_on_the_engine_alone_without_liquid_audio() {
    let data = tempfile::tempdir().unwrap();
    let model = tempfile::tempdir().unwrap();
    bench_folder(model.path());
    let args = [
        "bench",
        "lfm2-audio",
        "--checkpoint",
        model.path().to_str().unwrap(),
        "--batch-sizes",
        "1,2",
        "--frames",
        "6",
    ];
    let out = izwi(data.path(), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "izwi {args:?}: {stderr}");
    assert!(stderr.contains("pip install liquid-audio"), "{stderr}");
    for batch in ["1", "2"] {
        let row: Vec<&str> = stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cells| cells.first() == Some(&batch))
            .unwrap_or_else(|| panic!("no row for batch {batch}: {stdout}"));
        let rate: f64 = row[1].parse().expect("frames per second");
        assert!(rate > 0.0, "{stdout}");
        assert_eq!(&row[2..], ["-", "-"], "no reference side was run: {stdout}");
    }
    let first = stdout
        .lines()
        .find_map(|l| l.strip_prefix("first audio"))
        .unwrap_or_else(|| panic!("no first-audio line: {stdout}"));
    assert!(first.contains("izwi"), "{stdout}");
}

#[test]
fn a_folder_without_a_bench_prompt_is_refused_by_name() {
    let data = tempfile::tempdir().unwrap();
    let model = fixture();
    let args = [
        "bench",
        "lfm2-audio",
        "--checkpoint",
        model.to_str().unwrap(),
    ];
    let out = izwi(data.path(), &args);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("holds no bench checkpoint") && stderr.contains("--python"),
        "{stderr}"
    );
}
