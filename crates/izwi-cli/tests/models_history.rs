//! `izwi models` and `izwi history` on a data folder of their own: download from a hub
//! served on 127.0.0.1 (with a catalog pinned to what it serves), import, verify,
//! transcribe with the default model, find the job and its transcript again, search,
//! remove without ever touching the user's own files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use izwi_hub::{CatalogEntry, Family};
use izwi_test_support::asset;
use izwi_test_support::hub::{self as support, bytes, HubServer, ServedFile};

struct Izwi {
    data: tempfile::TempDir,
    endpoint: Option<String>,
    /// A catalog file replacing the built-in one (`IZWI_CATALOG`).
    catalog: Option<PathBuf>,
    /// Where it runs (relative paths are read from here).
    cwd: Option<PathBuf>,
}

impl Izwi {
    fn new() -> Self {
        Self {
            data: tempfile::tempdir().unwrap(),
            endpoint: None,
            catalog: None,
            cwd: None,
        }
    }

    fn with_catalog(&mut self, entries: &[CatalogEntry]) {
        let path = self.data.path().join("catalog.json");
        std::fs::write(&path, serde_json::to_vec(entries).unwrap()).unwrap();
        self.catalog = Some(path);
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_izwi"));
        command
            .arg("--data-dir")
            .arg(self.data.path().join("izwi"))
            .env("HF_HOME", self.data.path().join("hf"))
            .env_remove("IZWI_CATALOG")
            .args(args);
        if let Some(endpoint) = &self.endpoint {
            command.env("HF_ENDPOINT", endpoint);
        }
        if let Some(catalog) = &self.catalog {
            command.env("IZWI_CATALOG", catalog);
        }
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command.output().expect("izwi runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "izwi {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8_lossy(&out.stderr)
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "izwi {args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

fn jfk() -> String {
    asset("speech/jfk.wav").display().to_string()
}

#[test]
fn import_transcribe_then_find_it_in_history() {
    let izwi = Izwi::new();
    let list = izwi.ok(&["models", "list"]);
    assert!(
        list.contains("whisper-tiny.en") && list.contains("piper-en_US-joe-medium"),
        "{list}"
    );
    assert!(izwi
        .fails(&["transcribe", &jfk()])
        .contains("no Whisper model is installed"));
    assert!(izwi.ok(&["history"]).contains("no jobs yet"));

    let model = asset("models/whisper-tiny.en").display().to_string();
    let imported = izwi.ok(&["models", "import", &model, "--name", "tiny"]);
    assert!(imported.contains("as local/tiny"), "{imported}");
    let out = izwi.run(&["models", "list", "--json"]);
    let models: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tiny = models
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "local/tiny")
        .expect("the import is listed");
    assert_eq!(tiny["status"], "installed");
    assert_eq!(tiny["family"], "whisper");

    // No --model: the one Whisper model installed is used.
    let text = izwi.ok(&["transcribe", &jfk(), "--beam-size", "1"]);
    assert!(
        text.to_lowercase().contains("ask not what your country"),
        "{text}"
    );

    let history = izwi.ok(&["history"]);
    let row = history
        .lines()
        .find(|l| l.contains("jfk.wav"))
        .expect("the job is listed");
    assert!(row.contains("done") && row.contains("transcribe"), "{row}");
    let job_id = row.split_whitespace().next().unwrap();

    let hits = izwi.ok(&["history", "--search", "countr"]);
    assert!(
        hits.contains("jfk.wav") && hits.contains("[country]"),
        "{hits}"
    );
    assert!(izwi
        .ok(&["history", "--search", "zebra"])
        .contains("no transcript mentions"));
    let srt = izwi.ok(&["history", "--show", job_id, "--format", "srt"]);
    assert!(srt.starts_with("1\n00:00:00,000 --> "), "{srt}");

    // A failed job is recorded with its reason.
    let bad = izwi.data.path().join("bad.wav");
    std::fs::write(&bad, b"RIFF but not really").unwrap();
    izwi.fails(&["transcribe", bad.to_str().unwrap()]);
    let history = izwi.ok(&["history"]);
    assert!(history.contains("failed"), "{history}");

    assert!(izwi
        .ok(&["models", "rm", "local/tiny"])
        .contains("removed local/tiny"));
    assert!(izwi
        .fails(&["models", "rm", "local/tiny"])
        .contains("unknown model"));
}

#[test]
fn download_verify_and_remove_from_a_hub() {
    let weights = ServedFile {
        bytes: bytes(25_000_000, 3),
        lfs: true,
    };
    let git = |s: &str| ServedFile {
        bytes: s.as_bytes().to_vec(),
        lfs: false,
    };
    let files = BTreeMap::from([
        (
            "config.json".to_string(),
            git("{\"model_type\": \"whisper\"}"),
        ),
        ("generation_config.json".to_string(), git("{}")),
        ("tokenizer.json".to_string(), git("{}")),
        ("model.safetensors".to_string(), weights),
    ]);
    let entry = support::entry(
        "whisper-base",
        Family::Whisper,
        "openai/whisper-base",
        &files,
        &[
            "config.json",
            "generation_config.json",
            "model.safetensors",
            "tokenizer.json",
        ],
    );
    let server = HubServer::start("openai/whisper-base", files);
    let mut izwi = Izwi::new();
    izwi.endpoint = Some(server.endpoint.clone());
    izwi.with_catalog(&[entry]);

    // A dropped connection fails the download with advice; the next one resumes.
    server.behaviour.lock().unwrap().cut = Some(("model.safetensors".into(), 15_000_000));
    let err = izwi.fails(&["models", "download", "whisper-base"]);
    assert!(err.contains("run the download again to resume it"), "{err}");
    let out = izwi.ok(&["models", "download", "whisper-base"]);
    assert!(out.contains("whisper-base installed in"), "{out}");
    let weights_from_zero = server
        .requests()
        .iter()
        .filter(|(path, range)| {
            path.ends_with("model.safetensors")
                && range
                    .as_deref()
                    .is_some_and(|r| r.starts_with("bytes=0-") && r != "bytes=0-0")
        })
        .count();
    assert_eq!(
        weights_from_zero, 1,
        "the second attempt resumes where the first stopped"
    );
    assert!(izwi
        .data
        .path()
        .join("hf/hub/models--openai--whisper-base/snapshots")
        .is_dir());
    let list = izwi.ok(&["models", "list"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("whisper-base "))
        .unwrap();
    assert!(row.contains("installed"), "{row}");
    assert!(izwi
        .ok(&["models", "verify", "whisper-base"])
        .contains("every file matches"));
    assert!(izwi
        .ok(&["models", "rm", "whisper-base"])
        .contains("removed whisper-base"));
    let list = izwi.ok(&["models", "list"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("whisper-base "))
        .unwrap();
    assert!(!row.contains("installed"), "{row}");

    assert!(izwi
        .fails(&["models", "download", "whisper-huge"])
        .contains("unknown model"));
}

/// A Piper voice's two files (not a working voice: nothing here loads it).
fn piper_files(dir: &Path, stem: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let onnx = dir.join(format!("{stem}.onnx"));
    std::fs::write(&onnx, b"onnx weights").unwrap();
    std::fs::write(
        dir.join(format!("{stem}.onnx.json")),
        br#"{"language": {"code": "en_US", "family": "en"}}"#,
    )
    .unwrap();
    onnx
}

#[test]
fn rm_never_deletes_a_users_files() {
    let mut izwi = Izwi::new();
    let home = tempfile::tempdir().unwrap();
    // The reported case: a folder `local/` holding a voice, in the working directory.
    let onnx = piper_files(&home.path().join("local"), "amy");
    let used_in_place = piper_files(&home.path().join("voices"), "joe");
    izwi.cwd = Some(home.path().to_path_buf());
    for id in [
        "local/amy.onnx",
        "local/../local/amy.onnx",
        "local/..",
        "local",
        "./local",
        "voices",
        used_in_place.to_str().unwrap(),
    ] {
        let err = izwi.fails(&["models", "rm", id]);
        assert!(
            err.contains("unknown model")
                || err.contains("not a model Izwi downloaded or imported"),
            "{id}: {err}"
        );
    }
    // An import of the same file: removing it leaves the file it came from.
    izwi.ok(&["models", "import", "local/amy.onnx", "--name", "amy"]);
    izwi.ok(&["models", "rm", "local/amy"]);
    for file in [&onnx, &used_in_place] {
        assert!(file.is_file(), "{} was deleted", file.display());
        assert!(file.with_extension("onnx.json").is_file());
    }
}

#[test]
fn an_import_verifies_and_knows_its_language() {
    let izwi = Izwi::new();
    let dir = tempfile::tempdir().unwrap();
    let onnx = piper_files(dir.path(), "en_US-test-medium");
    izwi.ok(&["models", "import", onnx.to_str().unwrap(), "--name", "test"]);
    let out = izwi.ok(&["models", "verify", "local/test"]);
    assert!(out.contains("every file matches"), "{out}");
    let list = izwi.ok(&["models", "list"]);
    let row = list.lines().find(|l| l.starts_with("local/test ")).unwrap();
    assert!(row.contains(" en_US "), "{row}");

    let imported = izwi
        .data
        .path()
        .join("izwi/models/test/en_US-test-medium.onnx");
    std::fs::write(&imported, b"changed").unwrap();
    let err = izwi.fails(&["models", "verify", "local/test"]);
    assert!(
        err.contains("en_US-test-medium.onnx does not match"),
        "{err}"
    );
}

#[test]
fn a_voice_on_a_model_that_is_not_installed_is_refused() {
    let izwi = Izwi::new();
    let err = izwi.fails(&["voices", "add", "piper-en_US-joe-medium", "Joe at home"]);
    assert!(
        err.contains("izwi models download piper-en_US-joe-medium"),
        "{err}"
    );
    let list = izwi.ok(&["voices", "list"]);
    assert!(!list.contains("Joe at home"), "{list}");
}
