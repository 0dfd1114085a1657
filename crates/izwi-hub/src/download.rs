//! Fetching a catalog model into the Hugging Face cache.
//!
//! Each file is fetched at the catalog's commit in ranged requests of `chunk_size`
//! bytes, streamed into its part file (never held in memory), so an interrupted
//! download resumes where it stopped. A response that is not exactly the range asked
//! for (a server ignoring Range, or sending more than it announced) is stopped at
//! once. A complete part counts only after its size and sha256 match the catalog's
//! pins (see `ModelCache::install`). Each download runs on a thread and runtime of
//! its own, so cancelling drops everything in flight.

use std::io::Write;
use std::path::{Path, PathBuf};

use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use tokio_util::sync::CancellationToken;

use crate::cache::ModelCache;
use crate::progress::{ProgressFn, Tracker};
use crate::{CatalogEntry, CatalogFile, HubError};

/// Where and how to reach the hub.
#[derive(Debug, Clone)]
pub struct Remote {
    pub endpoint: String,
    pub token: Option<String>,
    /// Bytes per ranged request.
    pub chunk_size: usize,
}

impl Remote {
    /// The hub's host name, for messages (no full addresses: they say nothing to people).
    fn host(&self) -> String {
        reqwest::Url::parse(&self.endpoint)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| self.endpoint.clone())
    }
}

/// Downloads every file of `entry` not yet in the cache and returns the model's folder.
/// Dropping the returned future cancels like `cancel` does.
pub async fn download(
    cache: &ModelCache,
    remote: &Remote,
    entry: CatalogEntry,
    on_progress: ProgressFn,
    cancel: CancellationToken,
) -> Result<PathBuf, HubError> {
    let _cancel_on_drop = cancel.clone().drop_guard();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (cache, remote) = (cache.clone(), remote.clone());
    std::thread::Builder::new()
        .name(format!("izwi-download-{}", entry.id))
        .spawn(move || {
            let _ = tx.send(run(&cache, &remote, &entry, on_progress, &cancel));
        })
        .map_err(|e| HubError::io(std::env::temp_dir(), e))?;
    rx.await.unwrap_or(Err(HubError::Cancelled))
}

fn run(
    cache: &ModelCache,
    remote: &Remote,
    entry: &CatalogEntry,
    on_progress: ProgressFn,
    cancel: &CancellationToken,
) -> Result<PathBuf, HubError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HubError::io(cache.path(), e))?;
    let mut fetching = None;
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = fetch(cache, remote, entry, on_progress, &mut fetching) => result,
            _ = cancel.cancelled() => Err(HubError::Cancelled),
        }
    });
    drop(runtime);
    if let (Err(HubError::Cancelled), Some(sha256)) = (&outcome, &fetching) {
        cache.discard_partial(entry, sha256);
    }
    outcome
}

async fn fetch(
    cache: &ModelCache,
    remote: &Remote,
    entry: &CatalogEntry,
    on_progress: ProgressFn,
    fetching: &mut Option<String>,
) -> Result<PathBuf, HubError> {
    let tracker = Tracker::new(&entry.id, entry.size_bytes(), 0, on_progress);
    let mut to_fetch = Vec::new();
    let mut needed = 0;
    for file in &entry.files {
        // A file Izwi put in the snapshot was checked before it was linked there; one of
        // another size (another tool's, cut short) is fetched again and replaces it.
        if cache.complete(entry, file).is_some() {
            tracker.skip(file.size);
            continue;
        }
        let resumed = cache.partial_bytes(entry, &file.sha256);
        if resumed > file.size {
            cache.discard_partial(entry, &file.sha256);
        }
        let resumed = cache.partial_bytes(entry, &file.sha256);
        needed += file.size - resumed;
        to_fetch.push(file);
    }
    check_space(&cache.repo_dir(entry), needed)?;

    let client = reqwest::Client::builder()
        .user_agent(concat!("izwi/", env!("CARGO_PKG_VERSION")))
        // A stalled connection fails (and resumes next time) instead of hanging.
        .connect_timeout(std::time::Duration::from_secs(30))
        .read_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| network(remote, &e))?;
    for file in to_fetch {
        let _lock = cache.lock(entry, file)?;
        *fetching = Some(file.sha256.clone());
        tracker.start_file(&file.path);
        let part = cache.part_path(entry, &file.sha256);
        let resumed = cache.partial_bytes(entry, &file.sha256);
        tracker.skip(resumed);
        fetch_file(&client, remote, entry, file, &part, resumed, &tracker).await?;
        cache.install(entry, file)?;
        *fetching = None;
        tracing::info!(model = %entry.id, file = %file.path, bytes = file.size, "downloaded and verified");
    }
    tracker.finish();
    cache
        .installed_dir(entry)
        .ok_or_else(|| HubError::Download {
            file: entry.id.clone(),
            reason: "its files are not in the cache after downloading".into(),
        })
}

/// Appends bytes `from..file.size` to `part`, one ranged request per chunk.
async fn fetch_file(
    client: &reqwest::Client,
    remote: &Remote,
    entry: &CatalogEntry,
    file: &CatalogFile,
    part: &Path,
    from: u64,
    tracker: &Tracker,
) -> Result<(), HubError> {
    let url = format!(
        "{}/{}/resolve/{}/{}",
        remote.endpoint, entry.repo, entry.commit, file.path
    );
    if let Some(dir) = part.parent() {
        std::fs::create_dir_all(dir).map_err(|e| HubError::io(dir, e))?;
    }
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(part)
        .map_err(|e| HubError::io(part, e))?;
    let failed = |reason: String| HubError::Download {
        file: file.path.clone(),
        reason,
    };
    let mut start = from;
    while start < file.size {
        let end = (start + remote.chunk_size as u64).min(file.size) - 1;
        let expected = end - start + 1;
        let mut request = client
            .get(&url)
            .header(RANGE, format!("bytes={start}-{end}"));
        if let Some(token) = &remote.token {
            request = request.bearer_auth(token);
        }
        let mut response = request.send().await.map_err(|e| network(remote, &e))?;
        match response.status() {
            StatusCode::PARTIAL_CONTENT => {}
            StatusCode::NOT_FOUND => {
                return Err(HubError::MissingRemoteFile {
                    repo: entry.repo.clone(),
                    revision: entry.commit.clone(),
                    file: file.path.clone(),
                })
            }
            status if status.is_success() => {
                return Err(failed(format!(
                    "{} ignored the byte range asked for (it answered {status}), so the \
                     download was stopped",
                    remote.host()
                )))
            }
            status => {
                return Err(HubError::Http {
                    status: status.as_u16(),
                    file: file.path.clone(),
                })
            }
        }
        let announced_range = response
            .headers()
            .get(CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let announced_len = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let range_ok = announced_range
            .as_deref()
            .is_some_and(|r| r.starts_with(&format!("bytes {start}-{end}/")));
        if !range_ok || announced_len.is_some_and(|n| n != expected) {
            return Err(failed(format!(
                "{} sent other bytes than the range asked for, so the download was stopped",
                remote.host()
            )));
        }
        let mut received = 0u64;
        while let Some(bytes) = response.chunk().await.map_err(|e| failed(cause(&e)))? {
            received += bytes.len() as u64;
            if received > expected {
                return Err(failed(format!(
                    "{} sent more bytes than it announced, so the download was stopped",
                    remote.host()
                )));
            }
            out.write_all(&bytes).map_err(|e| HubError::io(part, e))?;
            tracker.fetched(bytes.len() as u64);
        }
        if received < expected {
            return Err(failed(
                "the connection closed before the whole file arrived".into(),
            ));
        }
        start = end + 1;
    }
    out.flush().map_err(|e| HubError::io(part, e))?;
    Ok(())
}

fn network(remote: &Remote, error: &reqwest::Error) -> HubError {
    HubError::Network {
        host: remote.host(),
        reason: cause(error),
    }
}

/// What went wrong, on one line, without the request's address (reqwest's own
/// message repeats it; its causes do not).
fn cause(error: &reqwest::Error) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        causes.push(e.to_string());
        source = e.source();
    }
    match causes.is_empty() {
        true if error.is_timeout() => "it timed out".into(),
        true => "the request failed".into(),
        false => causes.join(": "),
    }
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
