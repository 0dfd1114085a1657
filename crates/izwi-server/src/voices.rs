//! `GET /v1/audio/voices` and `POST /v1/audio/voices`: the voice library, shaped as
//! OpenAI's custom voices. A voice made from an audio sample (`type=audio_sample`, the
//! default; a multipart form with `name`, the recording as `audio_sample`, and Izwi's
//! `model`, a Qwen3-TTS Base model, and `text`, what the recording says) is a clone; one
//! made from a prompt (`type=prompt`, `name`, `prompt` and `model`, a VoiceDesign model;
//! a form or JSON) is a designed voice. OpenAI's `consent` (the id of a consent
//! recording its service checks) is taken and not used: the voice stays on this machine.
//! Either voice then speaks through `/v1/audio/speech` by its id or name.

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::header;
use axum::Json;
use izwi_runtime::{CloneVoiceRequest, VoiceInfo, VoiceSource};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{self, ApiError};
use crate::transcriptions::{save_upload, text, upload_error};
use crate::AppState;

/// What a new voice is made from.
#[derive(Debug, Default)]
struct Form {
    kind: Option<String>,
    name: Option<String>,
    model: Option<String>,
    prompt: Option<String>,
    text: Option<String>,
    sample: Option<(String, Bytes)>,
}

/// A prompt voice asked for as JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    name: String,
    prompt: String,
    model: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

pub(crate) async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let voices = state.runtime.list_voices().await?;
    Ok(Json(json!({
        "object": "list",
        "data": voices.iter().map(voice_object).collect::<Vec<_>>(),
    })))
}

pub(crate) async fn create(
    State(state): State<AppState>,
    request: Request,
) -> Result<Json<Value>, ApiError> {
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let form = if multipart {
        let form = Multipart::from_request(request, &state)
            .await
            .map_err(|e| {
                ApiError::invalid(format!("the form cannot be read: {}", e.body_text()))
            })?;
        read_form(form).await?
    } else {
        let Json(body) = Json::<PromptBody>::from_request(request, &state)
            .await
            .map_err(error::bad_json)?;
        Form {
            kind: Some(body.kind.unwrap_or_else(|| "prompt".into())),
            name: Some(body.name),
            model: body.model,
            prompt: Some(body.prompt),
            ..Form::default()
        }
    };
    let name = form
        .name
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| ApiError::param("name", "the voice needs a name (field `name`)"))?;
    let model = form.model.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
        ApiError::param(
            "model",
            "say which Qwen3-TTS model makes the voice (field `model`: a Base model for a \
             recording, a VoiceDesign model for a prompt; `GET /v1/models` lists them)",
        )
    })?;
    if crate::models::listed(&state, &model).is_none() {
        return Err(ApiError::model_not_found(
            &model,
            "an installed Qwen3-TTS model",
        ));
    }
    let voice = match form.kind.as_deref().unwrap_or("audio_sample") {
        "audio_sample" => {
            if form.prompt.is_some() {
                return Err(ApiError::param(
                    "prompt",
                    "a voice made from an audio sample takes no prompt (type=prompt for one)",
                ));
            }
            let (file_name, bytes) = form.sample.ok_or_else(|| {
                ApiError::param(
                    "audio_sample",
                    "the recording to clone is missing (field `audio_sample`)",
                )
            })?;
            let path = save_upload(&state.runtime.uploads_dir(), &file_name, bytes).await?;
            let request = CloneVoiceRequest {
                name,
                model_id: model,
                audio: path.clone(),
                text: form.text.filter(|t| !t.trim().is_empty()),
            };
            // The clone keeps its own copy of the recording; the upload is let go.
            let cloned = state.runtime.clone_voice(request).await;
            let _ = tokio::fs::remove_file(&path).await;
            cloned?.voice
        }
        "prompt" => {
            if form.sample.is_some() {
                return Err(ApiError::param(
                    "audio_sample",
                    "a voice made from a prompt takes no recording (type=audio_sample for one)",
                ));
            }
            let prompt = form
                .prompt
                .filter(|p| !p.trim().is_empty())
                .ok_or_else(|| ApiError::param("prompt", "describe the voice (field `prompt`)"))?;
            state.runtime.design_voice(&name, &model, &prompt).await?
        }
        other => {
            return Err(ApiError::param(
                "type",
                format!("{other:?} is not a kind of voice: audio_sample or prompt"),
            ))
        }
    };
    Ok(Json(voice_object(&voice)))
}

async fn read_form(mut multipart: Multipart) -> Result<Form, ApiError> {
    let mut form = Form::default();
    while let Some(field) = multipart.next_field().await.map_err(upload_error)? {
        let name = field.name().unwrap_or("").to_owned();
        match name.as_str() {
            "audio_sample" => {
                let file_name = field.file_name().unwrap_or("audio").to_owned();
                let bytes = field.bytes().await.map_err(upload_error)?;
                form.sample = Some((file_name, bytes));
            }
            "type" => form.kind = Some(text(field).await?),
            "name" => form.name = Some(text(field).await?),
            "model" => form.model = Some(text(field).await?),
            "prompt" => form.prompt = Some(text(field).await?),
            "text" => form.text = Some(text(field).await?),
            // Checked by OpenAI's service; nothing here to check it against.
            "consent" => {
                text(field).await?;
            }
            other => {
                return Err(ApiError::invalid(format!("unknown field `{other}`")));
            }
        }
    }
    Ok(form)
}

/// A library voice as OpenAI's voice object, with Izwi's own fields beside it: the
/// model it speaks with, and `preset` for the voices a model ships with.
fn voice_object(voice: &VoiceInfo) -> Value {
    let kind = match voice.source {
        VoiceSource::Cloned => "audio_sample",
        VoiceSource::Designed => "prompt",
        VoiceSource::Preset => "preset",
    };
    let mut object = json!({
        "id": voice.id.to_string(),
        "object": "audio.voice",
        "name": voice.name,
        "type": kind,
        "model": voice.model_id,
        "installed": voice.installed,
    });
    if let Some(prompt) = &voice.settings.instructions {
        if voice.source == VoiceSource::Designed {
            object["prompt"] = json!(prompt);
        }
    }
    if let Some(transcript) = &voice.reference_text {
        object["text"] = json!(transcript);
    }
    object
}
