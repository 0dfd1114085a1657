//! `GET /v1/models`: the installed models, by the ids `izwi models list` shows, and the
//! OpenAI names that stand for the defaults (`whisper-1`, `tts-1`); `GET
//! /v1/models/{id}` one of them (ids may hold a slash: `local/whisper-tiny.en`).

use axum::extract::{Path, State};
use axum::Json;
use izwi_runtime::{ModelInfo, ModelStatus, ModelTask};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::AppState;

/// OpenAI's transcription model name: the default Whisper model.
pub(crate) const WHISPER_1: &str = "whisper-1";
/// OpenAI's speech model names: the voice asked for brings its own model.
pub(crate) const TTS_MODELS: &[&str] = &["tts-1", "tts-1-hd", "gpt-4o-mini-tts"];

pub(crate) async fn list(State(state): State<AppState>) -> Json<Value> {
    let installed = state
        .runtime
        .models()
        .into_iter()
        .filter(|m| m.status == ModelStatus::Installed);
    let mut data: Vec<Value> = installed.map(|m| entry(&m.id)).collect();
    data.push(entry(WHISPER_1));
    data.extend(TTS_MODELS.iter().map(|id| entry(id)));
    Json(json!({ "object": "list", "data": data }))
}

pub(crate) async fn retrieve(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let alias = id == WHISPER_1 || TTS_MODELS.contains(&id.as_str());
    let installed = || listed(&state, &id).is_some_and(|m| m.status == ModelStatus::Installed);
    if alias || installed() {
        Ok(Json(entry(&id)))
    } else {
        Err(ApiError::model_not_found(&id, "installed"))
    }
}

fn entry(id: &str) -> Value {
    json!({ "id": id, "object": "model", "created": 0, "owned_by": "izwi" })
}

/// The installed model `id`, which must be for `task`.
pub(crate) fn installed(
    state: &AppState,
    id: &str,
    task: ModelTask,
) -> Result<ModelInfo, ApiError> {
    let what = match task {
        ModelTask::Transcribe => "an installed speech-to-text model",
        ModelTask::Speak => "an installed voice model",
        ModelTask::Chat => "an installed chat model",
    };
    match listed(state, id) {
        Some(m) if m.status == ModelStatus::Installed && m.task == task => Ok(m),
        _ => Err(ApiError::model_not_found(id, what)),
    }
}

/// The model `id` among those the server lists (the catalog's and the imports, by id):
/// never a file or folder path, which would let a client make the server open any
/// model file on its disk.
pub(crate) fn listed(state: &AppState, id: &str) -> Option<ModelInfo> {
    state.runtime.listed_model(id).ok()
}
