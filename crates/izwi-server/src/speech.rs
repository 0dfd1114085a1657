//! `POST /v1/audio/speech`: `input` said by `voice`, a voice of the library (its name or
//! id), as a speak job in the history. `model` is one of OpenAI's names (the voice brings
//! its own model) or the voice's own model id. `response_format` is `wav` (the default;
//! Izwi writes no MP3) or `pcm` (16-bit little-endian mono at 24 kHz, as OpenAI's).

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use izwi_runtime::{SpeakRequest, VoiceInfo, MAX_SPEAK_CHARS};
use serde::Deserialize;

use crate::error::ApiError;
use crate::job::RequestJob;
use crate::models::TTS_MODELS;
use crate::AppState;

/// OpenAI's `pcm` is 24 kHz.
const PCM_RATE: u32 = 24_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpeechBody {
    model: String,
    input: String,
    voice: String,
    #[serde(default)]
    speed: Option<f32>,
    #[serde(default)]
    response_format: Option<String>,
    /// Style prompts (`gpt-4o-mini-tts`): Piper voices have none.
    #[serde(default)]
    instructions: Option<String>,
}

pub(crate) async fn speak(
    State(state): State<AppState>,
    body: Result<Json<SpeechBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|e| ApiError::invalid(e.body_text()))?;
    let pcm = match body.response_format.as_deref().unwrap_or("wav") {
        "wav" => false,
        "pcm" => true,
        other => {
            return Err(ApiError::param(
                "response_format",
                format!("{other:?} is not offered: wav or pcm"),
            ))
        }
    };
    if body
        .instructions
        .as_deref()
        .is_some_and(|i| !i.trim().is_empty())
    {
        return Err(ApiError::param(
            "instructions",
            "this voice takes no instructions: choose a voice that sounds as wanted",
        ));
    }
    if body.input.trim().is_empty() {
        return Err(ApiError::param(
            "input",
            "there is nothing to say: `input` is empty",
        ));
    }
    if body.input.chars().count() > MAX_SPEAK_CHARS {
        return Err(ApiError::param(
            "input",
            format!("`input` is over {MAX_SPEAK_CHARS} characters"),
        ));
    }
    let voice = library_voice(&state, &body.voice).await?;
    if !TTS_MODELS.contains(&body.model.as_str()) && body.model != voice.model_id {
        return Err(ApiError::param(
            "model",
            format!(
                "the voice {:?} speaks with {}, not {}: give that, or tts-1",
                voice.name, voice.model_id, body.model
            ),
        ));
    }
    let job = state
        .runtime
        .speak(SpeakRequest {
            voice: voice.id.to_string(),
            text: body.input,
            output: None,
            speed: body.speed,
        })
        .await?;
    let job = RequestJob::new(state.runtime.clone(), &job)
        .finished()
        .await?;
    if pcm {
        let clip = state.runtime.speech_clip(job.id, Some(PCM_RATE)).await?;
        let bytes: Vec<u8> = clip
            .samples
            .iter()
            .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0).round() as i16).to_le_bytes())
            .collect();
        return Ok(([(header::CONTENT_TYPE, "audio/pcm")], bytes).into_response());
    }
    let path = state.runtime.speech_file(job.id).await?;
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
    Ok(([(header::CONTENT_TYPE, "audio/wav")], bytes).into_response())
}

/// The library voice named or numbered `spec`: never a file path, which a client of the
/// server must not be able to make Izwi open.
async fn library_voice(state: &AppState, spec: &str) -> Result<VoiceInfo, ApiError> {
    let voices = state.runtime.list_voices().await?;
    let found = voices
        .iter()
        .find(|v| v.id.to_string() == spec)
        .or_else(|| voices.iter().find(|v| v.name.eq_ignore_ascii_case(spec)));
    match found {
        Some(v) if v.installed => Ok(v.clone()),
        Some(v) => Err(ApiError::param(
            "voice",
            format!(
                "the voice {:?} needs its model {}, which is not installed",
                v.name, v.model_id
            ),
        )),
        None => {
            let names: Vec<&str> = voices.iter().map(|v| v.name.as_str()).collect();
            Err(ApiError::param(
                "voice",
                format!(
                    "no voice {spec:?} in the library (voices: {})",
                    names.join(", ")
                ),
            ))
        }
    }
}
