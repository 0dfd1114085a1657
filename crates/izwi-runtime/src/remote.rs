//! A remote backend: an OpenAI-compatible server (another `izwi serve`, vLLM,
//! vLLM-Omni, speaches) that transcribes, speaks and chats instead of this machine's
//! engine. The jobs stay this machine's, in its history with their progress and cancel:
//! only the model's work goes over HTTP, a window or a sentence a request, so progress
//! is known as it goes, and cancelling a job drops its requests.
//!
//! Servers differ in what they offer (vLLM's `verbose_json` has segment timestamps but
//! no words; not every server speaks): what a server lacks is an error that says so.

use std::time::{Duration, Instant};

use futures::StreamExt;
use izwi_core::text::ChatMessage;
use izwi_core::transcript::{Segment, Word};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::chat::{ChatParams, ChatReply};
use crate::RuntimeError;

/// The setting holding the remote backend (its address and key).
pub const REMOTE_BACKEND: &str = "remote_backend";

/// The model asked for when a request names none: the names OpenAI's clients use, which
/// `izwi serve` maps to its default models, and which a vLLM server takes when started
/// with `--served-model-name whisper-1` (docs/remote.md).
pub const REMOTE_TRANSCRIBE_MODEL: &str = "whisper-1";
pub const REMOTE_SPEECH_MODEL: &str = "tts-1";

/// How long a connection may take to open, and a request's answer may go quiet.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// A voice as a speech request names it. A voice of this machine's library that a
/// server cannot know by name goes with what makes it, in vLLM-Omni's fields for
/// Qwen3-TTS (`izwi serve` takes them too): a clone's recording (`ref_audio`, a WAV as
/// a base64 data URL) and transcript (`ref_text`) with `task_type` `Base`; a designed
/// voice's description (`instructions`) with `VoiceDesign`; a preset's speaker as the
/// voice, with `CustomVoice`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RemoteVoice {
    pub voice: String,
    pub task_type: Option<&'static str>,
    pub ref_audio: Option<String>,
    pub ref_text: Option<String>,
    pub instructions: Option<String>,
}

/// `samples` at `rate` as a WAV in a base64 data URL, as `ref_audio` takes it.
pub(crate) fn wav_data_url(samples: &[f32], rate: u32) -> String {
    use base64::Engine;
    let wav = wav_bytes(samples, rate);
    format!(
        "data:audio/wav;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(wav)
    )
}

/// Where the remote backend is and its API key (kept in the store, never logged).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSettings {
    /// The server's OpenAI base URL, as OpenAI clients take it: `http://host:8000/v1`.
    pub url: String,
    #[serde(default)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for RemoteSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSettings")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish()
    }
}

/// The remote backend as the shells show it: never its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RemoteInfo {
    pub url: String,
    pub has_key: bool,
}

/// Which backend a runtime uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// The one the settings name (this machine's engine when none).
    #[default]
    Stored,
    /// This machine's engine, whatever the settings say (`izwi serve`).
    Local,
    /// This server, with the stored key when the settings name the same one.
    Url(String),
}

/// One window's transcription as the server gave it.
pub(crate) struct RemoteText {
    pub language: Option<String>,
    pub segments: Vec<Segment>,
}

/// What a transcription request asks for.
pub(crate) struct RemoteTranscribe<'a> {
    pub model: &'a str,
    pub translate: bool,
    pub language: Option<&'a str>,
    pub prompt: Option<&'a str>,
    pub words: bool,
}

/// An OpenAI-compatible server.
pub struct Remote {
    url: String,
    key: Option<String>,
    http: reqwest::Client,
}

impl Remote {
    pub(crate) fn new(settings: &RemoteSettings) -> Result<Self, RuntimeError> {
        let url = settings.url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&url).map_err(|e| {
            RuntimeError::InvalidRequest(format!(
                "{url:?} is not a server's address ({e}): give its OpenAI base URL, \
                 such as http://127.0.0.1:8000/v1"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{url:?} is not an http:// or https:// address"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| RuntimeError::InvalidRequest(format!("an HTTP client: {e}")))?;
        Ok(Self {
            url,
            key: settings.api_key.clone().filter(|k| !k.is_empty()),
            http,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn info(&self) -> RemoteInfo {
        RemoteInfo {
            url: self.url.clone(),
            has_key: self.key.is_some(),
        }
    }

    fn error(&self, message: impl std::fmt::Display) -> RuntimeError {
        RuntimeError::Remote {
            url: self.url.clone(),
            message: message.to_string(),
        }
    }

    /// Sends a request to `route`; an answer other than success is the server's error,
    /// in its words (OpenAI's, vLLM's and FastAPI's shapes are read).
    async fn send(
        &self,
        route: &str,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, RuntimeError> {
        let request = match &self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| self.error(format!("did not answer: {}", chain(&e))))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let said = server_message(&body);
        Err(self.error(match status.as_u16() {
            401 | 403 => format!("refused the API key ({status}): {said}"),
            404 | 405 if said.to_lowercase().contains("model") => {
                format!("has no such model ({status}): {said}")
            }
            404 | 405 => format!("offers no {what} ({route}: {status})"),
            _ => format!("answered {status}: {said}"),
        }))
    }

    /// One window's text: 16 kHz mono `wav`, its segments (and words when asked) timed
    /// from the window's start.
    pub(crate) async fn transcribe(
        &self,
        wav: Vec<u8>,
        ask: &RemoteTranscribe<'_>,
    ) -> Result<RemoteText, RuntimeError> {
        let route = if ask.translate {
            "/audio/translations"
        } else {
            "/audio/transcriptions"
        };
        let file = reqwest::multipart::Part::bytes(wav)
            .file_name("audio.wav")
            .mime_str("audio/wav")
            .map_err(|e| self.error(e))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", file)
            .text("model", ask.model.to_string())
            .text("response_format", "verbose_json")
            .text("temperature", "0")
            .text("timestamp_granularities[]", "segment");
        if ask.words {
            form = form.text("timestamp_granularities[]", "word");
        }
        if let (Some(language), false) = (ask.language, ask.translate) {
            form = form.text("language", language.to_string());
        }
        if let Some(prompt) = ask.prompt {
            form = form.text("prompt", prompt.to_string());
        }
        let what = if ask.translate {
            "translation"
        } else {
            "transcription"
        };
        let request = self
            .http
            .post(format!("{}{route}", self.url))
            .multipart(form);
        let response = self.send(route, request, what).await?;
        let body: Value = response
            .json()
            .await
            .map_err(|e| self.error(format!("sent a {what} that is not JSON: {}", chain(&e))))?;
        parse_verbose(&body, ask.words).map_err(|e| self.error(e))
    }

    /// `text` said by `voice`: its sample rate and samples.
    pub(crate) async fn speak(
        &self,
        model: &str,
        voice: &RemoteVoice,
        text: &str,
        speed: Option<f32>,
    ) -> Result<(u32, Vec<f32>), RuntimeError> {
        let route = "/audio/speech";
        let mut body = json!({
            "model": model,
            "input": text,
            "voice": voice.voice,
            "response_format": "wav",
        });
        if let Some(speed) = speed {
            body["speed"] = json!(speed);
        }
        let fields = [
            ("task_type", voice.task_type.map(str::to_string)),
            ("ref_audio", voice.ref_audio.clone()),
            ("ref_text", voice.ref_text.clone()),
            ("instructions", voice.instructions.clone()),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                body[name] = json!(value);
            }
        }
        let request = self.http.post(format!("{}{route}", self.url)).json(&body);
        let response = self.send(route, request, "speech").await?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.error(format!("stopped sending speech: {}", chain(&e))))?;
        let (rate, data) = izwi_audio::pcm16_wav_data(&bytes)
            .ok_or_else(|| self.error("sent speech that is not a 16-bit mono WAV"))?;
        let samples = data
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32767.0)
            .collect();
        Ok((rate, samples))
    }

    /// `model`'s reply to `messages`, streamed to `on_text` as it comes. Dropping the
    /// future closes the connection, which stops the reply on a server that notices.
    pub(crate) async fn reply(
        &self,
        model: &str,
        messages: &[ChatMessage],
        params: &ChatParams,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, RuntimeError> {
        let route = "/chat/completions";
        let mut body = json!({
            "model": model,
            "messages": messages
                .iter()
                .map(|m| json!({ "role": m.role, "content": m.content }))
                .collect::<Vec<_>>(),
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "stream": true,
        });
        if let Some(seed) = params.seed {
            body["seed"] = json!(seed);
        }
        let started = Instant::now();
        let request = self.http.post(format!("{}{route}", self.url)).json(&body);
        let response = self.send(route, request, "chat").await?;
        let mut stream = response.bytes_stream();
        let mut pending = Vec::new();
        let (mut text, mut tokens, mut first_token_ms) = (String::new(), 0, None);
        let mut finish: Option<String> = None;
        loop {
            let chunk = match stream.next().await {
                Some(chunk) => chunk.map_err(|e| {
                    self.error(format!("stopped in the middle of a reply: {}", chain(&e)))
                })?,
                None => return Err(self.error("ended a reply before it was done")),
            };
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let Some(data) = line.trim().strip_prefix("data:") else {
                    continue;
                };
                let data = data.trim();
                if data == "[DONE]" {
                    return Ok(ChatReply {
                        text: text.trim().to_string(),
                        tokens,
                        first_token_ms: first_token_ms.unwrap_or_default(),
                        total_ms: started.elapsed().as_secs_f64() * 1e3,
                        finished_turn: finish.as_deref() != Some("length"),
                    });
                }
                let event: Value = serde_json::from_str(data)
                    .map_err(|e| self.error(format!("sent a reply that is not JSON: {e}")))?;
                if !event["error"].is_null() {
                    return Err(self.error(format!(
                        "failed in the middle of a reply: {}",
                        server_message(data)
                    )));
                }
                let choice = &event["choices"][0];
                if let Some(delta) = choice["delta"]["content"].as_str() {
                    if !delta.is_empty() {
                        first_token_ms.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1e3);
                        tokens += 1;
                        // The whole reply is trimmed: so is the start of the streamed one.
                        let delta = if text.is_empty() {
                            delta.trim_start()
                        } else {
                            delta
                        };
                        if !delta.is_empty() {
                            on_text(delta);
                            text.push_str(delta);
                        }
                    }
                }
                if let Some(reason) = choice["finish_reason"].as_str() {
                    finish = Some(reason.to_string());
                }
            }
        }
    }
}

/// A transcription's `verbose_json` as segments (and words). A server that sends no
/// segments gives the window's text as one; one asked for words that sends none (vLLM)
/// cannot do what was asked.
fn parse_verbose(body: &Value, words: bool) -> Result<RemoteText, String> {
    let text = body["text"]
        .as_str()
        .ok_or_else(|| format!("sent a transcription without text: {}", excerpt(body)))?;
    let number = |v: &Value| v.as_f64().unwrap_or_default();
    let mut segments: Vec<Segment> = match body["segments"].as_array() {
        Some(list) => list
            .iter()
            .map(|s| Segment {
                start: number(&s["start"]),
                end: number(&s["end"]),
                text: s["text"].as_str().unwrap_or_default().trim().to_string(),
                words: Vec::new(),
            })
            .collect(),
        None if text.trim().is_empty() => Vec::new(),
        None => vec![Segment {
            start: 0.0,
            end: number(&body["duration"]),
            text: text.trim().to_string(),
            words: Vec::new(),
        }],
    };
    if words {
        let list = body["words"].as_array().ok_or_else(|| {
            "gives no word timestamps (vLLM's verbose_json has segment timestamps only): \
             transcribe without word timestamps"
                .to_string()
        })?;
        for w in list {
            let word = Word {
                word: format!(" {}", w["word"].as_str().unwrap_or_default().trim()),
                start: number(&w["start"]),
                end: number(&w["end"]),
                probability: w["probability"].as_f64().unwrap_or(1.0),
            };
            // Each word goes to the segment it starts in (the last one that began).
            let at = segments
                .iter()
                .rposition(|s| s.start <= word.start + 1e-3)
                .unwrap_or(0);
            if let Some(segment) = segments.get_mut(at) {
                segment.words.push(word);
            }
        }
    }
    Ok(RemoteText {
        language: body["language"].as_str().map(str::to_owned),
        segments,
    })
}

/// A server's error message from its body: OpenAI's `{"error": {"message"}}`, vLLM's
/// older `{"message"}`, FastAPI's `{"detail"}` (faster-whisper-server's holding an
/// OpenAI error), else the body's start.
fn server_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return body
            .chars()
            .take(300)
            .collect::<String>()
            .trim()
            .to_string();
    };
    let message = [
        &value["error"]["message"],
        &value["error"],
        &value["message"],
        &value["detail"],
        &value["detail"]["error"]["message"],
    ]
    .into_iter()
    .find_map(|v| v.as_str().map(str::to_owned));
    message.unwrap_or_else(|| excerpt(&value))
}

fn excerpt(value: &Value) -> String {
    value.to_string().chars().take(300).collect()
}

/// An HTTP error with its causes (the refused connection under "error sending request").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// 16-bit mono WAV bytes of `samples` at `rate`: a window sent for transcription.
pub(crate) fn wav_bytes(samples: &[f32], rate: u32) -> Vec<u8> {
    let data = izwi_audio::pcm16_bytes(samples);
    let mut wav = izwi_audio::streamed_wav_header(rate).to_vec();
    let data_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    wav[4..8].copy_from_slice(&data_len.saturating_add(36).to_le_bytes());
    wav[40..44].copy_from_slice(&data_len.to_le_bytes());
    wav.extend(data);
    wav
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_json_of_each_server_shape() {
        let openai = json!({
            "text": "Hello there. General Kenobi.",
            "language": "en",
            "duration": 3.0,
            "segments": [
                { "id": 0, "start": 0.0, "end": 1.2, "text": " Hello there." },
                { "id": 1, "start": 1.4, "end": 3.0, "text": " General Kenobi." },
            ],
            "words": [
                { "word": "Hello", "start": 0.0, "end": 0.5 },
                { "word": "there.", "start": 0.5, "end": 1.2 },
                { "word": "General", "start": 1.4, "end": 2.0 },
            ],
        });
        let parsed = parse_verbose(&openai, true).unwrap();
        assert_eq!(parsed.language.as_deref(), Some("en"));
        assert_eq!(parsed.segments.len(), 2);
        assert_eq!(parsed.segments[1].text, "General Kenobi.");
        assert_eq!(parsed.segments[0].words.len(), 2);
        assert_eq!(parsed.segments[1].words[0].word, " General");

        // vLLM: segments, no words.
        let mut vllm = openai.clone();
        vllm.as_object_mut().unwrap().remove("words");
        let error = parse_verbose(&vllm, true).err().unwrap();
        assert!(error.contains("no word timestamps"), "{error}");
        // Only text: one segment of the window.
        let plain = parse_verbose(&json!({ "text": " Hi.", "duration": 0.8 }), false).unwrap();
        assert_eq!(plain.segments.len(), 1);
        assert_eq!(plain.segments[0].end, 0.8);
        assert!(parse_verbose(&json!({ "text": "" }), false)
            .unwrap()
            .segments
            .is_empty());
        assert!(parse_verbose(&json!({ "nope": 1 }), false).is_err());
    }

    #[test]
    fn servers_errors_in_their_words() {
        assert_eq!(
            server_message(r#"{"error": {"message": "bad file", "type": "x"}}"#),
            "bad file"
        );
        assert_eq!(
            server_message(r#"{"object": "error", "message": "no such model", "code": 404}"#),
            "no such model"
        );
        assert_eq!(server_message(r#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(
            server_message(r#"{"detail": {"error": {"message": "unknown model: x"}}}"#),
            "unknown model: x"
        );
        assert_eq!(server_message("Bad Gateway"), "Bad Gateway");
    }

    #[test]
    fn addresses_are_checked_and_the_key_never_shown() {
        let settings = |url: &str| RemoteSettings {
            url: url.into(),
            api_key: Some("sk-secret".into()),
        };
        assert!(Remote::new(&settings("ftp://x/v1")).is_err());
        assert!(Remote::new(&settings("not a url")).is_err());
        let remote = Remote::new(&settings("http://127.0.0.1:8000/v1/")).unwrap();
        assert_eq!(remote.url(), "http://127.0.0.1:8000/v1");
        assert!(remote.info().has_key);
        assert!(!format!("{:?}", settings("http://x/v1")).contains("sk-secret"));
    }

    #[test]
    fn a_window_as_wav() {
        let wav = wav_bytes(&[0.0, 0.5, -0.5], 16_000);
        let (rate, data) = izwi_audio::pcm16_wav_data(&wav).unwrap();
        assert_eq!((rate, data.len()), (16_000, 6));
        assert_eq!(u32::from_le_bytes(wav[4..8].try_into().unwrap()), 42);
    }
}
