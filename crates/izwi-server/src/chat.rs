//! `POST /v1/chat/completions`: the installed GGUF chat models of voice chat, answering
//! a conversation whole or streamed as server-sent events (`stream: true`), each a chat
//! job in the history. A client that goes away mid-reply (or one whose time runs out)
//! cancels the job, which aborts the engine request (its KV blocks are freed at once).

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use izwi_runtime::{ChatMessage, ChatParams, ChatReply, ModelTask, RuntimeError};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::StreamExt;

use crate::deadline::Deadline;
use crate::error::{self, ApiError};
use crate::job::RequestJob;
use crate::models::installed;
use crate::AppState;

#[derive(Debug, Deserialize)]
pub(crate) struct ChatBody {
    model: String,
    messages: Vec<Message>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    max_tokens: Option<usize>,
    #[serde(default)]
    max_completion_tokens: Option<usize>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    n: Option<usize>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Content,
}

/// A message's content: text, or parts of which only text ones are understood.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Content {
    #[default]
    None,
    Text(String),
    Parts(Vec<Value>),
}

impl Content {
    fn text(&self) -> Result<String, ApiError> {
        match self {
            Content::None => Ok(String::new()),
            Content::Text(text) => Ok(text.clone()),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match (p["type"].as_str(), p["text"].as_str()) {
                    (Some("text"), Some(text)) => Ok(text),
                    (kind, _) => Err(ApiError::param(
                        "messages",
                        format!("message parts of type {kind:?} are not understood: text only"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|texts| texts.join("")),
        }
    }
}

pub(crate) async fn complete(
    State(state): State<AppState>,
    Extension(deadline): Extension<Deadline>,
    body: Result<Json<ChatBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(error::bad_json)?;
    if body.n.is_some_and(|n| n != 1) {
        return Err(ApiError::param("n", "one choice at a time (n = 1)"));
    }
    if body.stop.as_ref().is_some_and(|s| !s.is_null()) {
        return Err(ApiError::param(
            "stop",
            "stop sequences are not supported: the model's own end of turn ends the reply",
        ));
    }
    if body.tools.as_ref().is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::param("tools", "tools are not supported"));
    }
    let mut messages = Vec::with_capacity(body.messages.len());
    for m in &body.messages {
        let role = match m.role.as_str() {
            "developer" => "system",
            r @ ("system" | "user" | "assistant") => r,
            other => {
                return Err(ApiError::param(
                    "messages",
                    format!("a message's role is system, user or assistant, not {other:?}"),
                ))
            }
        };
        messages.push(ChatMessage::new(role, m.content.text()?));
    }
    if messages.last().is_none_or(|m| m.role == "assistant") {
        return Err(ApiError::param(
            "messages",
            "the conversation must end with the user's message",
        ));
    }
    let info = installed(&state, &body.model, ModelTask::Chat)?;
    let model = state.runtime.open_chat_model(&info.id).await?;
    let defaults = ChatParams::default();
    let params = ChatParams {
        max_tokens: body
            .max_completion_tokens
            .or(body.max_tokens)
            .unwrap_or(defaults.max_tokens),
        temperature: body.temperature.unwrap_or(defaults.temperature),
        seed: body.seed,
    };
    if !(0.0..=2.0).contains(&params.temperature) {
        return Err(ApiError::param("temperature", "temperature is 0 to 2"));
    }
    let id = format!("chatcmpl-{:016x}", rand::random::<u64>());
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if !body.stream {
        let chat = state
            .runtime
            .chat_job(model, messages, params, |_| {})
            .await?;
        let mut job = RequestJob::new(state.runtime.clone(), &chat.job, deadline);
        let reply = reply_of(&mut job, chat.reply).await?;
        return Ok(Json(json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": info.id,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": reply.text },
                "finish_reason": finish_reason(&reply),
            }],
        }))
        .into_response());
    }

    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    let chunk = {
        let (id, model_id) = (id.clone(), info.id.clone());
        move |delta: Value, finish: Option<&str>| {
            json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_id,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
            })
        }
    };
    let _ = tx.send(chunk(json!({ "role": "assistant", "content": "" }), None));
    let (sender, delta) = (tx.clone(), chunk.clone());
    // The whole reply is trimmed: so is the start of the streamed one.
    let mut started = false;
    let on_text = move |text: &str| {
        let text = if started { text } else { text.trim_start() };
        if !text.is_empty() {
            started = true;
            let _ = sender.send(delta(json!({ "content": text }), None));
        }
    };
    let chat = state
        .runtime
        .chat_job(model, messages, params, on_text)
        .await?;
    let mut job = RequestJob::new(state.runtime.clone(), &chat.job, deadline);
    tokio::spawn(async move {
        tokio::select! {
            reply = reply_of(&mut job, chat.reply) => match reply {
                Ok(reply) => {
                    let _ = tx.send(chunk(json!({}), Some(finish_reason(&reply))));
                }
                Err(error) => {
                    let _ = tx.send(json!({ "error": { "message": error.message, "type": error.kind } }));
                }
            },
            // The client went away (or its time ran out): dropping `job` cancels it,
            // which aborts the reply on the engine.
            () = tx.closed() => {}
        }
    });
    Ok(Sse::new(events(rx)).into_response())
}

/// The job's reply once it is done and recorded (the history says so before the client
/// hears it); its error when it failed or was cancelled.
async fn reply_of(
    job: &mut RequestJob,
    reply: oneshot::Receiver<Result<ChatReply, RuntimeError>>,
) -> Result<ChatReply, ApiError> {
    match reply.await {
        Ok(Ok(reply)) => {
            job.finished().await?;
            Ok(reply)
        }
        Ok(Err(e)) => {
            job.ended();
            Err(e.into())
        }
        // No reply: the job was cancelled, which its row says.
        Err(_) => Err(job
            .finished()
            .await
            .err()
            .unwrap_or_else(|| ApiError::internal("the reply was lost"))),
    }
}

fn events(rx: mpsc::UnboundedReceiver<Value>) -> impl Stream<Item = Result<Event, Infallible>> {
    UnboundedReceiverStream::new(rx)
        .map(|chunk| Ok(Event::default().data(chunk.to_string())))
        .chain(tokio_stream::once(Ok(Event::default().data("[DONE]"))))
}

fn finish_reason(reply: &ChatReply) -> &'static str {
    if reply.finished_turn {
        "stop"
    } else {
        "length"
    }
}
