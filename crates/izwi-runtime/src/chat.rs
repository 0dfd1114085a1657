//! Chat with a chat model on the engine (a GGUF file of the Llama family, or an LFM2
//! Hugging Face folder): the conversation rendered by the model's own template, the
//! reply streamed back as text, every message kept in the store's chats tables as it
//! is said.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_core::engine::{
    BatchStrategy, Engine, EngineCoreConfig, EngineCoreRequest, EngineStatus, GenerationParams,
    MetricsSnapshot, ModelExecutor,
};
use izwi_core::models::lfm2::Lfm2;
use izwi_core::models::lfm2_audio::Message;
use izwi_core::models::llama::{GgufWeights, Llama};
use izwi_core::models::shared::gguf::GgufFile;
use izwi_core::text::{ChatFormat, ChatMessage};
use izwi_core::Device;
use izwi_hub::{Family, ModelTask};
use izwi_store::{
    ChatRecord, Job, JobKind, JobMetrics, MessageMetrics, MessageRecord, MessageRole, NewJob,
    NewMessage,
};
use serde::Serialize;

use crate::error::RuntimeError;
use crate::remote::Remote;
use crate::{Event, Runtime};

/// What a conversation asks of its model when the user has not said otherwise: short
/// answers suit both a chat window and a spoken reply.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful voice assistant. Answer in one short sentence.";

/// A chat model: loaded on its own engine, or a model of the remote backend.
#[derive(Clone)]
pub struct ChatModel {
    name: String,
    backend: ChatBackend,
}

#[derive(Clone)]
enum ChatBackend {
    Engine(Arc<EngineModel>),
    Remote(Arc<Remote>),
}

struct EngineModel {
    engine: Engine,
    format: ChatFormat,
    /// Tokens a sequence may hold: prompt and reply together.
    context: usize,
}

/// How a reply is sampled.
#[derive(Debug, Clone)]
pub struct ChatParams {
    pub max_tokens: usize,
    /// 0 is greedy: the same question gets the same answer.
    pub temperature: f32,
    pub seed: Option<u64>,
}

impl Default for ChatParams {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.0,
            seed: None,
        }
    }
}

/// A finished reply and how long it took.
#[derive(Debug, Clone)]
pub struct ChatReply {
    pub text: String,
    pub tokens: usize,
    /// From the request to the first token of the reply.
    pub first_token_ms: f64,
    pub total_ms: f64,
    /// Whether the model ended its turn (false: it ran into `max_tokens`).
    pub finished_turn: bool,
}

impl ChatModel {
    /// Loads a GGUF chat model file or an LFM2 model folder (blocking: reads the
    /// weights).
    fn load(
        path: &Path,
        name: String,
        device: &Device,
        batch_strategy: BatchStrategy,
    ) -> Result<Self, RuntimeError> {
        let load = |reason: String| RuntimeError::Load {
            id: path.display().to_string(),
            reason,
        };
        let (model, format): (Box<dyn ModelExecutor>, ChatFormat) = if path.is_dir() {
            load_folder(path, device).map_err(load)?
        } else if path.is_file() {
            let file = GgufFile::open(path).map_err(|e| load(e.to_string()))?;
            let format = ChatFormat::from_gguf(&file).map_err(|e| load(e.to_string()))?;
            let model = Llama::from_gguf(&file, GgufWeights::Quantized, device)
                .map_err(|e| load(e.to_string()))?;
            (Box::new(model), format)
        } else {
            return Err(load(
                "no such file (give the path of a .gguf chat model or an LFM2 model folder)".into(),
            ));
        };
        let config = EngineCoreConfig {
            batch_strategy,
            ..EngineCoreConfig::default()
        };
        let context = config.max_seq_len.min(model.spec().max_position_embeddings);
        let engine = Engine::new(config, model).map_err(|e| load(e.to_string()))?;
        Ok(Self {
            name,
            backend: ChatBackend::Engine(Arc::new(EngineModel {
                engine,
                format,
                context,
            })),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn engine(&self) -> Result<&EngineModel, RuntimeError> {
        match &self.backend {
            ChatBackend::Engine(model) => Ok(model),
            ChatBackend::Remote(remote) => Err(RuntimeError::InvalidRequest(format!(
                "{} runs on the remote server {}, not on this machine's engine",
                self.name,
                remote.url()
            ))),
        }
    }

    /// Requests in the engine and the KV blocks they hold.
    pub async fn engine_status(&self) -> Result<EngineStatus, RuntimeError> {
        self.engine()?.engine.status().await.map_err(invalid)
    }

    /// What the engine has done so far: requests, aborts, tokens, latencies (nothing
    /// for a remote model).
    pub fn engine_metrics(&self) -> MetricsSnapshot {
        self.engine()
            .map(|m| m.engine.metrics())
            .unwrap_or_default()
    }

    /// The model's reply to `messages`, calling `on_text` with each piece of text as
    /// it is generated. Dropping the future aborts the request on the engine (or
    /// closes its connection to the remote server).
    pub async fn reply(
        &self,
        messages: &[ChatMessage],
        params: &ChatParams,
        on_text: impl FnMut(&str),
    ) -> Result<ChatReply, RuntimeError> {
        match &self.backend {
            ChatBackend::Engine(model) => model.reply(messages, params, on_text).await,
            ChatBackend::Remote(remote) => {
                remote.reply(&self.name, messages, params, on_text).await
            }
        }
    }
}

impl EngineModel {
    async fn reply(
        &self,
        messages: &[ChatMessage],
        params: &ChatParams,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, RuntimeError> {
        let prompt = self.fitting_prompt(messages, params.max_tokens)?;
        let request = EngineCoreRequest::new(prompt).with_params(GenerationParams {
            max_tokens: params.max_tokens,
            temperature: params.temperature,
            seed: params.seed,
            stop_token_ids: self.format.stop_tokens().to_vec(),
            ..GenerationParams::default()
        });
        let started = Instant::now();
        let (_, mut outputs) = self
            .engine
            .generate_streaming(request)
            .await
            .map_err(invalid)?;
        let mut decoder = self.format.reply_decoder();
        let (mut text, mut tokens, mut first_token_ms) = (String::new(), 0, None);
        while let Some(chunk) = outputs.recv().await {
            let new: Vec<u32> = chunk
                .tokens
                .iter()
                .copied()
                .filter(|t| !self.format.stop_tokens().contains(t))
                .collect();
            if !chunk.tokens.is_empty() && first_token_ms.is_none() {
                first_token_ms = Some(started.elapsed().as_secs_f64() * 1e3);
            }
            tokens += chunk.tokens.len();
            let delta = decoder.push(&new).map_err(invalid)?;
            if !delta.is_empty() {
                on_text(&delta);
                text.push_str(&delta);
            }
            if let Some(output) = chunk.finished {
                use izwi_core::engine::FinishReason;
                return match output.finish_reason {
                    FinishReason::Failed(message) => Err(RuntimeError::InvalidRequest(message)),
                    reason => Ok(ChatReply {
                        text: text.trim().to_string(),
                        tokens,
                        first_token_ms: first_token_ms.unwrap_or_default(),
                        total_ms: started.elapsed().as_secs_f64() * 1e3,
                        finished_turn: !matches!(reason, FinishReason::Length),
                    }),
                };
            }
        }
        Err(RuntimeError::InvalidRequest("the engine stopped".into()))
    }
}

impl EngineModel {
    /// The prompt of `messages`, leaving out the oldest turns (never the system prompt
    /// nor the last message) until it leaves room for a reply of up to `max_tokens`, or
    /// at least a quarter of the context: a long conversation goes on, forgetting its
    /// beginning, instead of failing. What was said stays in the store.
    fn fitting_prompt(
        &self,
        messages: &[ChatMessage],
        max_tokens: usize,
    ) -> Result<Vec<u32>, RuntimeError> {
        let room = max_tokens.min(self.context / 4);
        let (system, rest) = match messages.split_first() {
            Some((first, rest)) if first.role == "system" => (Some(first), rest),
            _ => (None, messages),
        };
        let prompt_from = |from: usize| {
            let kept: Vec<ChatMessage> = system.into_iter().chain(&rest[from..]).cloned().collect();
            self.format.prompt_tokens(&kept).map_err(invalid)
        };
        let whole = prompt_from(0)?;
        if whole.len() + room <= self.context || rest.len() < 2 {
            return Ok(whole);
        }
        // Where the kept part may begin: at the user's words (some templates insist on
        // it), or at the last message. Dropping more only shortens the prompt, so the
        // fewest to drop is found by bisection: a few renders, not one per message.
        let starts: Vec<usize> = (1..rest.len())
            .filter(|&i| rest[i].role == "user" || i + 1 == rest.len())
            .collect();
        let (mut low, mut high) = (0, starts.len() - 1);
        let mut best = prompt_from(starts[high])?;
        while low < high {
            let middle = (low + high) / 2;
            let prompt = prompt_from(starts[middle])?;
            if prompt.len() + room <= self.context {
                high = middle;
                best = prompt;
            } else {
                low = middle + 1;
            }
        }
        Ok(best)
    }
}

/// A chat reply running as a job: its row, and the reply once whole (or why there is
/// none: the error it failed with; nothing when it was cancelled).
pub struct ChatJob {
    pub job: Job,
    pub reply: tokio::sync::oneshot::Receiver<Result<ChatReply, RuntimeError>>,
}

/// What a chat job's row keeps of its request: not the conversation.
#[derive(Serialize)]
struct ChatJobParams<'a> {
    messages: usize,
    max_tokens: usize,
    temperature: f32,
    seed: Option<u64>,
    remote: Option<&'a str>,
}

/// Characters of the user's last message a chat job's row keeps as its input.
const CHAT_INPUT_CHARS: usize = 200;

/// A conversation: what has been said, and the stored chat it is kept in (created
/// with the first message from the user, titled by it).
pub struct Conversation {
    chat_id: Option<i64>,
    messages: Vec<ChatMessage>,
    /// The same conversation as an LFM2-Audio prompt (speech-to-speech turns): one
    /// message for each of `messages` while it is current.
    spoken: Vec<Message>,
}

/// Longest chat title, in characters, taken from the first message.
const TITLE_CHARS: usize = 60;

impl Conversation {
    pub fn new(system_prompt: &str) -> Self {
        Self {
            chat_id: None,
            messages: vec![ChatMessage::new("system", system_prompt)],
            spoken: Vec::new(),
        }
    }

    /// The stored chat, once something has been said.
    pub fn chat_id(&self) -> Option<i64> {
        self.chat_id
    }

    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    pub(crate) fn push(&mut self, message: ChatMessage) {
        self.messages.push(message);
    }

    /// The conversation as an LFM2-Audio prompt, when every message so far was said
    /// in speech-to-speech turns of this session.
    pub(crate) fn spoken(&self) -> Option<&[Message]> {
        (self.spoken.len() == self.messages.len()).then_some(&self.spoken[..])
    }

    pub(crate) fn set_spoken(&mut self, spoken: Vec<Message>) {
        self.spoken = spoken;
    }
}

/// A Hugging Face model folder as a chat model: its `config.json` says the family
/// (LFM2 is the one loaded from folders), its tokenizer files the chat format.
fn load_folder(
    dir: &Path,
    device: &Device,
) -> Result<(Box<dyn ModelExecutor>, ChatFormat), String> {
    let config = dir.join("config.json");
    let text = std::fs::read_to_string(&config)
        .map_err(|e| format!("cannot read {}: {e}", config.display()))?;
    let family: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("invalid {}: {e}", config.display()))?;
    match family["model_type"].as_str() {
        Some("lfm2") => {
            let format = ChatFormat::from_dir(dir).map_err(|e| e.to_string())?;
            let model = Lfm2::from_dir(dir, izwi_core::DType::F32, device)
                .map_err(|e| e.to_string())?;
            Ok((Box::new(model), format))
        }
        other => Err(format!(
            "a {} model folder cannot be used as a chat model: folders of LFM2 models              can, Llama-family models as .gguf files",
            other.unwrap_or("model of unknown type")
        )),
    }
}

fn invalid(e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::InvalidRequest(e.to_string())
}

/// Whether the GGUF file at `path` is a chat model Izwi can run (its architecture,
/// tokenizer and chat template), without loading its weights.
pub(crate) fn check_chat_model(path: &Path) -> Result<(), RuntimeError> {
    let not = |reason: String| {
        RuntimeError::InvalidRequest(format!(
            "{} cannot be used as a chat model: {reason}",
            path.display()
        ))
    };
    let file = GgufFile::open(path).map_err(|e| not(e.to_string()))?;
    Llama::check_gguf(&file).map_err(|e| not(e.to_string()))?;
    ChatFormat::from_gguf(&file).map_err(|e| not(e.to_string()))?;
    Ok(())
}

impl Runtime {
    /// Loads the chat model `spec` on this runtime's device: an installed chat model's
    /// id or name (`izwi models list`), the path of a .gguf file, or the path of an
    /// LFM2 Hugging Face model folder.
    pub async fn open_chat_model(&self, spec: &str) -> Result<ChatModel, RuntimeError> {
        if let Some(remote) = self.inner.remote() {
            // The server's model names are its own: it says when it has no such model.
            return Ok(ChatModel {
                name: spec.to_string(),
                backend: ChatBackend::Remote(remote),
            });
        }
        let (path, name) = self.chat_model_file(spec)?;
        // The last one opened stays loaded: each message of a chat in the app asks again.
        let mut cached = self.inner.chat_model.lock().await;
        if let Some((loaded, model)) = cached.as_ref() {
            if *loaded == path && model.name == name {
                return Ok(model.clone());
            }
        }
        // The one it replaces goes first: two models need not fit at once.
        *cached = None;
        let device = self.inner.models.device().clone();
        // A reply streams to someone listening: its tokens must not stall.
        let strategy = self
            .inner
            .models
            .batch_strategy()
            .unwrap_or(BatchStrategy::DecodeMaximal);
        let file = path.clone();
        let model =
            tokio::task::spawn_blocking(move || ChatModel::load(&file, name, &device, strategy))
                .await
                .map_err(|e| {
                    RuntimeError::InvalidRequest(format!("loading the chat model: {e}"))
                })??;
        *cached = Some((path, model.clone()));
        Ok(model)
    }

    /// The .gguf file of chat model `spec`, and the name its chats record: an
    /// installed model's id, a file's name without `.gguf`.
    pub(crate) fn chat_model_file(&self, spec: &str) -> Result<(PathBuf, String), RuntimeError> {
        let file_name = |path: &Path| {
            path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into(),
            )
        };
        let info = match self.model(spec) {
            Ok(info) => info,
            // A path the hub cannot use: loading it says what is wrong.
            Err(_) if spec.ends_with(".gguf") || Path::new(spec).join("config.json").is_file() => {
                return Ok((spec.into(), file_name(Path::new(spec))))
            }
            Err(e) => return Err(e),
        };
        if info.family != Family::Llama {
            return Err(RuntimeError::InvalidRequest(format!(
                "{spec} is a {} model, not a chat model: `izwi models list` shows the \
                 installed ones, `izwi models import FILE.gguf` adds one",
                match info.task {
                    ModelTask::Transcribe => "speech-to-text",
                    ModelTask::Speak => "text-to-speech",
                    ModelTask::Chat => "chat",
                }
            )));
        }
        let path = info.path.ok_or_else(|| {
            RuntimeError::InvalidRequest(format!(
                "the chat model {spec} is not installed: `izwi models download {spec}`"
            ))
        })?;
        if path.is_file() {
            // A file used in place has its path as id.
            let name = match info.id.ends_with(".gguf") {
                true => file_name(&path),
                false => info.id,
            };
            return Ok((path, name));
        }
        let mut files = std::fs::read_dir(&path)
            .map_err(|e| RuntimeError::Load {
                id: spec.to_string(),
                reason: format!("{}: {e}", path.display()),
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "gguf"));
        let file = files.next().ok_or_else(|| RuntimeError::Load {
            id: spec.to_string(),
            reason: format!("{} holds no .gguf file", path.display()),
        })?;
        Ok((file, info.id))
    }

    /// Says `text` in `conversation` and streams the model's reply to `on_text`. The
    /// user's message is stored before the model runs and the reply once it is whole,
    /// so a failed or interrupted reply loses nothing the user said.
    pub async fn say(
        &self,
        model: &ChatModel,
        conversation: &mut Conversation,
        text: &str,
        params: &ChatParams,
        on_text: impl FnMut(&str),
    ) -> Result<ChatReply, RuntimeError> {
        let store = &self.inner.store;
        let chat_id = self.chat_for(model.name(), conversation, text).await?;
        store
            .add_message(chat_id, NewMessage::text(MessageRole::User, text))
            .await?;
        conversation.push(ChatMessage::new("user", text));
        let reply = model.reply(&conversation.messages, params, on_text).await?;
        let metrics = MessageMetrics {
            first_token_ms: Some(reply.first_token_ms),
            total_ms: Some(reply.total_ms),
            ..MessageMetrics::default()
        };
        store
            .add_message(
                chat_id,
                NewMessage {
                    metrics: Some(&metrics),
                    ..NewMessage::text(MessageRole::Assistant, &reply.text)
                },
            )
            .await?;
        conversation.push(ChatMessage::new("assistant", reply.text.clone()));
        Ok(reply)
    }

    /// The stored chat of `conversation`, created (with its system prompt, titled by
    /// `first_words`, recording `model_name`) when nothing has been said in it yet.
    pub(crate) async fn chat_for(
        &self,
        model_name: &str,
        conversation: &mut Conversation,
        first_words: &str,
    ) -> Result<i64, RuntimeError> {
        if let Some(id) = conversation.chat_id {
            return Ok(id);
        }
        let store = &self.inner.store;
        let title: String = first_words.chars().take(TITLE_CHARS).collect();
        let chat = store.create_chat(title.trim(), Some(model_name)).await?;
        let system = &conversation.messages[0].content;
        store
            .add_message(chat.id, NewMessage::text(MessageRole::System, system))
            .await?;
        conversation.chat_id = Some(chat.id);
        Ok(chat.id)
    }

    /// Answers `messages` with `model` as a job in the history (the API's chat
    /// completions): its input the user's last message, its output the reply, which
    /// streams to `on_text` as it is made. Cancelling the job (or dropping it from a
    /// shell that gave up) drops the reply, which aborts it on the engine.
    pub async fn chat_job(
        &self,
        model: ChatModel,
        messages: Vec<ChatMessage>,
        params: ChatParams,
        on_text: impl FnMut(&str) + Send + 'static,
    ) -> Result<ChatJob, RuntimeError> {
        let last = messages.last().map(|m| m.content.as_str()).unwrap_or("");
        let mut input: String = last.chars().take(CHAT_INPUT_CHARS).collect();
        if input.len() < last.len() {
            input.push('…');
        }
        let row = ChatJobParams {
            messages: messages.len(),
            max_tokens: params.max_tokens,
            temperature: params.temperature,
            seed: params.seed,
            remote: match &model.backend {
                ChatBackend::Remote(remote) => Some(remote.url()),
                ChatBackend::Engine(_) => None,
            },
        };
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Chat,
                model_id: Some(model.name.clone()),
                input,
                params: serde_json::to_value(&row).map_err(invalid)?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let (tx, reply) = tokio::sync::oneshot::channel();
        self.inner.jobs.spawn_unslotted(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                match model.reply(&messages, &params, on_text).await {
                    Ok(reply) => {
                        let metrics = JobMetrics {
                            processing_seconds: Some(reply.total_ms / 1e3),
                            tokens: Some(reply.tokens as u64),
                            ..JobMetrics::default()
                        };
                        let text = reply.text.clone();
                        let _ = tx.send(Ok(reply));
                        Ok((Some(text), metrics))
                    }
                    Err(e) => {
                        // The job's row keeps the message; the shell gets the error.
                        let message = e.to_string();
                        let _ = tx.send(Err(e));
                        Err(RuntimeError::InvalidRequest(message))
                    }
                }
            },
        );
        Ok(ChatJob { job, reply })
    }

    /// The stored chats, most recently updated first.
    pub async fn chats(&self) -> Result<Vec<ChatRecord>, RuntimeError> {
        Ok(self.inner.store.list_chats().await?)
    }

    /// The conversation to go on with: stored chat `chat_id`, its messages as they were
    /// said with its system prompt (or `system_prompt` when it has none); or, for None,
    /// a new one with `system_prompt`.
    pub async fn open_conversation(
        &self,
        chat_id: Option<i64>,
        system_prompt: &str,
    ) -> Result<Conversation, RuntimeError> {
        let Some(chat_id) = chat_id else {
            return Ok(Conversation::new(system_prompt));
        };
        if self.inner.store.chat(chat_id).await?.is_none() {
            return Err(RuntimeError::InvalidRequest(format!(
                "no chat {chat_id}: `izwi chats` lists them"
            )));
        }
        let stored = self.inner.store.messages(chat_id).await?;
        let mut messages = Vec::with_capacity(stored.len() + 1);
        if stored.first().is_none_or(|m| m.role != MessageRole::System) {
            messages.push(ChatMessage::new("system", system_prompt));
        }
        messages.extend(
            stored
                .iter()
                .map(|m| ChatMessage::new(m.role.as_str(), m.content.clone())),
        );
        Ok(Conversation {
            chat_id: Some(chat_id),
            messages,
            spoken: Vec::new(),
        })
    }

    /// The stored chats whose title or any message contains `text` (blank: all), most
    /// recently active first.
    pub async fn search_chats(&self, text: &str) -> Result<Vec<ChatRecord>, RuntimeError> {
        Ok(self.inner.store.search_chats(text).await?)
    }

    /// Deletes a stored chat, its messages and their recordings in the data folder.
    pub async fn delete_chat(&self, chat_id: i64) -> Result<(), RuntimeError> {
        let messages = self.inner.store.messages(chat_id).await?;
        self.inner.store.delete_chat(chat_id).await?;
        for path in messages.iter().filter_map(|m| m.audio_path.as_deref()) {
            let path = self.data_dir().join(path);
            if let Err(error) = std::fs::remove_file(&path) {
                if error.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %path.display(), %error, "a deleted chat's recording stays");
                }
            }
        }
        Ok(())
    }

    /// The messages of a stored chat, oldest first.
    pub async fn chat_messages(&self, chat_id: i64) -> Result<Vec<MessageRecord>, RuntimeError> {
        Ok(self.inner.store.messages(chat_id).await?)
    }
}
