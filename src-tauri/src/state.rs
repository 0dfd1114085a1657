//! What the commands share: the runtime, the paths the user chose, the downloads and
//! waveforms in flight (to cancel them), the files the app was opened with, and a way
//! to let the webview read a file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use izwi_runtime::{CancellationToken, EventSink, Runtime, RuntimeConfig, RuntimeError};

use izwi_server::ServerEvents;

use crate::chosen::ChosenPaths;
use crate::commands::api_server::ApiServerSlot;
use crate::error::{AppError, AppResult};

/// Lets the webview load one file through the asset protocol (to play it).
pub type AllowAsset = Box<dyn Fn(&Path) + Send + Sync>;

pub struct AppState {
    pub runtime: Runtime,
    /// What the user picked, dropped or opened Izwi with in this session.
    pub chosen: ChosenPaths,
    downloads: Mutex<HashMap<String, CancellationToken>>,
    /// The waveform being computed for each window, to stop when a newer one is asked.
    peaks: Mutex<HashMap<String, CancellationToken>>,
    opened_files: Mutex<Option<Vec<PathBuf>>>,
    allow_asset: AllowAsset,
    /// The typed reply or voice chat under way: its chat (None: not stored yet) and
    /// the token that stops it.
    pub(crate) chat_activity: ChatActivity,
    /// The push-to-talk key of the voice chat under way, when it has one.
    pub(crate) talk_key: Arc<Mutex<Option<tokio::sync::watch::Sender<bool>>>>,
    /// The runtime's events as the API server's requests follow them.
    pub(crate) api_events: Arc<ServerEvents>,
    /// The API server, while it runs.
    pub(crate) api_server: ApiServerSlot,
    /// What stops the dictation under way, when there is one.
    pub(crate) dictation: Arc<Mutex<Option<CancellationToken>>>,
    /// What stops the voice sample being recorded, when there is one.
    pub(crate) voice_sample: Arc<Mutex<Option<CancellationToken>>>,
}

pub(crate) type ChatActivity = Arc<Mutex<Option<(Option<i64>, CancellationToken)>>>;

impl AppState {
    /// The files the app was opened with count as chosen. `api_events` must get the
    /// runtime's events (they are its event sink, or forwarded to it).
    pub fn new(
        runtime: Runtime,
        api_events: Arc<ServerEvents>,
        opened_files: Vec<PathBuf>,
        allow_asset: AllowAsset,
    ) -> Self {
        let chosen = ChosenPaths::new(runtime.data_dir());
        for file in &opened_files {
            chosen.allow_read(file);
        }
        Self {
            runtime,
            chosen,
            downloads: Mutex::default(),
            peaks: Mutex::default(),
            opened_files: Mutex::new(Some(opened_files)),
            allow_asset,
            chat_activity: ChatActivity::default(),
            talk_key: Arc::default(),
            api_events,
            api_server: ApiServerSlot::default(),
            dictation: Arc::default(),
            voice_sample: Arc::default(),
        }
    }

    /// Whether `id` names a model Izwi lists (the catalog's, the imports'): model ids
    /// from the page must, never a path, which would make the app load a model file the
    /// user did not choose (the CLI may give paths; they are its user's own).
    pub(crate) fn is_listed_model(&self, id: &str) -> bool {
        self.runtime.listed_model(id).is_ok()
    }

    /// Refuses a model id from the page that is a file or folder rather than a model
    /// [`AppState::is_listed_model`] knows; `what` says what the model was for. Other
    /// ids go on, for the runtime to find or say it has no such model.
    pub(crate) fn listed_model(&self, id: &str, what: &str) -> AppResult<()> {
        let path = Path::new(id.trim());
        let a_path = path.is_absolute() || path.exists();
        if !a_path || self.is_listed_model(id) {
            return Ok(());
        }
        Err(AppError::invalid(format!(
            "the {what} {id:?} is a path, not a model Izwi lists: import it first (Models → \
             Import)"
        )))
    }

    /// Opens the runtime on `data_dir` (the Hugging Face cache from `HF_HOME` as usual).
    pub async fn open(
        data_dir: PathBuf,
        events: Arc<dyn EventSink>,
        api_events: Arc<ServerEvents>,
        opened_files: Vec<PathBuf>,
        allow_asset: AllowAsset,
    ) -> Result<Self, RuntimeError> {
        let runtime = Runtime::open(RuntimeConfig::new(data_dir), events).await?;
        Ok(Self::new(runtime, api_events, opened_files, allow_asset))
    }

    pub(crate) fn allow_asset(&self, path: &Path) {
        (self.allow_asset)(path)
    }

    /// Registers a download of `id`; None when one is already running.
    pub(crate) fn start_download(&self, id: &str) -> Option<DownloadGuard<'_>> {
        let mut downloads = lock(&self.downloads);
        if downloads.contains_key(id) {
            return None;
        }
        let token = CancellationToken::new();
        downloads.insert(id.to_string(), token.clone());
        Some(DownloadGuard {
            state: self,
            id: id.to_string(),
            token,
        })
    }

    /// Cancels the download of `id`; false when none is running.
    pub(crate) fn cancel_download_of(&self, id: &str) -> bool {
        match lock(&self.downloads).get(id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// A token for a new waveform of `window`; the one before it is cancelled.
    pub(crate) fn start_peaks(&self, window: &str) -> CancellationToken {
        let token = CancellationToken::new();
        if let Some(old) = lock(&self.peaks).insert(window.to_string(), token.clone()) {
            old.cancel();
        }
        token
    }

    /// The files given at launch, the first time; then none.
    pub(crate) fn take_opened_files_once(&self) -> Vec<PathBuf> {
        lock(&self.opened_files).take().unwrap_or_default()
    }
}

/// A running download's token; dropping it forgets the download.
pub(crate) struct DownloadGuard<'a> {
    state: &'a AppState,
    id: String,
    pub token: CancellationToken,
}

impl Drop for DownloadGuard<'_> {
    fn drop(&mut self) {
        lock(&self.state.downloads).remove(&self.id);
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The paths among a launch's arguments (an OS "Open with Izwi" passes them), made
/// absolute against `cwd`: plain paths, and `file://` URLs (some desktop environments
/// pass those, percent-encoded). Flags and paths that do not exist are skipped.
pub fn files_from_args(args: impl IntoIterator<Item = String>, cwd: &Path) -> Vec<PathBuf> {
    args.into_iter()
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| {
            if a.starts_with("file:") {
                url::Url::parse(&a).ok()?.to_file_path().ok()
            } else {
                Some(cwd.join(a))
            }
        })
        .filter(|p| p.exists())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_existing_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.wav");
        std::fs::write(&file, b"x").unwrap();
        let spaced = dir.path().join("my talk #1 é.wav");
        std::fs::write(&spaced, b"x").unwrap();
        let url = url::Url::from_file_path(&spaced).unwrap().to_string();
        assert!(url.contains("my%20talk%20%231%20%C3%A9.wav"), "{url}");
        let got = files_from_args(
            [
                "--flag".to_string(),
                file.display().to_string(),
                format!("file://{}", file.display()),
                url,
                "a.wav".to_string(),
                dir.path().join("gone.wav").display().to_string(),
            ],
            dir.path(),
        );
        assert_eq!(got, [file.clone(), file.clone(), spaced, file]);
    }
}
