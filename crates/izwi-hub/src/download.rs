//! Fetching a catalog model into the Hugging Face cache through hf-hub.
//!
//! hf-hub resumes from its part files and only links a file into the snapshot once it
//! is complete; we add what a desktop app needs around it: the hub's checksums
//! (sha256 from its LFS metadata) checked before a model counts as installed, a disk
//! space check, progress for the whole model, and cancellation. hf-hub spawns a task
//! per chunk that would run on after its caller is dropped, so each download runs on
//! a runtime of its own, and cancelling drops that runtime with every task in it.

use std::path::{Path, PathBuf};

use hf_hub::api::tokio::{ApiBuilder, ApiError};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::cache::ModelCache;
use crate::progress::{FileProgress, ProgressFn, Tracker};
use crate::verify::Checksum;
use crate::{CatalogEntry, HubError};

/// Where and how to reach the hub.
#[derive(Debug, Clone)]
pub struct Remote {
    pub endpoint: String,
    pub token: Option<String>,
    /// Bytes per ranged request; a resumed download restarts at a chunk boundary.
    pub chunk_size: usize,
}

#[derive(Deserialize)]
struct RepoInfo {
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

#[derive(Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

/// A file as the hub describes it.
struct RemoteFile {
    name: String,
    size: u64,
    checksum: Checksum,
}

impl RemoteFile {
    /// The name hf-hub gives its blob (the hub's etag: sha256 for LFS, else blob id).
    fn hash(&self) -> &str {
        match &self.checksum {
            Checksum::Sha256(h) | Checksum::GitBlob(h) => h,
        }
    }
}

/// Downloads every file of `entry` not yet in the cache and returns the model's folder.
/// Dropping the returned future cancels like `cancel` does.
pub async fn download(
    cache: &ModelCache,
    remote: &Remote,
    entry: &'static CatalogEntry,
    on_progress: ProgressFn,
    cancel: CancellationToken,
) -> Result<PathBuf, HubError> {
    let _cancel_on_drop = cancel.clone().drop_guard();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (cache, remote) = (cache.clone(), remote.clone());
    std::thread::Builder::new()
        .name(format!("izwi-download-{}", entry.id))
        .spawn(move || {
            let _ = tx.send(run(&cache, &remote, entry, on_progress, &cancel));
        })
        .map_err(|e| HubError::io(std::env::temp_dir(), e))?;
    rx.await.unwrap_or(Err(HubError::Cancelled))
}

fn run(
    cache: &ModelCache,
    remote: &Remote,
    entry: &'static CatalogEntry,
    on_progress: ProgressFn,
    cancel: &CancellationToken,
) -> Result<PathBuf, HubError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HubError::io(cache.path(), e))?;
    let mut fetching = Vec::new();
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = fetch(cache, remote, entry, on_progress, &mut fetching) => result,
            _ = cancel.cancelled() => Err(HubError::Cancelled),
        }
    });
    // Drops hf-hub's chunk tasks wherever they are: nothing writes after this.
    drop(runtime);
    if matches!(outcome, Err(HubError::Cancelled)) {
        for hash in &fetching {
            cache.discard_partial(entry, hash);
        }
    }
    outcome
}

async fn fetch(
    cache: &ModelCache,
    remote: &Remote,
    entry: &'static CatalogEntry,
    on_progress: ProgressFn,
    fetching: &mut Vec<String>,
) -> Result<PathBuf, HubError> {
    let mut builder = ApiBuilder::from_cache(cache.hf_cache())
        .with_endpoint(remote.endpoint.clone())
        .with_progress(false)
        .with_chunk_size(Some(remote.chunk_size));
    if remote.token.is_some() {
        builder = builder.with_token(remote.token.clone());
    }
    let api = builder
        .build()
        .map_err(|e| api_error(e, "", &remote.endpoint))?;
    let repo = api.repo(ModelCache::repo(entry));

    let files = remote_files(&repo, entry).await?;
    let total = files.iter().map(|f| f.size).sum();
    let tracker = Tracker::new(entry.id, total, 0, on_progress);

    let mut to_fetch = Vec::new();
    let mut needed = 0;
    for file in files {
        match cache.file(entry, &file.name) {
            Some(path) if file_len(&path) == Some(file.size) => tracker.skip(file.size),
            present => {
                if let Some(stale) = present {
                    // A link to other bytes would stop hf-hub from linking the new ones.
                    std::fs::remove_file(&stale).map_err(|e| HubError::io(&stale, e))?;
                }
                let resumed = cache.partial_bytes(entry, file.hash(), file.size);
                needed += file.size - resumed;
                to_fetch.push((file, resumed));
            }
        }
    }
    check_space(&cache.repo_dir(entry), needed)?;

    for (file, resumed) in to_fetch {
        fetching.push(file.hash().to_string());
        tracker.start_file(&file.name);
        tracker.skip(resumed);
        let progress = FileProgress::new(tracker.clone(), resumed);
        let pointer = repo
            .download_with_progress(&file.name, progress)
            .await
            .map_err(|e| api_error(e, &file.name, &repo.url(&file.name)))?;
        if let Err(e) = file.checksum.verify(&pointer, &file.name) {
            cache.remove_corrupt(&pointer);
            return Err(e);
        }
        cache.remove_lock(entry, file.hash());
        tracing::info!(model = entry.id, file = %file.name, bytes = file.size, "downloaded and verified");
    }
    tracker.finish();
    cache
        .installed_dir(entry)
        .ok_or_else(|| HubError::Download {
            file: entry.files.join(", "),
            reason: "the files are not in the cache after downloading".into(),
        })
}

/// Sizes and checksums of the entry's files, from the hub's listing of the pinned revision.
async fn remote_files(
    repo: &hf_hub::api::tokio::ApiRepo,
    entry: &CatalogEntry,
) -> Result<Vec<RemoteFile>, HubError> {
    let request = repo.info_request().query(&[("blobs", "true")]);
    let response = request
        .send()
        .await
        .map_err(|e| api_error(e.into(), "", entry.repo))?;
    let url = response.url().to_string();
    if !response.status().is_success() {
        return Err(HubError::Http {
            status: response.status().as_u16(),
            url,
        });
    }
    let info: RepoInfo = response.json().await.map_err(|e| HubError::Network {
        url: url.clone(),
        reason: format!("unreadable repository listing: {e}"),
    })?;
    entry
        .files
        .iter()
        .map(|name| {
            let sibling = info
                .siblings
                .iter()
                .find(|s| s.rfilename == *name)
                .ok_or_else(|| HubError::MissingRemoteFile {
                    repo: entry.repo.into(),
                    revision: entry.revision.into(),
                    file: name.to_string(),
                })?;
            let (size, checksum) = match (&sibling.lfs, &sibling.blob_id, sibling.size) {
                (Some(lfs), _, _) => (lfs.size, Checksum::Sha256(lfs.sha256.to_ascii_lowercase())),
                (None, Some(id), Some(size)) => (size, Checksum::GitBlob(id.to_ascii_lowercase())),
                _ => {
                    return Err(HubError::Network {
                        url: url.clone(),
                        reason: format!("the listing gives no size or checksum for {name}"),
                    })
                }
            };
            Ok(RemoteFile {
                name: name.to_string(),
                size,
                checksum,
            })
        })
        .collect()
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Fails before the first byte when the cache's disk cannot hold what is left to fetch.
fn check_space(dir: &Path, needed: u64) -> Result<(), HubError> {
    let mut existing = dir;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => return Ok(()),
        }
    }
    let available = fs4::available_space(existing).map_err(|e| HubError::io(existing, e))?;
    if needed > available {
        return Err(HubError::NotEnoughSpace {
            path: existing.to_path_buf(),
            needed,
            available,
        });
    }
    Ok(())
}

fn api_error(error: ApiError, file: &str, url: &str) -> HubError {
    match error {
        ApiError::RequestError(e) => {
            let url = e
                .url()
                .map(|u| u.to_string())
                .unwrap_or_else(|| url.to_string());
            if let Some(status) = e.status() {
                HubError::Http {
                    status: status.as_u16(),
                    url,
                }
            } else if e.is_connect() || e.is_timeout() {
                HubError::Network {
                    url,
                    reason: error_chain(&e),
                }
            } else {
                HubError::Download {
                    file: file.to_string(),
                    reason: error_chain(&e),
                }
            }
        }
        ApiError::TooManyRetries(inner) => api_error(*inner, file, url),
        ApiError::IoError(e) => HubError::io(file, e),
        ApiError::LockAcquisition(lock) => HubError::Download {
            file: file.to_string(),
            reason: format!(
                "another program is downloading it (lock {})",
                lock.display()
            ),
        },
        other => HubError::Download {
            file: file.to_string(),
            reason: other.to_string(),
        },
    }
}

/// An error and its causes on one line: reqwest's own message is often only "error
/// decoding response body".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
