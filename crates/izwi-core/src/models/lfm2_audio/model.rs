//! An LFM2-Audio checkpoint folder on a running engine, shared by every job that uses
//! it (concurrent turns are batched): its chat layout and the turns it takes.

use std::path::Path;
use std::sync::Arc;

use candle_core::Device;

use super::chat::{ChatLayout, Message, Part};
use super::executor::AUDIO_START;
use super::executor::{frame_end_id, frame_id, Generation, Lfm2AudioExecutor, Lfm2AudioRequests};
use crate::engine::{Engine, EngineCoreConfig, FinishReason, GenerationParams};

/// liquid-audio's system prompt for speech recognition.
pub const ASR_PROMPT: &str = "Perform ASR.";

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
        let engine = Engine::new(engine, Box::new(executor))
            .map_err(|e| Lfm2AudioError::Load(e.to_string()))?;
        Ok(Self {
            engine,
            requests,
            layout,
            vocab,
        })
    }

    /// The sample rate speech in is taken at.
    pub fn input_sample_rate(&self) -> u32 {
        16_000
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
