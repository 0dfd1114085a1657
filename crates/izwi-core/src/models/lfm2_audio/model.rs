//! An LFM2-Audio checkpoint folder on a running engine, shared by every job that uses
//! it (concurrent turns are batched): its chat layout and the turns it takes, which
//! hear speech, write text and speak.

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use candle_core::Device;

use super::audio_out::{AudioOut, AudioStream};
use super::chat::{ChatLayout, Message, Part};
use super::config::END_OF_AUDIO;
use super::executor::AUDIO_START;
use super::executor::{frame_end_id, frame_id, Generation, Lfm2AudioExecutor, Lfm2AudioRequests};
use super::voice::Lfm2Voice;
use crate::engine::{Engine, EngineCoreConfig, FinishReason, GenerationParams, StreamingOutput};

/// liquid-audio's system prompt for speech recognition.
pub const ASR_PROMPT: &str = "Perform ASR.";

/// liquid-audio's system prompt for a spoken conversation.
pub const CHAT_PROMPT: &str = "Respond with interleaved text and audio.";

/// `<|im_end|>`: the end of a turn.
const IM_END: u32 = 7;

/// How a turn's frames are sampled (its text is greedy, as liquid-audio's examples
/// write it).
#[derive(Debug, Clone, PartialEq)]
pub struct AudioSampling {
    /// 0 is greedy.
    pub temperature: f32,
    pub top_k: Option<usize>,
    pub seed: Option<u64>,
}

impl AudioSampling {
    /// liquid-audio's TTS example: temperature 0.8, top-k 64.
    pub fn speech() -> Self {
        Self {
            temperature: 0.8,
            top_k: Some(64),
            seed: None,
        }
    }

    /// liquid-audio's chat demo: temperature 1.0, top-k 4.
    pub fn chat() -> Self {
        Self {
            temperature: 1.0,
            top_k: Some(4),
            seed: None,
        }
    }

    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: None,
            seed: None,
        }
    }
}

/// What a spoken turn gives as it is generated.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyPiece {
    /// Text written since the last piece.
    Text(String),
    /// Audio decoded since the last piece, 24 kHz mono.
    Audio(Vec<f32>),
}

/// A spoken turn, whole.
#[derive(Debug, Clone)]
pub struct SpokenTurn {
    /// Its text (special tokens dropped).
    pub text: String,
    /// The turn as the assistant's message in a later prompt: its text tokens and
    /// frames in the order they were generated.
    pub parts: Vec<Part>,
    /// Frames spoken (the end-of-audio frame not counted).
    pub frames: usize,
    /// Audio samples handed out.
    pub samples: usize,
    /// False when the turn reached its step limit before it ended.
    pub ended: bool,
}

/// The most text tokens one transcription writes.
pub const MAX_TRANSCRIPT_TOKENS: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum Lfm2AudioError {
    #[error("{0}")]
    Load(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the model failed: {0}")]
    Model(String),
    #[error("the engine stopped")]
    Stopped,
}

pub struct Lfm2Audio {
    engine: Engine,
    requests: Lfm2AudioRequests,
    layout: ChatLayout,
    vocab: usize,
    audio_out: Option<AudioOut>,
}

impl Lfm2Audio {
    pub fn from_dir(
        dir: &Path,
        device: &Device,
        engine: EngineCoreConfig,
    ) -> Result<Self, Lfm2AudioError> {
        let load = |e: candle_core::Error| Lfm2AudioError::Load(format!("{}: {e}", dir.display()));
        let executor = Lfm2AudioExecutor::from_dir(dir, device).map_err(load)?;
        let layout = ChatLayout::from_dir(dir).map_err(load)?;
        let vocab = executor.vocab();
        let requests = executor.requests();
        let audio_out = AudioOut::from_dir(dir, device).map_err(load)?;
        let engine = Engine::new(engine, Box::new(executor))
            .map_err(|e| Lfm2AudioError::Load(e.to_string()))?;
        Ok(Self {
            engine,
            requests,
            layout,
            vocab,
            audio_out,
        })
    }

    /// The sample rate speech in is taken at.
    pub fn input_sample_rate(&self) -> u32 {
        16_000
    }

    /// The sample rate of the speech it makes.
    pub fn output_sample_rate(&self) -> u32 {
        24_000
    }

    /// Whether the folder has a way to turn frames into audio (Mimi or LFM2.5-Audio's
    /// detokenizer).
    pub fn can_speak(&self) -> bool {
        self.audio_out.is_some()
    }

    /// Says `text` in one of the built-in voices (liquid-audio's TTS turn: sequential
    /// generation after the voice's system prompt), handing each piece of audio to
    /// `on_audio` as soon as it is decoded. The turn ends with its end-of-audio frame,
    /// or fails to end within `max_steps`. Dropping the future aborts the request.
    pub async fn speak(
        &self,
        text: &str,
        voice: Lfm2Voice,
        sampling: &AudioSampling,
        max_steps: usize,
        mut on_audio: impl FnMut(Vec<f32>) + Send,
    ) -> Result<SpokenTurn, Lfm2AudioError> {
        if !text.chars().any(char::is_alphanumeric) {
            return Err(Lfm2AudioError::Invalid(
                "nothing to say: the text has no words".into(),
            ));
        }
        let messages = [
            Message {
                role: "system".into(),
                parts: vec![Part::Text(voice.prompt())],
            },
            Message {
                role: "user".into(),
                parts: vec![Part::Text(text.into())],
            },
        ];
        // The speech is whole at its end-of-audio frame; what the model writes after
        // it is not wanted.
        let stop = vec![frame_end_id(self.vocab)];
        self.turn(
            &messages,
            Generation::Sequential,
            sampling,
            max_steps,
            stop,
            &mut |piece| {
                if let ReplyPiece::Audio(audio) = piece {
                    on_audio(audio)
                }
            },
        )
        .await
    }

    /// The assistant's spoken answer after `messages` (liquid-audio's conversation
    /// turn: text and audio interleaved), its text and audio handed to `on_piece` as
    /// they come. Earlier answers go back in as their [`SpokenTurn::parts`]. Dropping
    /// the future aborts the request.
    pub async fn reply(
        &self,
        messages: &[Message],
        sampling: &AudioSampling,
        max_steps: usize,
        mut on_piece: impl FnMut(ReplyPiece) + Send,
    ) -> Result<SpokenTurn, Lfm2AudioError> {
        self.turn(
            messages,
            Generation::Interleaved,
            sampling,
            max_steps,
            Vec::new(),
            &mut on_piece,
        )
        .await
    }

    async fn turn(
        &self,
        messages: &[Message],
        generation: Generation,
        sampling: &AudioSampling,
        max_steps: usize,
        stop_token_ids: Vec<u32>,
        on_piece: &mut (dyn FnMut(ReplyPiece) + Send),
    ) -> Result<SpokenTurn, Lfm2AudioError> {
        let Some(audio_out) = &self.audio_out else {
            return Err(Lfm2AudioError::Invalid(
                "this model cannot speak: its folder has neither Mimi's weights nor an \
                 audio_detokenizer/ folder"
                    .into(),
            ));
        };
        if max_steps == 0 {
            return Err(Lfm2AudioError::Invalid(
                "a turn needs at least one step".into(),
            ));
        }
        if !(sampling.temperature >= 0.0 && sampling.temperature.is_finite()) {
            return Err(Lfm2AudioError::Invalid(format!(
                "temperature {} is not a number of 0 or more",
                sampling.temperature
            )));
        }
        let invalid = |e: candle_core::Error| Lfm2AudioError::Invalid(e.to_string());
        let segments = self.layout.prompt(messages).map_err(invalid)?;
        let text = GenerationParams {
            max_tokens: max_steps,
            stop_token_ids,
            ..GenerationParams::default()
        };
        let audio = GenerationParams {
            temperature: sampling.temperature,
            top_k: sampling.top_k.unwrap_or(0),
            seed: sampling.seed,
            ..GenerationParams::default()
        };
        let (request, frames) = self
            .requests
            .prepare(segments, generation, text, &audio)
            .map_err(invalid)?;
        let id = request.id.clone();
        let (_, mut outputs) = match self.engine.generate_streaming(request).await {
            Ok(started) => started,
            Err(e) => {
                self.requests.cancel(&id);
                return Err(Lfm2AudioError::Invalid(e.to_string()));
            }
        };
        let mut turn = TurnBuilder::new(self, audio_out.stream(), frames);
        while let Some(chunk) = outputs.recv().await {
            let finished = turn.take(chunk, on_piece).await?;
            if let Some(reason) = finished {
                let ended = match reason {
                    FinishReason::Failed(message) => return Err(Lfm2AudioError::Model(message)),
                    FinishReason::Aborted => return Err(Lfm2AudioError::Stopped),
                    FinishReason::Stop => true,
                    FinishReason::Length => false,
                };
                return turn.finish(ended, on_piece).await;
            }
        }
        Err(Lfm2AudioError::Stopped)
    }

    /// What is said in `samples` (16 kHz mono), greedy, as liquid-audio's ASR turn
    /// writes it: the text before the model turns to audio or ends the turn.
    pub async fn transcribe(&self, samples: Arc<[f32]>) -> Result<String, Lfm2AudioError> {
        if samples.is_empty() {
            return Err(Lfm2AudioError::Invalid("no audio to transcribe".into()));
        }
        let messages = [
            Message {
                role: "system".into(),
                parts: vec![Part::Text(ASR_PROMPT.into())],
            },
            Message {
                role: "user".into(),
                parts: vec![Part::Audio(samples)],
            },
        ];
        let invalid = |e: candle_core::Error| Lfm2AudioError::Invalid(e.to_string());
        let segments = self.layout.prompt(&messages).map_err(invalid)?;
        let params = GenerationParams {
            max_tokens: MAX_TRANSCRIPT_TOKENS,
            // The transcript ends where the model would start speaking.
            stop_token_ids: vec![AUDIO_START],
            ..GenerationParams::default()
        };
        let (request, _frames) = self
            .requests
            .prepare(
                segments,
                Generation::Sequential,
                params,
                &GenerationParams::default(),
            )
            .map_err(invalid)?;
        let id = request.id.clone();
        let output = match self.engine.add_request(request.with_streaming(false)).await {
            Ok(pending) => pending.wait().await,
            Err(e) => {
                self.requests.cancel(&id);
                return Err(Lfm2AudioError::Invalid(e.to_string()));
            }
        }
        .map_err(|e| Lfm2AudioError::Model(e.to_string()))?;
        if output.finish_reason == FinishReason::Aborted {
            return Err(Lfm2AudioError::Stopped);
        }
        let text: Vec<u32> = output
            .tokens
            .iter()
            .copied()
            .take_while(|&t| t != frame_id(self.vocab) && t != frame_end_id(self.vocab))
            .collect();
        let transcript = self
            .layout
            .decode(&text)
            .map_err(|e| Lfm2AudioError::Model(e.to_string()))?;
        Ok(transcript.trim().to_string())
    }
}

/// A turn put together from the engine's chunks and the frames drawn for it.
struct TurnBuilder<'a> {
    model: &'a Lfm2Audio,
    stream: Option<AudioStream>,
    frames: Receiver<Vec<u32>>,
    parts: Vec<Part>,
    text_ids: Vec<u32>,
    text: String,
    spoken: usize,
    samples: usize,
}

impl<'a> TurnBuilder<'a> {
    fn new(model: &'a Lfm2Audio, stream: AudioStream, frames: Receiver<Vec<u32>>) -> Self {
        Self {
            model,
            stream: Some(stream),
            frames,
            parts: Vec::new(),
            text_ids: Vec::new(),
            text: String::new(),
            spoken: 0,
            samples: 0,
        }
    }

    /// Takes in one chunk; its finish reason when it is the last.
    async fn take(
        &mut self,
        chunk: StreamingOutput,
        on_piece: &mut (dyn FnMut(ReplyPiece) + Send),
    ) -> Result<Option<FinishReason>, Lfm2AudioError> {
        let (frame, frame_end) = (frame_id(self.model.vocab), frame_end_id(self.model.vocab));
        let mut to_decode = Vec::new();
        let mut wrote = false;
        for token in chunk.tokens {
            if token == frame || token == frame_end {
                // Frames are sent before the step's tokens: this one is here.
                let codes = self.frames.try_recv().map_err(|_| {
                    Lfm2AudioError::Model("a frame id came without its frame".into())
                })?;
                // liquid-audio's demo decodes no frame that holds an end-of-audio code.
                if !codes.iter().any(|&c| c >= END_OF_AUDIO) {
                    self.spoken += 1;
                    to_decode.push(codes.clone());
                }
                match self.parts.last_mut() {
                    Some(Part::Frames(frames)) => frames.push(codes),
                    _ => self.parts.push(Part::Frames(vec![codes])),
                }
            } else {
                wrote = true;
                self.text_ids.push(token);
                match self.parts.last_mut() {
                    Some(Part::Tokens(ids)) => ids.push(token),
                    _ => self.parts.push(Part::Tokens(vec![token])),
                }
            }
        }
        if wrote {
            self.send_text(on_piece)?;
        }
        let audio = self.decode(to_decode, false).await?;
        self.send_audio(audio, on_piece);
        Ok(chunk.finished.map(|done| done.finish_reason))
    }

    async fn finish(
        mut self,
        ended: bool,
        on_piece: &mut (dyn FnMut(ReplyPiece) + Send),
    ) -> Result<SpokenTurn, Lfm2AudioError> {
        let audio = self.decode(Vec::new(), true).await?;
        self.send_audio(audio, on_piece);
        // The layout closes the message with `<|im_end|>` itself.
        if let Some(Part::Tokens(ids)) = self.parts.last_mut() {
            if ids.last() == Some(&IM_END) {
                ids.pop();
                if ids.is_empty() {
                    self.parts.pop();
                }
            }
        }
        Ok(SpokenTurn {
            text: self.text.trim().to_string(),
            parts: self.parts,
            frames: self.spoken,
            samples: self.samples,
            ended,
        })
    }

    /// The text written so far, decoded whole (a token may be part of a character),
    /// handed out past what was handed out before.
    fn send_text(
        &mut self,
        on_piece: &mut (dyn FnMut(ReplyPiece) + Send),
    ) -> Result<(), Lfm2AudioError> {
        let text = self
            .model
            .layout
            .decode(&self.text_ids)
            .map_err(|e| Lfm2AudioError::Model(e.to_string()))?;
        if text.ends_with('\u{FFFD}') || !text.starts_with(&self.text) {
            return Ok(());
        }
        let new = text[self.text.len()..].to_string();
        self.text = text;
        if !new.is_empty() {
            on_piece(ReplyPiece::Text(new));
        }
        Ok(())
    }

    fn send_audio(&mut self, audio: Vec<f32>, on_piece: &mut (dyn FnMut(ReplyPiece) + Send)) {
        if !audio.is_empty() {
            self.samples += audio.len();
            on_piece(ReplyPiece::Audio(audio));
        }
    }

    /// Decodes off the async threads (Mimi and the detokenizer are model runs).
    async fn decode(
        &mut self,
        frames: Vec<Vec<u32>>,
        last: bool,
    ) -> Result<Vec<f32>, Lfm2AudioError> {
        if frames.is_empty() && !last {
            return Ok(Vec::new());
        }
        let mut stream = self.stream.take().ok_or(Lfm2AudioError::Stopped)?;
        let (stream, audio) = tokio::task::spawn_blocking(move || {
            let mut audio = stream.push(frames);
            if last {
                audio = audio.and_then(|mut a| {
                    a.extend(stream.finish()?);
                    Ok(a)
                });
            }
            (stream, audio)
        })
        .await
        .map_err(|e| Lfm2AudioError::Model(format!("decoding stopped: {e}")))?;
        self.stream = Some(stream);
        audio.map_err(|e| Lfm2AudioError::Model(format!("cannot decode the speech: {e}")))
    }
}
