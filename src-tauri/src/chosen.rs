//! The paths the user chose in this session: files and folders picked in the app's
//! dialogs (commands/choose.rs), dropped onto the window, or given at launch ("Open
//! with"), and the destinations picked in save dialogs. A command that takes a path
//! from the page accepts it only when it is one of these (or, to read, lies in the data
//! folder), so a page cannot make the app read or overwrite anything else.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::error::{AppError, AppResult};

#[derive(Debug, Default)]
pub struct ChosenPaths {
    /// Izwi's data folder, as canonical as it can be made: readable throughout.
    data_dir: PathBuf,
    /// Files, and folders with everything under them, the user chose to read.
    read: Mutex<HashSet<PathBuf>>,
    /// Files the user chose to write (save dialogs) and folders to fill (batches).
    write: Mutex<HashSet<PathBuf>>,
}

impl ChosenPaths {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            data_dir: normal(data_dir),
            ..Self::default()
        }
    }

    /// The user chose `path` (a file, or a folder with all it holds) to be read.
    pub fn allow_read(&self, path: &Path) {
        lock(&self.read).insert(normal(path));
    }

    /// The user chose `path` as a destination: a file to write, a folder to fill.
    pub fn allow_write(&self, path: &Path) {
        lock(&self.write).insert(normal(path));
    }

    /// `path` (from the page), resolved, if the user chose it, or a folder holding it,
    /// to be read, or it lies in the data folder. `what` names it in the refusal.
    pub fn readable(&self, path: &str, what: &str) -> AppResult<PathBuf> {
        let path = absolute(path, what)?;
        let real = normal(&path);
        let chosen = real.starts_with(&self.data_dir)
            || lock(&self.read).iter().any(|p| real.starts_with(p));
        if !chosen {
            return Err(not_chosen(&path, what));
        }
        // The resolved path: a link swapped after this check cannot lead elsewhere.
        Ok(real)
    }

    /// `path` (from the page) if the user chose it as a destination: exactly this file
    /// or folder, so nothing the user did not pick is written or replaced.
    pub fn writable(&self, path: &str, what: &str) -> AppResult<PathBuf> {
        let path = absolute(path, what)?;
        if !lock(&self.write).contains(&normal(&path)) {
            return Err(not_chosen(&path, what));
        }
        Ok(path)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A full path from the page; relative ones would land wherever the app started.
fn absolute(path: &str, what: &str) -> AppResult<PathBuf> {
    let path = PathBuf::from(path.trim());
    if path.as_os_str().is_empty() {
        return Err(AppError::invalid(format!("choose {what}")));
    }
    if !path.is_absolute() {
        return Err(AppError::invalid(format!(
            "{} is not a full path: choose {what} in Izwi's dialog",
            path.display()
        )));
    }
    Ok(path)
}

fn not_chosen(path: &Path, what: &str) -> AppError {
    AppError::invalid(format!(
        "{} was not chosen in Izwi: choose {what} in Izwi's dialog or drop it onto the window",
        path.display()
    ))
}

/// The path with symlinks resolved and `..` removed: the whole of it when it exists,
/// else its parent's plus its name (a file about to be saved). A path whose parent
/// does not exist either keeps its `..`-free form.
fn normal(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => match parent.canonicalize() {
            Ok(parent) => parent.join(name),
            Err(_) => lexical(path),
        },
        _ => lexical(path),
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_chosen_paths_pass() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data/audio")).unwrap();
        std::fs::create_dir_all(d.join("picked/sub")).unwrap();
        std::fs::create_dir_all(d.join("other")).unwrap();
        std::fs::write(d.join("data/audio/1.wav"), b"x").unwrap();
        std::fs::write(d.join("picked/sub/a.wav"), b"x").unwrap();
        std::fs::write(d.join("other/b.wav"), b"x").unwrap();
        std::os::unix::fs::symlink(d.join("other"), d.join("picked/link")).unwrap();
        let chosen = ChosenPaths::new(&d.join("data"));
        chosen.allow_read(&d.join("picked"));
        chosen.allow_write(&d.join("out.srt"));
        let s = |p: &str| d.join(p).display().to_string();

        assert!(chosen.readable(&s("data/audio/1.wav"), "a file").is_ok());
        assert!(chosen.readable(&s("picked/sub/a.wav"), "a file").is_ok());
        assert!(chosen.readable(&s("other/b.wav"), "a file").is_err());
        // Out of a chosen folder by `..` or a symlink.
        assert!(chosen
            .readable(&s("picked/../other/b.wav"), "a file")
            .is_err());
        assert!(chosen.readable(&s("picked/link/b.wav"), "a file").is_err());
        assert!(chosen.readable("picked/sub/a.wav", "a file").is_err());

        assert!(chosen.writable(&s("out.srt"), "a file").is_ok());
        assert!(chosen.writable(&s("other/../out.srt"), "a file").is_ok());
        assert!(chosen.writable(&s("out2.srt"), "a file").is_err());
        // Reading a folder is not writing in it, not even in the data folder.
        assert!(chosen.writable(&s("picked/sub/a.wav"), "a file").is_err());
        assert!(chosen.writable(&s("data/audio/1.wav"), "a file").is_err());
    }
}
