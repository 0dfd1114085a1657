//! `POST /v1/audio/transcriptions` and `/v1/audio/translations`: a multipart upload
//! (`file`, `model`, `language`, `prompt`, `response_format`, `temperature`,
//! `timestamp_granularities[]`) transcribed as a job in the history. The upload is kept in the data folder's `uploads/`, as the
//! job's source, and is decoded before the job is queued, so a file that is not audio is
//! the request's 400, not a failed job. With `stream=true` (json or text) the text comes
//! as server-sent events while the windows are transcribed (see [`transcript_stream`]).

use std::path::{Path, PathBuf};

use axum::body::Bytes;
use axum::extract::multipart::{Field, MultipartError, MultipartRejection};
use axum::extract::{Multipart, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use izwi_runtime::{ExportFormat, ModelTask, Task, TranscribeRequest, Transcript};
use serde_json::json;

use crate::deadline::Deadline;
use crate::error::ApiError;
use crate::job::RequestJob;
use crate::models::{installed, WHISPER_1};
use crate::transcript_stream;
use crate::{AppState, MAX_UPLOAD_BYTES};

/// What the client asked for.
struct Form {
    file: Option<(String, Bytes)>,
    model: Option<String>,
    language: Option<String>,
    prompt: Option<String>,
    response_format: ResponseFormat,
    /// `timestamp_granularities[]` included `word`.
    words: bool,
    /// `timestamp_granularities[]` was given and included `segment`.
    segments: Option<bool>,
    /// `stream=true`: the text as server-sent events while it is transcribed.
    stream: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ResponseFormat {
    Json,
    Text,
    Srt,
    Vtt,
    VerboseJson,
}

impl ResponseFormat {
    fn parse(name: &str) -> Result<Self, ApiError> {
        Ok(match name {
            "json" => Self::Json,
            "text" => Self::Text,
            "srt" => Self::Srt,
            "vtt" => Self::Vtt,
            "verbose_json" => Self::VerboseJson,
            other => {
                return Err(ApiError::param(
                    "response_format",
                    format!("{other:?} is not a format: json, text, srt, vtt or verbose_json"),
                ))
            }
        })
    }
}

pub(crate) async fn transcribe(
    state: State<AppState>,
    deadline: Extension<Deadline>,
    form: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    run(state, deadline, form, Task::Transcribe).await
}

pub(crate) async fn translate(
    state: State<AppState>,
    deadline: Extension<Deadline>,
    form: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    run(state, deadline, form, Task::Translate).await
}

async fn run(
    State(state): State<AppState>,
    Extension(deadline): Extension<Deadline>,
    form: Result<Multipart, MultipartRejection>,
    task: Task,
) -> Result<Response, ApiError> {
    let form = read_form(form.map_err(|e| ApiError::invalid(e.body_text()))?).await?;
    let Some((file_name, bytes)) = form.file else {
        return Err(ApiError::param(
            "file",
            "the audio file is missing (field `file`)",
        ));
    };
    let model = form
        .model
        .ok_or_else(|| ApiError::param("model", "the model is missing (field `model`)"))?;
    let model_id = if model == WHISPER_1 {
        state.runtime.default_transcribe_model().await?
    } else {
        installed(&state, &model, ModelTask::Transcribe)?.id
    };
    let path = save_upload(&state.runtime.uploads_dir(), &file_name, bytes).await?;
    // Following the job's events from before it starts, none can be missed.
    let events = form.stream.then(|| state.events.subscribe());
    let request = TranscribeRequest {
        language: form.language,
        task,
        initial_prompt: form.prompt,
        word_timestamps: form.words,
        ..TranscribeRequest::new(path.clone(), model_id)
    };
    let job = match state.runtime.transcribe(request).await {
        Ok(job) => job,
        Err(e) => {
            // Refused before a job was made: the upload is no job's source.
            let _ = tokio::fs::remove_file(&path).await;
            return Err(e.into());
        }
    };
    let mut job = RequestJob::new(state.runtime.clone(), &job, deadline);
    if let Some(events) = events {
        return Ok(transcript_stream::respond(
            state.runtime.clone(),
            events,
            job,
        ));
    }
    let job = job.finished().await?;
    let record = state
        .runtime
        .transcript_for_job(job.id)
        .await?
        .ok_or_else(|| ApiError::internal(format!("job {} left no transcript", job.id)))?;
    let transcript = state.runtime.transcript_for_export(record.id).await?;
    let granularity = Granularity {
        segments: form.segments.unwrap_or(true),
        words: form.words,
    };
    Ok(respond(
        &transcript,
        form.response_format,
        task,
        granularity,
    ))
}

async fn read_form(mut multipart: Multipart) -> Result<Form, ApiError> {
    let mut form = Form {
        file: None,
        model: None,
        language: None,
        prompt: None,
        response_format: ResponseFormat::Json,
        words: false,
        segments: None,
        stream: false,
    };
    while let Some(field) = multipart.next_field().await.map_err(upload_error)? {
        let name = field.name().unwrap_or("").to_owned();
        match name.as_str() {
            "file" => {
                let file_name = field.file_name().unwrap_or("audio").to_owned();
                let bytes = field.bytes().await.map_err(upload_error)?;
                form.file = Some((file_name, bytes));
            }
            "model" => form.model = Some(text(field).await?),
            "language" => form.language = Some(text(field).await?).filter(|l| !l.is_empty()),
            "prompt" => form.prompt = Some(text(field).await?).filter(|p| !p.is_empty()),
            "response_format" => form.response_format = ResponseFormat::parse(&text(field).await?)?,
            "temperature" => {
                let value = text(field).await?;
                // Izwi decodes as Whisper's reference does: greedy, with temperature
                // fallback on a window that repeats itself. Another start is not offered.
                if value.parse::<f32>().ok() != Some(0.0) {
                    return Err(ApiError::param(
                        "temperature",
                        format!(
                            "temperature {value} is not supported: only 0 (greedy, with fallback)"
                        ),
                    ));
                }
            }
            "timestamp_granularities[]" | "timestamp_granularities" => {
                let value = text(field).await?;
                match value.as_str() {
                    "word" => form.words = true,
                    "segment" => form.segments = Some(true),
                    _ => {
                        return Err(ApiError::param(
                            "timestamp_granularities",
                            format!("{value:?} is not a granularity: word or segment"),
                        ))
                    }
                }
                form.segments.get_or_insert(false);
            }
            "stream" => {
                let value = text(field).await?;
                form.stream = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(ApiError::param(
                            "stream",
                            format!("stream is true or false, not {value:?}"),
                        ))
                    }
                };
            }
            other => {
                return Err(ApiError::invalid(format!("unknown field `{other}`")));
            }
        }
    }
    if (form.words || form.segments.is_some())
        && form.response_format != ResponseFormat::VerboseJson
    {
        return Err(ApiError::param(
            "timestamp_granularities",
            "timestamp granularities need response_format verbose_json",
        ));
    }
    // Subtitles and segments are made from the whole transcript: a stream of them
    // would be one event at the end.
    if form.stream
        && !matches!(
            form.response_format,
            ResponseFormat::Json | ResponseFormat::Text
        )
    {
        return Err(ApiError::param(
            "stream",
            "only the json and text formats are streamed: ask for one of them, or do not stream",
        ));
    }
    Ok(form)
}

pub(crate) async fn text(field: Field<'_>) -> Result<String, ApiError> {
    field.text().await.map_err(upload_error)
}

pub(crate) fn upload_error(e: MultipartError) -> ApiError {
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        upload_too_large()
    } else {
        ApiError::invalid(format!("the upload cannot be read: {}", e.body_text()))
    }
}

fn upload_too_large() -> ApiError {
    ApiError::too_large(format!(
        "the upload is over {} MB",
        MAX_UPLOAD_BYTES / (1024 * 1024)
    ))
}

/// Writes the upload into `dir` (the runtime's uploads folder) under a fresh name
/// (keeping its extension, which tells the decoder its format) and checks that it
/// decodes as audio. The bytes are let go once written: a queued request holds no
/// upload in memory.
pub(crate) async fn save_upload(
    dir: &Path,
    file_name: &str,
    bytes: Bytes,
) -> Result<PathBuf, ApiError> {
    if bytes.len() > MAX_UPLOAD_BYTES {
        return Err(upload_too_large());
    }
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| ApiError::internal(format!("{}: {e}", dir.display())))?;
    let extension: String = Path::new(file_name)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    let name = format!(
        "{:016x}.{}",
        rand::random::<u64>(),
        if extension.is_empty() {
            "bin"
        } else {
            &extension
        }
    );
    let path = dir.join(name);
    tokio::fs::write(&path, &bytes)
        .await
        .map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
    drop(bytes);
    let probe = path.clone();
    let decoded = tokio::task::spawn_blocking(move || izwi_runtime::probe_file(&probe))
        .await
        .map_err(|e| ApiError::internal(format!("decoding stopped: {e}")))?;
    if let Err(e) = decoded {
        let _ = tokio::fs::remove_file(&path).await;
        return Err(ApiError {
            code: Some("invalid_audio"),
            ..ApiError::param(
                "file",
                format!("{file_name:?} is not audio Izwi can read: {e}"),
            )
        });
    }
    Ok(path)
}

/// What verbose_json lists: segments unless only words were asked for, words when
/// they were.
#[derive(Debug, Clone, Copy)]
struct Granularity {
    segments: bool,
    words: bool,
}

fn respond(
    transcript: &Transcript,
    format: ResponseFormat,
    task: Task,
    granularity: Granularity,
) -> Response {
    let plain =
        |text: String, mime: &'static str| ([(header::CONTENT_TYPE, mime)], text).into_response();
    match format {
        ResponseFormat::Json => Json(json!({ "text": transcript.text() })).into_response(),
        ResponseFormat::Text => plain(transcript.text() + "\n", "text/plain; charset=utf-8"),
        ResponseFormat::Srt => plain(ExportFormat::Srt.render(transcript), "application/x-subrip"),
        ResponseFormat::Vtt => plain(ExportFormat::Vtt.render(transcript), "text/vtt"),
        ResponseFormat::VerboseJson => {
            let segments: Vec<_> = transcript
                .segments
                .iter()
                .enumerate()
                .map(|(id, s)| json!({ "id": id, "start": s.start, "end": s.end, "text": s.text }))
                .collect();
            let mut body = json!({
                "task": match task { Task::Translate => "translate", _ => "transcribe" },
                "language": transcript.language,
                "duration": transcript.duration,
                "text": transcript.text(),
            });
            if granularity.segments {
                body["segments"] = json!(segments);
            }
            if granularity.words {
                // As OpenAI lists them: the word without its leading space.
                let words: Vec<_> = transcript
                    .segments
                    .iter()
                    .flat_map(|s| &s.words)
                    .map(|w| json!({ "word": w.word.trim(), "start": w.start, "end": w.end }))
                    .collect();
                body["words"] = json!(words);
            }
            Json(body).into_response()
        }
    }
}
