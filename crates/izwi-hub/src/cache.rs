//! The Hugging Face cache as hf-hub and huggingface_hub lay it out:
//! `<cache>/models--org--name/{blobs/<hash>, snapshots/<commit>/<file> -> blob,
//! refs/<revision>}`. Files another tool fetched are found here too.

use std::path::{Path, PathBuf};

use hf_hub::{Cache, Repo, RepoType};

use crate::verify::Checksum;
use crate::{CatalogEntry, HubError};

/// hf-hub's suffix of a download in progress: the data, then a little-endian u64
/// saying how many bytes from the start are complete.
pub const PART_SUFFIX: &str = "sync.part";

#[derive(Debug, Clone)]
pub struct ModelCache {
    cache: Cache,
}

impl ModelCache {
    pub fn new(path: PathBuf) -> Self {
        Self {
            cache: Cache::new(path),
        }
    }

    pub fn path(&self) -> &Path {
        self.cache.path()
    }

    pub fn hf_cache(&self) -> Cache {
        self.cache.clone()
    }

    pub fn repo(entry: &CatalogEntry) -> Repo {
        Repo::with_revision(
            entry.repo.to_string(),
            RepoType::Model,
            entry.revision.to_string(),
        )
    }

    pub fn repo_dir(&self, entry: &CatalogEntry) -> PathBuf {
        self.path().join(Self::repo(entry).folder_name())
    }

    pub fn blob_path(&self, entry: &CatalogEntry, hash: &str) -> PathBuf {
        self.repo_dir(entry).join("blobs").join(hash)
    }

    /// The commit the pinned revision resolved to, when it was ever fetched. A revision
    /// that is itself a commit names its snapshot directly (huggingface_hub writes no
    /// ref for it).
    pub fn commit(&self, entry: &CatalogEntry) -> Option<String> {
        let dir = self.repo_dir(entry);
        if let Ok(commit) = std::fs::read_to_string(dir.join("refs").join(entry.revision)) {
            return Some(commit.trim().to_string());
        }
        let is_commit =
            entry.revision.len() == 40 && entry.revision.bytes().all(|b| b.is_ascii_hexdigit());
        (is_commit && dir.join("snapshots").join(entry.revision).is_dir())
            .then(|| entry.revision.to_string())
    }

    /// Where `file` of the pinned revision is, when it is there and readable.
    pub fn file(&self, entry: &CatalogEntry, file: &str) -> Option<PathBuf> {
        let commit = self.commit(entry)?;
        let path = self
            .repo_dir(entry)
            .join("snapshots")
            .join(commit)
            .join(file);
        // `exists` follows the link: a pointer to a missing blob is not a file.
        path.exists().then_some(path)
    }

    /// The model's folder in the snapshot when every file it needs is present.
    pub fn installed_dir(&self, entry: &CatalogEntry) -> Option<PathBuf> {
        let mut dir = None;
        for file in entry.files {
            let path = self.file(entry, file)?;
            dir = path.parent().map(Path::to_path_buf);
        }
        dir
    }

    /// Bytes of the model's files present on disk.
    pub fn size_on_disk(&self, entry: &CatalogEntry) -> u64 {
        entry
            .files
            .iter()
            .filter_map(|f| self.file(entry, f))
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Bytes of a blob already complete in its part file, which a download resumes from.
    pub fn partial_bytes(&self, entry: &CatalogEntry, hash: &str, size: u64) -> u64 {
        let part = self.blob_path(entry, &format!("{hash}.{PART_SUFFIX}"));
        let Ok(bytes) = std::fs::read(&part).map(|b| b.get(size as usize..).map(<[u8]>::to_vec))
        else {
            return 0;
        };
        match bytes.and_then(|tail| <[u8; 8]>::try_from(tail.as_slice()).ok()) {
            Some(tail) => u64::from_le_bytes(tail).min(size),
            None => 0,
        }
    }

    /// Deletes a blob's part and lock files, left by a cancelled download.
    pub fn discard_partial(&self, entry: &CatalogEntry, hash: &str) {
        remove_if_present(&self.blob_path(entry, &format!("{hash}.{PART_SUFFIX}")));
        self.remove_lock(entry, hash);
    }

    /// hf-hub leaves a blob's lock file behind once its download is over.
    pub fn remove_lock(&self, entry: &CatalogEntry, hash: &str) {
        remove_if_present(&self.blob_path(entry, &format!("{hash}.lock")));
    }

    /// Removes `file` of the pinned revision: its snapshot link and, unless another
    /// snapshot still links to it, its blob. Returns the bytes freed.
    pub fn remove_file(&self, entry: &CatalogEntry, file: &str) -> Result<u64, HubError> {
        let Some(commit) = self.commit(entry) else {
            return Ok(0);
        };
        let repo_dir = self.repo_dir(entry);
        let pointer = repo_dir.join("snapshots").join(&commit).join(file);
        let blob = std::fs::canonicalize(&pointer).ok();
        let mut freed = 0;
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
        let blobs = std::fs::canonicalize(repo_dir.join("blobs")).unwrap_or_default();
        // Only blobs of this repository are ours to delete.
        if let Some(blob) = blob.filter(|b| b.starts_with(&blobs)) {
            if !self.linked_anywhere(&repo_dir, &blob) {
                let len = std::fs::metadata(&blob).map(|m| m.len()).unwrap_or(0);
                std::fs::remove_file(&blob).map_err(|e| HubError::io(&blob, e))?;
                remove_if_present(&blob.with_extension("lock"));
                freed += len;
            }
        }
        if let Some(parent) = pointer.parent() {
            prune_empty_dirs(parent, &repo_dir.join("snapshots"));
        }
        Ok(freed)
    }

    /// Deletes a blob that failed verification, and the snapshot link to it.
    pub fn remove_corrupt(&self, pointer: &Path) {
        if let Ok(blob) = std::fs::canonicalize(pointer) {
            remove_if_present(&blob);
            remove_if_present(&blob.with_extension("lock"));
        }
        remove_if_present(pointer);
    }

    fn linked_anywhere(&self, repo_dir: &Path, blob: &Path) -> bool {
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

    /// Checks each present file against the checksum its blob is named by. Files whose
    /// blob names no checksum (moved, not linked) are skipped.
    pub fn verify(&self, entry: &CatalogEntry) -> Result<(), HubError> {
        for file in entry.files {
            let path = self
                .file(entry, file)
                .ok_or_else(|| HubError::NotInstalled(entry.id.to_string()))?;
            let blob = std::fs::canonicalize(&path).map_err(|e| HubError::io(&path, e))?;
            let name = blob
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if let Some(checksum) = Checksum::from_blob_name(name) {
                checksum.verify(&blob, file)?;
            }
        }
        Ok(())
    }
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
