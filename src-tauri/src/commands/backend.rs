//! Settings → Backend: where transcription, speech and chat run, this computer or a
//! remote OpenAI-compatible server (docs/remote.md). The key goes from the UI to the
//! store and never back: the UI learns only whether there is one.

use izwi_runtime::{RemoteInfo, RemoteSettings, REMOTE_BACKEND};
use tauri::State;

use crate::error::AppResult;
use crate::state::AppState;

impl AppState {
    /// The remote backend in use; None when everything runs on this computer.
    pub async fn remote_backend(&self) -> AppResult<Option<RemoteInfo>> {
        Ok(self.runtime.remote_setting().await?)
    }

    /// Sends transcription, speech and chat to the server at `url` from now on (None:
    /// back to this computer). An empty `api_key` keeps the key stored for that same
    /// server, if any.
    pub async fn set_remote_backend(
        &self,
        url: Option<String>,
        api_key: Option<String>,
    ) -> AppResult<Option<RemoteInfo>> {
        let Some(url) = url.filter(|u| !u.trim().is_empty()) else {
            self.runtime.set_remote_backend(None).await?;
            return self.remote_backend().await;
        };
        let given = api_key.filter(|k| !k.trim().is_empty());
        let api_key = match given {
            Some(key) => Some(key.trim().to_string()),
            None => {
                let stored: Option<RemoteSettings> = self.runtime.setting(REMOTE_BACKEND).await?;
                let same =
                    |stored: &str| stored.trim_end_matches('/') == url.trim().trim_end_matches('/');
                stored.filter(|s| same(&s.url)).and_then(|s| s.api_key)
            }
        };
        self.runtime
            .set_remote_backend(Some(RemoteSettings { url, api_key }))
            .await?;
        self.remote_backend().await
    }
}

#[tauri::command]
#[specta::specta]
pub async fn get_remote_backend(state: State<'_, AppState>) -> AppResult<Option<RemoteInfo>> {
    state.remote_backend().await
}

#[tauri::command]
#[specta::specta]
pub async fn set_remote_backend(
    state: State<'_, AppState>,
    url: Option<String>,
    api_key: Option<String>,
) -> AppResult<Option<RemoteInfo>> {
    state.set_remote_backend(url, api_key).await
}
