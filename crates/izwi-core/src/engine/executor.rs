//! The boundary between the engine and a model: what one step asks a model to compute.

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::conv_state::ConvStateShape;
use super::kv_cache::{KvCacheShape, LayerKvCache};
use super::output::AudioAlignment;
use super::types::{BlockId, RequestId};

/// What the engine needs to know about a model to schedule it and size its cache.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub vocab_size: usize,
    /// Longest sequence the model's positions allow.
    pub max_position_embeddings: usize,
    pub eos_token_ids: Vec<u32>,
    pub kv_cache: KvCacheShape,
    pub device: Device,
    /// Seconds of audio one generated token stands for (codec-token TTS models), used
    /// for the real-time factor; None for text output.
    pub audio_seconds_per_token: Option<f64>,
    /// Whether each request must bring audio (speech recognition) or must not.
    pub requires_audio: bool,
}

/// The new tokens of one sequence in a step.
#[derive(Debug, Clone)]
pub struct SequenceChunk {
    pub request_id: RequestId,
    /// Tokens to run this step (a prefill chunk, or the last sampled token).
    pub tokens: Vec<u32>,
    /// Tokens of the sequence already in the cache: the position of `tokens[0]`.
    pub start_pos: usize,
    /// Physical blocks of the sequence, in position order, covering every position up to
    /// `start_pos + tokens.len()`.
    pub block_table: Vec<BlockId>,
    /// Whether the last token's logits are needed (the chunk ends the sequence).
    pub compute_logits: bool,
    /// The request's audio (16 kHz mono), for models that take audio.
    pub audio: Option<Arc<[f32]>>,
    /// Whether the request wants its prompt's [`AudioAlignment`].
    pub alignment: bool,
    /// The sequence's row in [`ForwardBatch::conv_state`] (hybrid models only).
    pub conv_slot: Option<u32>,
}

impl SequenceChunk {
    /// Positions visible after this step.
    pub fn context_len(&self) -> usize {
        self.start_pos + self.tokens.len()
    }

    /// The cache slot (block * block_size + offset) that holds position `pos`.
    pub fn slot(&self, pos: usize, block_size: usize) -> u32 {
        self.block_table[pos / block_size] * block_size as u32 + (pos % block_size) as u32
    }
}

/// Every sequence scheduled in one step, run in one forward pass.
#[derive(Debug, Clone)]
pub struct ForwardBatch {
    pub sequences: Vec<SequenceChunk>,
    pub block_size: usize,
    /// A hybrid model's convolution state, one `[slots, channels, width]` tensor per
    /// convolution layer, owned by the engine: the model reads the rows of its
    /// sequences' `conv_slot`s and writes their new state back in place. Empty for
    /// models without convolution layers.
    pub conv_state: Vec<Tensor>,
}

impl ForwardBatch {
    pub fn num_tokens(&self) -> usize {
        self.sequences.iter().map(|s| s.tokens.len()).sum()
    }
}

/// A model the engine can run.
pub trait ModelExecutor: Send {
    fn spec(&self) -> &ModelSpec;

    /// The per-sequence state of a hybrid model's convolution layers, which the engine
    /// then keeps for every running sequence (see [`ForwardBatch::conv_state`]); None
    /// for models without them.
    fn conv_state_shape(&self) -> Option<ConvStateShape> {
        None
    }

    /// Runs one step: writes the K/V of every token of `batch` into `kv_cache` through
    /// the block tables, attends over the cached contexts, and returns the logits
    /// (`[n, vocab]`, f32) of the sequences with `compute_logits`, in batch order.
    fn execute(
        &mut self,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
    ) -> candle_core::Result<Tensor>;

    /// Adjusts a sequence's next-token logits before sampling (token suppression,
    /// timestamp rules). `tokens` are the sequence so far, the first `prompt_len` its
    /// prompt.
    fn process_logits(&self, _tokens: &[u32], _prompt_len: usize, _logits: &mut [f32]) {}

    /// The alignment collected for a request that asked for one, as it ends (before
    /// [`ModelExecutor::release`]); None from models that cannot align.
    fn take_alignment(&mut self, _request_id: &RequestId) -> Option<AudioAlignment> {
        None
    }

    /// Whether requests may bring their audio as it is recorded (`live_audio`).
    fn takes_live_audio(&self) -> bool {
        false
    }

    /// More audio (16 kHz mono) of a live request; `ended` says no more will come.
    /// Returns how many positions of the sequence now have all the audio they need.
    fn append_audio(
        &mut self,
        _request_id: &RequestId,
        _samples: &[f32],
        _ended: bool,
    ) -> candle_core::Result<usize> {
        candle_core::bail!("this model does not take live audio")
    }

    /// The request has ended: drop whatever the model keeps for it (cross-attention
    /// keys and values, say).
    fn release(&mut self, _request_id: &RequestId) {}
}
