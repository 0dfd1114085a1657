//! Plain data types shared by every engine component.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// Index of one KV-cache block.
pub type BlockId = u32;

/// Identifies a request for its whole life in the engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestId(String);

impl RequestId {
    /// A new process-unique id (`req-N`).
    pub fn generate() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(format!("req-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Request priority; higher runs first under [`SchedulingPolicy::Priority`] and
/// lower is preempted first when the KV cache runs out.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Critical,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SchedulingPolicy {
    /// First come, first served.
    #[default]
    Fcfs,
    /// Highest priority first, then arrival order.
    Priority,
}

/// Sampling and stopping parameters of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationParams {
    /// Most new tokens to generate.
    pub max_tokens: usize,
    /// 0 means greedy decoding.
    pub temperature: f32,
    /// Keep only the k most likely tokens; 0 disables.
    pub top_k: usize,
    /// Keep the smallest set of tokens whose probability reaches p; 1.0 disables.
    pub top_p: f32,
    /// Divides positive logits (multiplies negative ones) of tokens already seen; 1.0 disables.
    pub repetition_penalty: f32,
    /// Seed for sampling; the same seed gives the same output.
    pub seed: Option<u64>,
    /// Extra tokens that end generation (the model's end-of-sequence tokens always do
    /// unless `ignore_eos`).
    pub stop_token_ids: Vec<u32>,
    pub ignore_eos: bool,
    /// Return the full logits row of every generated token (tests, scoring).
    pub return_logits: bool,
    /// Return the full logits row of the first generated token only: what the prompt
    /// predicts (Whisper's no-speech probability, read from the decode itself).
    pub first_logits: bool,
    /// Return the most likely tokens, up to this many, with their log-probabilities,
    /// at every generated position (beam search, confidence).
    pub top_logprobs: usize,
    /// For models that read audio: return the attention from every prompt position
    /// to the audio frames in the heads that align text with speech (word timestamps).
    pub return_alignment: bool,
    /// Beams searched (greedy at every step, the `beam_width` best continuations kept);
    /// 1 decodes one sequence. The output is the best beam that ended, ranked by its
    /// log-probability per token.
    pub beam_width: usize,
}

impl Default for GenerationParams {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            repetition_penalty: 1.0,
            seed: None,
            stop_token_ids: Vec::new(),
            ignore_eos: false,
            return_logits: false,
            first_logits: false,
            top_logprobs: 0,
            return_alignment: false,
            beam_width: 1,
        }
    }
}

/// Why a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishReason {
    /// An end-of-sequence or stop token was generated.
    Stop,
    /// `max_tokens` or the model's context length was reached.
    Length,
    /// Aborted by the caller or because the engine stopped.
    Aborted,
    /// The model failed on this request; the message says why.
    Failed(String),
}
