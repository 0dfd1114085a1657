//! Reading and writing the converter's files, and the temporary folder a conversion
//! is written into before it is renamed into place.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{CtranslateError, Result};

pub(super) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> CtranslateError + '_ {
    move |source| CtranslateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(super) fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CtranslateError::MissingFile(path.to_path_buf()),
        _ => io_err(path)(e),
    })
}

pub(super) fn read_file(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes).map_err(io_err(path))?;
    Ok(bytes)
}

pub(super) fn read_json(path: &Path) -> Result<Value> {
    serde_json::from_slice(&read_file(path)?).map_err(|e| CtranslateError::BadJson {
        file: path.to_path_buf(),
        problem: e.to_string(),
    })
}

pub(super) fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).map_err(io_err(path))?;
    sync_file(path)
}

pub(super) fn write_json(path: &Path, value: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| CtranslateError::BadJson {
        file: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    text.push('\n');
    write_bytes(path, text.as_bytes())
}

/// Flushes a file to disk before the final rename, so a crash right after the rename
/// cannot leave an empty or partial file under the destination.
pub(super) fn sync_file(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io_err(path))
}

/// A work folder that is removed on drop unless persisted.
pub(super) struct TempDir {
    pub(super) path: PathBuf,
    pub(super) keep: bool,
}

impl TempDir {
    pub(super) fn create(path: PathBuf) -> Result<Self> {
        // A folder of this name can only be left over by an earlier run that died.
        if path.exists() {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        fs::create_dir(&path).map_err(io_err(&path))?;
        Ok(Self { path, keep: false })
    }

    pub(super) fn persist(mut self, dst: &Path) -> Result<()> {
        if dst.exists() {
            return Err(CtranslateError::DestinationExists(dst.to_path_buf()));
        }
        fs::rename(&self.path, dst).map_err(io_err(dst))?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
