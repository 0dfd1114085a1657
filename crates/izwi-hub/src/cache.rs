//! The Hugging Face cache as hf-hub and huggingface_hub lay it out:
//! `<cache>/models--org--name/{blobs/<sha256>, snapshots/<commit>/<file> -> blob}`, so
//! models are shared with other tools. A file is downloaded into
//! `blobs/<sha256>.izwi.part` and becomes a blob, linked into the snapshot, only once
//! its size and sha256 match the catalog's pins.

use std::path::{Path, PathBuf};

use crate::verify::sha256_file;
use crate::{CatalogEntry, CatalogFile, HubError};

/// A download in progress: the bytes fetched so far, in order.
pub const PART_SUFFIX: &str = "izwi.part";

#[derive(Debug, Clone)]
pub struct ModelCache {
    root: PathBuf,
}

impl ModelCache {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn repo_dir(&self, entry: &CatalogEntry) -> PathBuf {
        self.root
            .join(format!("models--{}", entry.repo.replace('/', "--")))
    }

    fn blob_path(&self, entry: &CatalogEntry, sha256: &str) -> PathBuf {
        self.repo_dir(entry).join("blobs").join(sha256)
    }

    pub fn part_path(&self, entry: &CatalogEntry, sha256: &str) -> PathBuf {
        self.blob_path(entry, &format!("{sha256}.{PART_SUFFIX}"))
    }

    fn lock_path(&self, entry: &CatalogEntry, sha256: &str) -> PathBuf {
        self.blob_path(entry, &format!("{sha256}.lock"))
    }

    fn pointer(&self, entry: &CatalogEntry, file: &str) -> PathBuf {
        self.repo_dir(entry)
            .join("snapshots")
            .join(&entry.commit)
            .join(file)
    }

    /// Where `file` of the pinned commit is, when it is there and readable.
    pub fn file(&self, entry: &CatalogEntry, file: &str) -> Option<PathBuf> {
        let path = self.pointer(entry, file);
        // `exists` follows the link: a pointer to a missing blob is not a file.
        path.exists().then_some(path)
    }

    /// Where `file` of the pinned commit is, when it is there at its pinned size. The
    /// size is all that is read: a file another tool wrote into the shared cache, cut
    /// short or grown, is not taken as installed (its bytes are checked by `verify`).
    pub fn complete(&self, entry: &CatalogEntry, file: &CatalogFile) -> Option<PathBuf> {
        self.file(entry, &file.path)
            .filter(|path| file_len(path) == file.size)
    }

    /// The model's folder in the snapshot when every file it needs is complete.
    pub fn installed_dir(&self, entry: &CatalogEntry) -> Option<PathBuf> {
        let mut dir = None;
        for file in &entry.files {
            let path = self.complete(entry, file)?;
            dir = path.parent().map(Path::to_path_buf);
        }
        dir
    }

    /// Bytes of the model's files present on disk, downloads in progress included.
    pub fn size_on_disk(&self, entry: &CatalogEntry) -> u64 {
        entry
            .files
            .iter()
            .map(|f| match self.file(entry, &f.path) {
                Some(path) => file_len(&path),
                None => self.partial_bytes(entry, &f.sha256),
            })
            .sum()
    }

    /// Bytes of a file already fetched into its part file, which a download resumes
    /// from. Only the file's length is read, never its content.
    pub fn partial_bytes(&self, entry: &CatalogEntry, sha256: &str) -> u64 {
        file_len(&self.part_path(entry, sha256))
    }

    /// Holds the lock on one file's download until dropped, so two programs never
    /// write the same part file.
    pub fn lock(&self, entry: &CatalogEntry, file: &CatalogFile) -> Result<BlobLock, HubError> {
        let path = self.lock_path(entry, &file.sha256);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| HubError::io(dir, e))?;
        }
        let handle = std::fs::File::create(&path).map_err(|e| HubError::io(&path, e))?;
        match handle.try_lock() {
            Ok(()) => Ok(BlobLock {
                path,
                _handle: handle,
            }),
            Err(std::fs::TryLockError::WouldBlock) => Err(HubError::Download {
                file: file.path.clone(),
                reason: "another program is downloading it now; wait for it to finish".into(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(HubError::io(&path, e)),
        }
    }

    /// Deletes a file's part, left by a cancelled download.
    pub fn discard_partial(&self, entry: &CatalogEntry, sha256: &str) {
        remove_if_present(&self.part_path(entry, sha256));
    }

    /// Checks a complete part file against the pins and only then makes it the blob
    /// and links it into the snapshot. A part that does not match is deleted. A crash
    /// at any point leaves either a part (fetched again or resumed) or a checked blob.
    pub fn install(&self, entry: &CatalogEntry, file: &CatalogFile) -> Result<(), HubError> {
        let part = self.part_path(entry, &file.sha256);
        let len = file_len(&part);
        let actual = if len == file.size {
            sha256_file(&part)?
        } else {
            format!("{len} bytes")
        };
        if actual != file.sha256 {
            remove_if_present(&part);
            let (algorithm, expected) = if len == file.size {
                ("sha256", file.sha256.clone())
            } else {
                ("size", format!("{} bytes", file.size))
            };
            return Err(HubError::ChecksumMismatch {
                file: file.path.clone(),
                algorithm,
                expected,
                actual,
            });
        }
        let blob = self.blob_path(entry, &file.sha256);
        std::fs::rename(&part, &blob).map_err(|e| HubError::io(&blob, e))?;
        self.link(entry, file)
    }

    /// Links the snapshot's `file` to its blob (relative, as huggingface_hub does).
    fn link(&self, entry: &CatalogEntry, file: &CatalogFile) -> Result<(), HubError> {
        let pointer = self.pointer(entry, &file.path);
        if let Some(dir) = pointer.parent() {
            std::fs::create_dir_all(dir).map_err(|e| HubError::io(dir, e))?;
        }
        // A stale link (another file's bytes) is replaced.
        if std::fs::symlink_metadata(&pointer).is_ok() {
            std::fs::remove_file(&pointer).map_err(|e| HubError::io(&pointer, e))?;
        }
        let depth = file.path.matches('/').count() + 2;
        let target = format!("{}blobs/{}", "../".repeat(depth), file.sha256);
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, &pointer).map_err(|e| HubError::io(&pointer, e))?;
        #[cfg(not(unix))]
        {
            // Where symlinks need privileges, the blob moves into the snapshot.
            let blob = self.blob_path(entry, &file.sha256);
            std::fs::rename(&blob, &pointer).map_err(|e| HubError::io(&pointer, e))?;
        }
        Ok(())
    }

    /// Removes `file` of the pinned commit: its snapshot link, its part file and,
    /// unless another snapshot still links to it, its blob. Returns the bytes freed.
    /// Nothing outside this repository's folder in the cache is touched.
    pub fn remove_file(&self, entry: &CatalogEntry, file: &CatalogFile) -> Result<u64, HubError> {
        let repo_dir = self.repo_dir(entry);
        let Ok(repo_real) = std::fs::canonicalize(&repo_dir) else {
            return Ok(0);
        };
        let mut freed = self.partial_bytes(entry, &file.sha256);
        self.discard_partial(entry, &file.sha256);
        remove_if_present(&self.lock_path(entry, &file.sha256));
        let pointer = self.pointer(entry, &file.path);
        let inside = pointer
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .is_some_and(|p| p.starts_with(&repo_real));
        if !inside {
            return Ok(freed);
        }
        let blob = std::fs::canonicalize(&pointer).ok();
        match std::fs::symlink_metadata(&pointer) {
            Ok(meta) => {
                if !meta.file_type().is_symlink() {
                    // Where symlinks are unavailable the blob was moved here.
                    freed += meta.len();
                }
                std::fs::remove_file(&pointer).map_err(|e| HubError::io(&pointer, e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(HubError::io(&pointer, e)),
        }
        let blobs = repo_real.join("blobs");
        // Only blobs of this repository are ours to delete.
        if let Some(blob) = blob.filter(|b| b.starts_with(&blobs)) {
            if !linked_anywhere(&repo_dir, &blob) {
                freed += file_len(&blob);
                std::fs::remove_file(&blob).map_err(|e| HubError::io(&blob, e))?;
            }
        }
        if let Some(parent) = pointer.parent() {
            prune_empty_dirs(parent, &repo_dir.join("snapshots"));
        }
        Ok(freed)
    }

    /// Re-hashes each file against the catalog's size and sha256.
    pub fn verify(&self, entry: &CatalogEntry) -> Result<(), HubError> {
        for file in &entry.files {
            let path = self
                .file(entry, &file.path)
                .ok_or_else(|| HubError::NotInstalled(entry.id.clone()))?;
            crate::verify::check(&path, &file.path, file.size, &file.sha256)?;
        }
        Ok(())
    }
}

/// A download's lock; the lock file goes with it.
pub struct BlobLock {
    path: PathBuf,
    _handle: std::fs::File,
}

impl Drop for BlobLock {
    fn drop(&mut self) {
        remove_if_present(&self.path);
    }
}

fn linked_anywhere(repo_dir: &Path, blob: &Path) -> bool {
    let mut stack = vec![repo_dir.join("snapshots")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t)
                    if t.is_symlink()
                        && std::fs::canonicalize(&path).ok().as_deref() == Some(blob) =>
                {
                    return true;
                }
                _ => {}
            }
        }
    }
    false
}

pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn remove_if_present(path: &Path) {
    if let Err(e) = std::fs::remove_file(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "could not delete");
        }
    }
}

/// Removes `dir` and its parents up to (not including) `stop` while they are empty.
fn prune_empty_dirs(dir: &Path, stop: &Path) {
    let mut dir = dir.to_path_buf();
    while dir.starts_with(stop) && dir != stop {
        if std::fs::remove_dir(&dir).is_err() {
            break;
        }
        if !dir.pop() {
            break;
        }
    }
}
