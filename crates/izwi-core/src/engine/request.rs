//! Requests as callers make them, and their validation before they reach the scheduler.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::{EngineError, Result};
use super::types::{GenerationParams, Priority, RequestId};

/// A request to the engine: a prompt of token ids and how to continue it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineCoreRequest {
    pub id: RequestId,
    pub prompt_tokens: Vec<u32>,
    pub params: GenerationParams,
    pub priority: Priority,
    /// Send every new token as it is generated, not only the final output.
    pub streaming: bool,
    /// 16 kHz mono samples, for models that listen.
    #[serde(skip)]
    pub audio: Option<Arc<[f32]>>,
    /// The audio arrives while the request runs, through `append_audio`: each position
    /// runs once its audio is there (streaming recognition of a microphone).
    #[serde(default)]
    pub live_audio: bool,
}

impl EngineCoreRequest {
    pub fn new(prompt_tokens: Vec<u32>) -> Self {
        Self {
            id: RequestId::generate(),
            prompt_tokens,
            params: GenerationParams::default(),
            priority: Priority::Normal,
            streaming: false,
            audio: None,
            live_audio: false,
        }
    }

    pub fn with_id(mut self, id: impl Into<RequestId>) -> Self {
        self.id = id.into();
        self
    }

    pub fn with_params(mut self, params: GenerationParams) -> Self {
        self.params = params;
        self
    }

    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    pub fn with_audio(mut self, samples: impl Into<Arc<[f32]>>) -> Self {
        self.audio = Some(samples.into());
        self
    }

    /// Audio will come through `append_audio` as it is recorded.
    pub fn with_live_audio(mut self) -> Self {
        self.live_audio = true;
        self
    }

    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }
}

/// Checks requests against the model and the engine's limits, and clamps sampling
/// parameters into their useful ranges.
#[derive(Debug, Clone)]
pub struct RequestProcessor {
    vocab_size: usize,
    max_seq_len: usize,
    block_size: usize,
    total_blocks: usize,
    max_batch_size: usize,
    requires_audio: bool,
    /// Whether a beam recomputed after a preemption finds its prompt's blocks again
    /// (the prefix cache), or computes them into blocks of its own.
    beams_share_prompt: bool,
}

const MAX_TEMPERATURE: f32 = 2.0;
const REPETITION_PENALTY_RANGE: (f32, f32) = (0.5, 2.0);

impl RequestProcessor {
    pub fn new(
        vocab_size: usize,
        max_seq_len: usize,
        block_size: usize,
        total_blocks: usize,
        max_batch_size: usize,
        requires_audio: bool,
    ) -> Self {
        Self {
            vocab_size,
            max_seq_len,
            block_size,
            total_blocks,
            max_batch_size,
            requires_audio,
            beams_share_prompt: true,
        }
    }

    /// For a hybrid model's engine, which has no prefix cache: a preempted beam
    /// recomputes its whole context into blocks of its own, so a beam request must fit
    /// with every beam holding all of its blocks, or its beams could keep preempting
    /// each other.
    pub fn without_shared_beam_prompts(mut self) -> Self {
        self.beams_share_prompt = false;
        self
    }

    pub fn process(&self, mut request: EngineCoreRequest) -> Result<EngineCoreRequest> {
        let invalid = |message: String| {
            Err(EngineError::InvalidRequest(format!(
                "{}: {message}",
                request.id
            )))
        };
        match (&request.audio, self.requires_audio) {
            (Some(_), _) if request.live_audio => {
                return invalid(
                    "live audio comes through append_audio, not with the request".into(),
                )
            }
            (None, false) if request.live_audio => {
                return invalid("this model does not take audio input".into())
            }
            (None, true) if request.live_audio => {}
            (None, true) => {
                return invalid("this model transcribes audio; the request has none".into())
            }
            (Some(_), false) => return invalid("this model does not take audio input".into()),
            (Some(audio), true) if audio.is_empty() => return invalid("the audio is empty".into()),
            (Some(audio), true) if audio.iter().any(|s| !s.is_finite()) => {
                return invalid("the audio has samples that are not finite numbers".into())
            }
            _ => {}
        }
        let prompt_len = request.prompt_tokens.len();
        if prompt_len == 0 {
            return invalid("the prompt is empty".into());
        }
        if let Some(&token) = request
            .prompt_tokens
            .iter()
            .find(|&&t| t as usize >= self.vocab_size)
        {
            return invalid(format!(
                "prompt token {token} is outside the vocabulary of {} tokens",
                self.vocab_size
            ));
        }
        if prompt_len >= self.max_seq_len {
            return invalid(format!(
                "the prompt has {prompt_len} tokens; the model takes at most {} with room to generate",
                self.max_seq_len - 1
            ));
        }
        let p = &mut request.params;
        if p.max_tokens == 0 {
            return invalid("max_tokens must be at least 1".into());
        }
        for (name, value) in [
            ("temperature", p.temperature),
            ("top_p", p.top_p),
            ("repetition_penalty", p.repetition_penalty),
        ] {
            if !value.is_finite() {
                return invalid(format!("{name} must be a finite number, not {value}"));
            }
        }
        if p.top_p <= 0.0 {
            return invalid(format!("top_p must be above 0, not {}", p.top_p));
        }
        if p.repetition_penalty <= 0.0 {
            return invalid(format!(
                "repetition_penalty must be above 0, not {}",
                p.repetition_penalty
            ));
        }
        if let Some(&token) = p
            .stop_token_ids
            .iter()
            .find(|&&t| t as usize >= self.vocab_size)
        {
            return invalid(format!("stop token {token} is outside the vocabulary"));
        }
        if p.beam_width == 0 {
            return invalid("beam_width must be at least 1".into());
        }
        if p.beam_width > 1 {
            // Beams run side by side as sequences of the batch, and only the best
            // comes back, whole, at the end.
            let unsupported = [
                (
                    p.beam_width > self.max_batch_size,
                    "more beams than the engine's batch holds",
                ),
                (
                    p.temperature > 0.0,
                    "a temperature above 0 (beam search is greedy)",
                ),
                (
                    request.streaming,
                    "streaming (the best beam is known only at the end)",
                ),
                (p.return_logits, "return_logits"),
                (p.first_logits, "first_logits"),
                (p.top_logprobs > 0, "top_logprobs"),
                (p.return_alignment, "return_alignment"),
                (request.live_audio, "live audio"),
            ];
            if let Some((_, what)) = unsupported.iter().find(|(bad, _)| *bad) {
                return invalid(format!(
                    "beam search ({} beams) cannot be combined with {what}",
                    p.beam_width
                ));
            }
        }
        let id = request.id.clone();
        let clamp = |name: &str, value: &mut f32, low: f32, high: f32| {
            let clamped = value.clamp(low, high);
            if clamped != *value {
                tracing::warn!(request = %id, "{name} {value} clamped to {clamped}");
                *value = clamped;
            }
        };
        clamp("temperature", &mut p.temperature, 0.0, MAX_TEMPERATURE);
        clamp("top_p", &mut p.top_p, 0.0, 1.0);
        let (low, high) = REPETITION_PENALTY_RANGE;
        clamp("repetition_penalty", &mut p.repetition_penalty, low, high);
        p.top_k = p.top_k.min(self.vocab_size);
        p.max_tokens = p.max_tokens.min(self.max_seq_len - prompt_len);

        // A request that could not fit even with the whole cache to itself would wait
        // forever; refuse it now.
        // Beams share their prompt's blocks but may each need their own for the rest
        // (for all of it without the prefix cache).
        let tokens = prompt_len + p.max_tokens;
        let own_blocks = if self.beams_share_prompt {
            p.max_tokens.div_ceil(self.block_size) + 1
        } else {
            tokens.div_ceil(self.block_size)
        };
        let needed_blocks = tokens.div_ceil(self.block_size) + (p.beam_width - 1) * own_blocks;
        if needed_blocks > self.total_blocks {
            return Err(EngineError::RequestTooLarge {
                tokens,
                needed_blocks,
                total_blocks: self.total_blocks,
            });
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn processor() -> RequestProcessor {
        RequestProcessor::new(100, 64, 4, 10, 8, false)
    }

    fn request(prompt: Vec<u32>, params: GenerationParams) -> EngineCoreRequest {
        EngineCoreRequest::new(prompt).with_params(params)
    }

    fn error_text(result: Result<EngineCoreRequest>) -> String {
        result.expect_err("request should be refused").to_string()
    }

    #[test]
    fn bad_requests_are_refused_with_the_reason() {
        let p = processor();
        let ok = GenerationParams::default();
        assert!(error_text(p.process(request(vec![], ok.clone()))).contains("prompt is empty"));
        assert!(error_text(p.process(request(vec![1, 100], ok.clone())))
            .contains("token 100 is outside"));
        assert!(error_text(p.process(request(vec![1; 64], ok.clone()))).contains("at most 63"));
        let zero = GenerationParams {
            max_tokens: 0,
            ..ok.clone()
        };
        assert!(error_text(p.process(request(vec![1], zero))).contains("max_tokens"));
        let nan = GenerationParams {
            temperature: f32::NAN,
            ..ok.clone()
        };
        assert!(
            error_text(p.process(request(vec![1], nan))).contains("temperature must be a finite")
        );
        let top_p = GenerationParams {
            top_p: 0.0,
            ..ok.clone()
        };
        assert!(error_text(p.process(request(vec![1], top_p))).contains("top_p must be above 0"));
        let stop = GenerationParams {
            stop_token_ids: vec![500],
            ..ok
        };
        assert!(error_text(p.process(request(vec![1], stop))).contains("stop token 500"));
    }

    #[test]
    fn audio_is_required_exactly_where_the_model_listens() {
        let listening = RequestProcessor::new(100, 64, 4, 100, 8, true);
        let ok = GenerationParams::default();
        let none = request(vec![1], ok.clone());
        assert!(error_text(listening.process(none)).contains("the request has none"));
        let empty = request(vec![1], ok.clone()).with_audio(Vec::<f32>::new());
        assert!(error_text(listening.process(empty)).contains("audio is empty"));
        let nan = request(vec![1], ok.clone()).with_audio(vec![0.0, f32::NAN]);
        assert!(error_text(listening.process(nan)).contains("not finite"));
        let good = request(vec![1], ok.clone()).with_audio(vec![0.0; 160]);
        assert!(listening.process(good).is_ok());
        let deaf = request(vec![1], ok).with_audio(vec![0.0; 160]);
        assert!(error_text(processor().process(deaf)).contains("does not take audio"));
    }

    #[test]
    fn parameters_are_clamped_into_range() {
        let params = GenerationParams {
            temperature: 9.0,
            top_p: 3.0,
            top_k: 1000,
            repetition_penalty: 7.0,
            max_tokens: 20,
            ..GenerationParams::default()
        };
        let roomy = RequestProcessor::new(100, 64, 4, 100, 8, false);
        let out = roomy
            .process(request(vec![1; 30], params))
            .expect("valid request");
        assert_eq!(out.params.temperature, MAX_TEMPERATURE);
        assert_eq!(out.params.top_p, 1.0);
        assert_eq!(out.params.top_k, 100);
        assert_eq!(out.params.repetition_penalty, 2.0);
        assert_eq!(out.params.max_tokens, 20);
        let long = GenerationParams {
            max_tokens: 1000,
            ..GenerationParams::default()
        };
        let out = roomy.process(request(vec![1; 30], long)).expect("valid");
        assert_eq!(out.params.max_tokens, 34, "clamped to the context length");
    }

    #[test]
    fn without_the_prefix_cache_every_beam_must_fit_whole() {
        // 10 blocks of 4 tokens; 8 + 4 tokens need 3 blocks a sequence.
        let beams = |width| GenerationParams {
            max_tokens: 4,
            beam_width: width,
            ..GenerationParams::default()
        };
        let shared = processor();
        let unshared = processor().without_shared_beam_prompts();
        // Sharing the prompt: 3 + 2 · (1 + 1) = 7 blocks; not: 3 · 3 = 9.
        assert!(shared.process(request(vec![1; 8], beams(3))).is_ok());
        assert!(unshared.process(request(vec![1; 8], beams(3))).is_ok());
        // Four beams: 3 + 3 · 2 = 9 shared, 4 · 3 = 12 not.
        assert!(shared.process(request(vec![1; 8], beams(4))).is_ok());
        assert!(matches!(
            unshared.process(request(vec![1; 8], beams(4))),
            Err(EngineError::RequestTooLarge {
                needed_blocks: 12,
                ..
            })
        ));
    }

    #[test]
    fn a_request_larger_than_the_whole_cache_is_refused() {
        // 10 blocks of 4 tokens hold 40 tokens; 30 + 20 need 13 blocks.
        let params = GenerationParams {
            max_tokens: 20,
            ..GenerationParams::default()
        };
        let err = processor()
            .process(request(vec![1; 30], params))
            .expect_err("too large");
        assert!(matches!(
            err,
            EngineError::RequestTooLarge {
                tokens: 50,
                needed_blocks: 13,
                total_blocks: 10
            }
        ));
        assert!(err.to_string().contains("needs 13 KV-cache blocks"));
    }
}
