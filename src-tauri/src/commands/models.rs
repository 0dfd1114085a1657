//! Models: the catalog and imports, downloads (cancellable), removal.

use izwi_runtime::ModelInfo;
use tauri::State;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

impl AppState {
    pub async fn list_models(&self) -> AppResult<Vec<ModelInfo>> {
        let runtime = self.runtime.clone();
        blocking(move || Ok(runtime.models())).await
    }

    /// Downloads a catalog model; progress arrives as `download` events. Resolves with
    /// the installed model, or a `cancelled` error after [`AppState::cancel_download`].
    pub async fn download_model(&self, id: String) -> AppResult<ModelInfo> {
        let guard = self
            .start_download(&id)
            .ok_or_else(|| AppError::invalid(format!("{id} is already downloading")))?;
        Ok(self
            .runtime
            .download_model(&id, guard.token.clone())
            .await?)
    }

    /// Stops a download of `id`; nothing happens when none is running (it may have
    /// just finished).
    pub async fn cancel_download(&self, id: String) -> AppResult<()> {
        self.cancel_download_of(&id);
        Ok(())
    }

    /// Unloads and deletes a model; returns the bytes freed.
    pub async fn remove_model(&self, id: String) -> AppResult<u64> {
        let runtime = self.runtime.clone();
        blocking(move || Ok(runtime.remove_model(&id)?)).await
    }

    /// Imports a model the user chose (a Whisper, Hugging Face or CTranslate2 folder, a
    /// Piper `.onnx`) as `local/NAME`.
    pub async fn import_model(&self, path: String, name: Option<String>) -> AppResult<ModelInfo> {
        let path = self.chosen.readable(&path, "the model's folder or file")?;
        let name = name.filter(|n| !n.trim().is_empty());
        let runtime = self.runtime.clone();
        blocking(move || Ok(runtime.import_model(&path, name.as_deref())?)).await
    }
}

/// Runs file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> AppResult<T> + Send + 'static,
) -> AppResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AppError::internal(format!("the task stopped: {e}")))?
}

#[tauri::command]
#[specta::specta]
pub async fn list_models(state: State<'_, AppState>) -> AppResult<Vec<ModelInfo>> {
    state.list_models().await
}

#[tauri::command]
#[specta::specta]
pub async fn download_model(state: State<'_, AppState>, id: String) -> AppResult<ModelInfo> {
    state.download_model(id).await
}

#[tauri::command]
#[specta::specta]
pub async fn cancel_download(state: State<'_, AppState>, id: String) -> AppResult<()> {
    state.cancel_download(id).await
}

#[tauri::command]
#[specta::specta]
pub async fn remove_model(state: State<'_, AppState>, id: String) -> AppResult<u64> {
    state.remove_model(id).await
}

#[tauri::command]
#[specta::specta]
pub async fn import_model(
    state: State<'_, AppState>,
    path: String,
    name: Option<String>,
) -> AppResult<ModelInfo> {
    state.import_model(path, name).await
}
