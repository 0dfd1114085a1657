//! The state of one request while the engine holds it.

use std::sync::Arc;
use std::time::Instant;

use super::request::EngineCoreRequest;
use super::types::{GenerationParams, Priority, RequestId};
use crate::models::shared::sampling::Sampler;

pub struct Sequence {
    pub id: RequestId,
    /// Prompt followed by the generated tokens.
    pub tokens: Vec<u32>,
    pub prompt_len: usize,
    /// Leading tokens whose K/V are in the cache. Reset to 0 when preempted: the
    /// sequence is then recomputed from its tokens.
    pub num_computed: usize,
    pub params: GenerationParams,
    pub priority: Priority,
    pub streaming: bool,
    /// Admission order, the FCFS key.
    pub arrival_order: u64,
    pub sampler: Sampler,
    /// Logits of each generated token, kept when `params.return_logits` (of the first
    /// only when `params.first_logits`).
    pub logits: Vec<Vec<f32>>,
    /// Log-probability of each generated token under the processed logits.
    pub logprobs: Vec<f32>,
    /// The `params.top_logprobs` likeliest tokens at each generated position.
    pub top_logprobs: Vec<Vec<(u32, f32)>>,
    pub audio: Option<Arc<[f32]>>,
    /// For a request whose audio arrives as it runs: how far that audio reaches.
    pub live_input: Option<LiveInput>,
    /// Separates this sequence's cached prefixes from those of requests with other
    /// audio: a decoder attending to audio has K/V that depend on it, not only on the
    /// tokens (see `KvCacheManager::lookup_prefix`).
    pub cache_salt: u64,
    /// The request this sequence is a beam of, when the request searches beams (the
    /// first beam has the request's id, the others are forked from it).
    pub beam_of: Option<RequestId>,
    pub arrived_at: Instant,
    pub first_scheduled_at: Option<Instant>,
    pub first_token_at: Option<Instant>,
    pub num_preemptions: u32,
}

impl Sequence {
    pub fn new(request: EngineCoreRequest, arrival_order: u64) -> Self {
        // Live audio is known only as it comes: no other request's cached blocks are
        // this one's, so its salt is its own id's.
        let cache_salt = if request.live_audio {
            id_hash(&request.id)
        } else {
            request.audio.as_deref().map_or(0, audio_hash)
        };
        let live_input = request.live_audio.then_some(LiveInput::default());
        Self {
            live_input,
            cache_salt,
            beam_of: (request.params.beam_width > 1).then(|| request.id.clone()),
            id: request.id,
            prompt_len: request.prompt_tokens.len(),
            tokens: request.prompt_tokens,
            num_computed: 0,
            sampler: Sampler::new(&request.params),
            params: request.params,
            priority: request.priority,
            streaming: request.streaming,
            arrival_order,
            logits: Vec::new(),
            logprobs: Vec::new(),
            top_logprobs: Vec::new(),
            audio: request.audio,
            arrived_at: Instant::now(),
            first_scheduled_at: None,
            first_token_at: None,
            num_preemptions: 0,
        }
    }

    /// A copy of this beam under a new id, at the same point: same tokens, same
    /// computed prefix (whose blocks the caller shares through the KV cache).
    pub fn fork(&self, id: RequestId) -> Self {
        Self {
            id,
            tokens: self.tokens.clone(),
            prompt_len: self.prompt_len,
            num_computed: self.num_computed,
            params: self.params.clone(),
            priority: self.priority,
            streaming: self.streaming,
            arrival_order: self.arrival_order,
            sampler: self.sampler.clone(),
            logits: self.logits.clone(),
            logprobs: self.logprobs.clone(),
            top_logprobs: self.top_logprobs.clone(),
            audio: self.audio.clone(),
            live_input: self.live_input,
            cache_salt: self.cache_salt,
            beam_of: self.beam_of.clone(),
            arrived_at: self.arrived_at,
            first_scheduled_at: self.first_scheduled_at,
            first_token_at: self.first_token_at,
            num_preemptions: self.num_preemptions,
        }
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn output_tokens(&self) -> &[u32] {
        &self.tokens[self.prompt_len..]
    }

    /// Tokens not yet in the cache.
    pub fn num_uncomputed(&self) -> usize {
        self.tokens.len() - self.num_computed
    }

    /// Uncomputed tokens that can run now: all of them, but for live audio only those
    /// whose audio has arrived.
    pub fn num_runnable(&self) -> usize {
        match self.live_input {
            Some(input) => self
                .num_uncomputed()
                .min(input.positions.saturating_sub(self.num_computed)),
            None => self.num_uncomputed(),
        }
    }

    /// Whether the sequence has nothing to run until more of its live audio arrives.
    pub fn awaits_input(&self) -> bool {
        self.live_input.is_some() && self.num_runnable() == 0 && !self.input_exhausted()
    }

    /// Whether live audio has ended and every position it has was run: nothing more
    /// can be generated.
    pub fn input_exhausted(&self) -> bool {
        self.live_input
            .is_some_and(|input| input.ended && self.len() >= input.positions)
    }

    /// Whether only the last sampled token is left to run (the decode phase).
    pub fn is_decoding(&self) -> bool {
        self.num_computed >= self.prompt_len && self.num_uncomputed() == 1
    }
}

/// How far a live request's audio reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveInput {
    /// Positions whose audio has arrived.
    pub positions: usize,
    /// No more audio will come.
    pub ended: bool,
}

fn id_hash(id: &RequestId) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

/// A content hash of audio: equal audio gives equal K/V for equal tokens. It runs for
/// every request over its audio (up to 30 s, and beam search makes a request per beam
/// per step), so it mixes 64-bit words with one multiply each (FxHash's step, about a
/// quarter of a millisecond for 30 s) and finishes with MurmurHash3's avalanche;
/// SipHash over each sample took 4 ms.
pub fn audio_hash(samples: &[f32]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut h = samples.len() as u64;
    let mut pairs = samples.chunks_exact(2);
    for pair in &mut pairs {
        h = step(
            h,
            u64::from(pair[0].to_bits()) | u64::from(pair[1].to_bits()) << 32,
        );
    }
    if let [last] = pairs.remainder() {
        h = step(h, u64::from(last.to_bits()));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::audio_hash;

    #[test]
    fn equal_audio_hashes_equal_and_any_change_differs() {
        let audio: Vec<f32> = (0..48_001).map(|i| (i as f32 * 0.01).sin()).collect();
        assert_eq!(audio_hash(&audio), audio_hash(&audio.clone()));
        let mut one_sample = audio.clone();
        one_sample[12_345] += 1e-6;
        let mut longer = audio.clone();
        longer.push(0.0);
        let shorter = &audio[..audio.len() - 1];
        let hashes = [
            audio_hash(&audio),
            audio_hash(&one_sample),
            audio_hash(&longer),
            audio_hash(shorter),
            audio_hash(&[]),
            audio_hash(&[0.0]),
        ];
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
