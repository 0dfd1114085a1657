//! The `izwi` command run by tests on a data folder of its own, with a Hugging Face cache
//! beside it, so that the user's data, cache, catalog and remote backend stay out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub struct Izwi {
    /// The test crate's `env!("CARGO_BIN_EXE_izwi")`.
    bin: PathBuf,
    /// Holds `izwi/` (the data folder), `hf/` and whatever the test writes.
    folder: tempfile::TempDir,
}

impl Izwi {
    /// `bin` on a new, empty data folder.
    pub fn new(bin: &str) -> Self {
        Self {
            bin: PathBuf::from(bin),
            folder: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// The data folder (`--data-dir`).
    pub fn data_dir(&self) -> PathBuf {
        self.folder.path().join("izwi")
    }

    /// The test's own folder, which holds the data folder.
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }

    /// `name` in the test's own folder, beside the data folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.folder.path().join(name)
    }

    /// The command on this data folder, to which a test adds its arguments.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .arg("--data-dir")
            .arg(self.data_dir())
            .env("HF_HOME", self.path("hf"))
            .env_remove("IZWI_DATA_DIR")
            .env_remove("IZWI_BACKEND")
            .env_remove("IZWI_CATALOG");
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("izwi runs")
    }

    /// Its standard output; panics with its standard error when it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        succeeded(args, self.run(args))
    }

    /// Its standard error; panics when it succeeds.
    pub fn fails(&self, args: &[&str]) -> String {
        failed(args, self.run(args))
    }

    /// Its standard output read as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("izwi {args:?}: {e}: {out}"))
    }

    /// The jobs of the history, newest first.
    pub fn jobs(&self) -> Vec<Value> {
        match self.json(&["history", "--json"]) {
            Value::Array(jobs) => jobs,
            other => panic!("history is not a list: {other}"),
        }
    }

    /// `izwi models import FILE` with `args` after it.
    pub fn import(&self, file: &Path, args: &[&str]) -> String {
        let file = file.display().to_string();
        let mut all = vec!["models", "import", file.as_str()];
        all.extend(args);
        self.ok(&all)
    }
}

/// `out`'s standard output; panics with its standard error when it failed.
pub fn succeeded(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "izwi {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `out`'s standard error; panics when it succeeded.
pub fn failed(args: &[&str], out: Output) -> String {
    assert!(!out.status.success(), "izwi {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
