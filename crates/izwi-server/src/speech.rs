//! `POST /v1/audio/speech`: `input` said by `voice`, a voice of the library (its name or
//! id), as a speak job in the history. `model` is one of OpenAI's names (the voice brings
//! its own model) or the voice's own model id. `response_format` is `wav` (the default;
//! Izwi writes no MP3; at the voice's own rate, its lengths left open as OpenAI's
//! streamed WAV has them) or `pcm` (16-bit little-endian mono at 24 kHz, as OpenAI's),
//! both streamed sentence by sentence as the voice makes them.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use izwi_runtime::{
    pcm16_bytes, pcm16_wav_data, streamed_wav_header, Event, Family, Job, JobStatus,
    Qwen3SpeakRequest, Runtime, SpeakRequest, StreamResampler, VoiceInfo, MAX_SPEAK_CHARS,
};
use serde::Deserialize;
use tokio::sync::broadcast;

use crate::deadline::Deadline;
use crate::error::{self, ApiError};
use crate::job::RequestJob;
use crate::models::TTS_MODELS;
use crate::request_voice::{RequestVoice, Upload};
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
    /// Style prompts (`gpt-4o-mini-tts`): a Qwen3-TTS voice takes them (how a preset
    /// speaks, or the voice a VoiceDesign model makes); Piper voices have none.
    #[serde(default)]
    instructions: Option<String>,
    /// vLLM-Omni's Qwen3-TTS fields: a voice the request makes (request_voice.rs).
    #[serde(default)]
    task_type: Option<String>,
    #[serde(default)]
    ref_audio: Option<String>,
    #[serde(default)]
    ref_text: Option<String>,
}

pub(crate) async fn speak(
    State(state): State<AppState>,
    Extension(deadline): Extension<Deadline>,
    body: Result<Json<SpeechBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(error::bad_json)?;
    let format = match body.response_format.as_deref().unwrap_or("wav") {
        "wav" => Streamed::Wav,
        "pcm" => Streamed::Pcm,
        other => {
            return Err(ApiError::param(
                "response_format",
                format!("{other:?} is not offered: wav or pcm"),
            ))
        }
    };
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
    let made = RequestVoice {
        task_type: body.task_type,
        ref_audio: body.ref_audio,
        ref_text: body.ref_text,
    };
    let in_library = library_voice(&state, &body.voice).await;
    if made.makes_a_voice(in_library.is_ok()) {
        if body.speed.is_some() {
            return Err(ApiError::param(
                "speed",
                "a Qwen3-TTS voice has no speed setting: leave `speed` out",
            ));
        }
        let instructions = body.instructions.filter(|i| !i.trim().is_empty());
        // Following the job's events from before it starts, none can be missed.
        let events = state.events.subscribe();
        let (job, upload) = made
            .speak(&state, &body.model, &body.voice, body.input, instructions)
            .await?;
        return Ok(respond(&state, events, &job, deadline, format, upload));
    }
    let voice = in_library?;
    if !TTS_MODELS.contains(&body.model.as_str()) && body.model != voice.model_id {
        return Err(ApiError::param(
            "model",
            format!(
                "the voice {:?} speaks with {}, not {}: give that, or tts-1",
                voice.name, voice.model_id, body.model
            ),
        ));
    }
    let instructions = body.instructions.filter(|i| !i.trim().is_empty());
    if instructions.is_some() && !speaks_with_qwen3(&state, &voice) {
        return Err(ApiError::param(
            "instructions",
            "this voice takes no instructions (only Qwen3-TTS voices do): choose a voice that \
             sounds as wanted",
        ));
    }
    // Following the job's events from before it starts, none can be missed.
    let events = state.events.subscribe();
    let job = match instructions {
        Some(instructions) => {
            if body.speed.is_some() {
                return Err(ApiError::param(
                    "speed",
                    "a Qwen3-TTS voice has no speed setting: leave `speed` out",
                ));
            }
            state
                .runtime
                .speak_qwen3(Qwen3SpeakRequest {
                    voice: voice.id.to_string(),
                    text: body.input,
                    instructions: Some(instructions),
                    ..Qwen3SpeakRequest::default()
                })
                .await?
        }
        None => {
            state
                .runtime
                .speak(SpeakRequest {
                    voice: voice.id.to_string(),
                    text: body.input,
                    output: None,
                    replace: false,
                    speed: body.speed,
                })
                .await?
        }
    };
    Ok(respond(&state, events, &job, deadline, format, None))
}

/// The job's speech, streamed as it is made.
fn respond(
    state: &AppState,
    events: broadcast::Receiver<Event>,
    job: &Job,
    deadline: Deadline,
    format: Streamed,
    upload: Option<Upload>,
) -> Response {
    let audio = AudioStream {
        runtime: state.runtime.clone(),
        events,
        job: RequestJob::new(state.runtime.clone(), job, deadline).with_upload(upload),
        format,
        sent: 0,
        data_sent: 0,
        resampler: None,
        ended: false,
    };
    let stream = futures::stream::unfold(audio, |mut audio| async move {
        audio.next().await.map(|item| (item, audio))
    });
    (
        [(header::CONTENT_TYPE, format.mime())],
        Body::from_stream(stream),
    )
        .into_response()
}

/// How the speech is sent.
#[derive(Debug, Clone, Copy)]
enum Streamed {
    /// A WAV header with open lengths, then 16-bit PCM at the voice's rate.
    Wav,
    /// 16-bit PCM at 24 kHz, as OpenAI's.
    Pcm,
}

impl Streamed {
    fn mime(self) -> &'static str {
        match self {
            Streamed::Wav => "audio/wav",
            Streamed::Pcm => "audio/pcm",
        }
    }
}

/// A speak job's sentences, in order, as they are made; the stream ends with the job.
/// Dropped early (the client went away), its `RequestJob` cancels the job.
struct AudioStream {
    runtime: Arc<Runtime>,
    events: broadcast::Receiver<Event>,
    job: RequestJob,
    format: Streamed,
    /// Sentences sent so far.
    sent: usize,
    /// Bytes of the job's WAV data (at the voice's rate) sent so far, as such or resampled.
    data_sent: usize,
    /// PCM only: the whole speech resampled as one stream, so that what is sent is the
    /// job's WAV file resampled, whether it came from the events or, after falling
    /// behind, from the file.
    resampler: Option<StreamResampler>,
    /// The end was sent.
    ended: bool,
}

impl AudioStream {
    /// `data`, 16-bit PCM at the voice's `rate` as in the job's WAV file, as this
    /// stream sends it: with the WAV header first, or resampled to 24 kHz.
    fn encode(&mut self, rate: u32, data: &[u8]) -> Result<Vec<u8>, String> {
        let first = self.data_sent == 0 && self.sent == 0;
        self.data_sent += data.len();
        match self.format {
            Streamed::Wav => {
                let mut bytes = Vec::with_capacity(data.len() + 44);
                if first {
                    bytes.extend(streamed_wav_header(rate));
                }
                bytes.extend_from_slice(data);
                Ok(bytes)
            }
            Streamed::Pcm => {
                let resampler = match &mut self.resampler {
                    Some(resampler) => resampler,
                    None => self
                        .resampler
                        .insert(StreamResampler::new(rate, PCM_RATE).map_err(|e| e.to_string())?),
                };
                let mut out = Vec::new();
                resampler
                    .push(&pcm16_samples(data), &mut out)
                    .map_err(|e| format!("resampling the speech: {e}"))?;
                Ok(pcm16_bytes(&out))
            }
        }
    }

    /// The resampler's tail once the speech is over (nothing for WAV).
    fn finish(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        if let Some(resampler) = self.resampler.take() {
            resampler
                .finish(&mut out)
                .map_err(|e| format!("resampling the speech: {e}"))?;
        }
        Ok(pcm16_bytes(&out))
    }

    /// What the job's WAV file holds beyond what was sent, once it is done, as this
    /// stream sends it: the same bytes the events would have brought.
    async fn rest_of_file(&mut self) -> Result<Vec<u8>, String> {
        let job = self.job.finished().await.map_err(|e| e.message)?;
        let path = self
            .runtime
            .speech_file(job.id)
            .await
            .map_err(|e| e.to_string())?;
        let file = tokio::fs::read(&path)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let (rate, data) = pcm16_wav_data(&file)
            .ok_or_else(|| format!("{} is not a 16-bit mono WAV", path.display()))?;
        let rest = data.get(self.data_sent..).unwrap_or_default().to_vec();
        let mut bytes = self.encode(rate, &rest)?;
        bytes.extend(self.finish()?);
        Ok(bytes)
    }

    /// The next sentence's bytes (after a sentence's gap), an error that ends the
    /// response unfinished, or None when the job is done.
    async fn next(&mut self) -> Option<Result<Vec<u8>, std::io::Error>> {
        let failed = |message: String| Some(Err(std::io::Error::other(message)));
        if self.ended {
            return None;
        }
        loop {
            let event = match self.events.recv().await {
                Ok(event) => event,
                // The job's WAV file will have every sentence: the rest comes from it.
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::info!(
                        job = self.job.id(),
                        missed = n,
                        "a slow client's speech comes from its WAV file"
                    );
                    self.ended = true;
                    return Some(self.rest_of_file().await.map_err(std::io::Error::other));
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return failed("the server is stopping".into());
                }
            };
            match event {
                Event::SpeechAudio {
                    job_id,
                    sample_rate,
                    gap_before,
                    samples,
                    ..
                } if job_id == self.job.id() => {
                    // The pause before this piece that the job's WAV file has.
                    let mut data =
                        pcm16_bytes(&vec![0f32; (gap_before * sample_rate as f32) as usize]);
                    data.extend(pcm16_bytes(&samples));
                    let bytes = self.encode(sample_rate, &data);
                    self.sent += 1;
                    return Some(bytes.map_err(std::io::Error::other));
                }
                Event::JobFinished {
                    job_id,
                    status,
                    error,
                } if job_id == self.job.id() => {
                    self.job.ended();
                    self.ended = true;
                    return match status {
                        // What the events did not bring comes from the job's WAV file
                        // (normally nothing: every piece came as an event).
                        JobStatus::Done => match self.rest_of_file().await {
                            Ok(tail) if tail.is_empty() => None,
                            tail => Some(tail.map_err(std::io::Error::other)),
                        },
                        _ => failed(format!(
                            "the speech stopped: {}",
                            error.unwrap_or_else(|| format!("{status:?}").to_lowercase())
                        )),
                    };
                }
                _ => {}
            }
        }
    }
}

/// 16-bit little-endian PCM as samples, as the job's WAV file holds them.
fn pcm16_samples(data: &[u8]) -> Vec<f32> {
    data.chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32767.0)
        .collect()
}

/// Whether `voice` is of a Qwen3-TTS model.
fn speaks_with_qwen3(state: &AppState, voice: &VoiceInfo) -> bool {
    state
        .runtime
        .models()
        .iter()
        .any(|m| m.id == voice.model_id && m.family == Family::Qwen3Tts)
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
