//! Turns what a step produced into what callers receive: streamed token chunks and the
//! final output with its statistics.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::sequence::Sequence;
use super::types::{FinishReason, RequestId};

/// Timing and throughput of one finished request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestStats {
    /// From arrival to first being scheduled.
    pub queue_time: Duration,
    /// From arrival to the first generated token.
    pub time_to_first_token: Option<Duration>,
    /// From arrival to finish.
    pub total_time: Duration,
    /// Generated tokens per second from the first token to the last.
    pub tokens_per_sec: f64,
    pub num_preemptions: u32,
    /// Audio the output stands for, for models whose tokens are audio frames.
    pub audio_duration: Option<Duration>,
    /// `total_time / audio_duration`; below 1 is faster than real time.
    pub rtf: Option<f64>,
}

/// The complete result of a request.
#[derive(Debug, Clone, Serialize)]
pub struct EngineOutput {
    pub request_id: RequestId,
    pub prompt_len: usize,
    /// Generated tokens (not the prompt).
    pub tokens: Vec<u32>,
    /// Logits of each generated token, when the request asked for them.
    pub logits: Vec<Vec<f32>>,
    /// Log-probability of each generated token (after the model's logits processing,
    /// before sampling's temperature and penalties).
    pub logprobs: Vec<f32>,
    /// The likeliest tokens and their log-probabilities at each generated position,
    /// when the request asked for them.
    pub top_logprobs: Vec<Vec<(u32, f32)>>,
    /// The prompt's attention over the audio, when the request asked for it and the
    /// model can give it.
    #[serde(skip)]
    pub alignment: Option<AudioAlignment>,
    pub finish_reason: FinishReason,
    pub stats: RequestStats,
}

/// Attention logits (scaled query·key, before softmax) from each prompt position to
/// each audio frame the request's audio covers, in the heads a model aligns text with
/// speech by (Whisper's alignment heads):
/// `logits[(head * positions + position) * frames + frame]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioAlignment {
    pub heads: usize,
    pub positions: usize,
    pub frames: usize,
    pub logits: Vec<f32>,
}

/// A piece of a request's output as it is generated. The last one carries the
/// complete output.
#[derive(Debug, Clone, Serialize)]
pub struct StreamingOutput {
    pub request_id: RequestId,
    /// 0, 1, 2, … for each chunk of this request.
    pub sequence: usize,
    /// New tokens since the previous chunk.
    pub tokens: Vec<u32>,
    pub finished: Option<EngineOutput>,
}

impl StreamingOutput {
    pub fn is_final(&self) -> bool {
        self.finished.is_some()
    }
}

pub struct OutputProcessor {
    audio_seconds_per_token: Option<f64>,
    next_chunk: HashMap<RequestId, usize>,
}

impl OutputProcessor {
    pub fn new(audio_seconds_per_token: Option<f64>) -> Self {
        Self {
            audio_seconds_per_token,
            next_chunk: HashMap::new(),
        }
    }

    /// A chunk with `tokens`, new for a sequence that goes on.
    pub fn chunk(&mut self, seq: &Sequence, tokens: Vec<u32>) -> StreamingOutput {
        StreamingOutput {
            request_id: seq.id.clone(),
            sequence: self.next_index(&seq.id),
            tokens,
            finished: None,
        }
    }

    /// The last chunk of a finished sequence, with `tokens` new since the previous one.
    pub fn finish(
        &mut self,
        seq: Sequence,
        tokens: Vec<u32>,
        reason: FinishReason,
        alignment: Option<AudioAlignment>,
    ) -> StreamingOutput {
        let sequence = self.next_index(&seq.id);
        self.next_chunk.remove(&seq.id);
        let stats = self.stats(&seq, Instant::now());
        StreamingOutput {
            request_id: seq.id.clone(),
            sequence,
            tokens,
            finished: Some(EngineOutput {
                request_id: seq.id.clone(),
                prompt_len: seq.prompt_len,
                tokens: seq.output_tokens().to_vec(),
                logits: seq.logits,
                logprobs: seq.logprobs,
                top_logprobs: seq.top_logprobs,
                alignment,
                finish_reason: reason,
                stats,
            }),
        }
    }

    fn next_index(&mut self, id: &RequestId) -> usize {
        let next = self.next_chunk.entry(id.clone()).or_insert(0);
        *next += 1;
        *next - 1
    }

    fn stats(&self, seq: &Sequence, now: Instant) -> RequestStats {
        let generated = seq.output_tokens().len();
        let total_time = now - seq.arrived_at;
        let tokens_per_sec = match seq.first_token_at {
            // The first token's time is its prefill's; the rate is the decode rate after it.
            Some(first) if generated > 1 && now > first => {
                (generated - 1) as f64 / (now - first).as_secs_f64()
            }
            _ => 0.0,
        };
        let audio_duration = self
            .audio_seconds_per_token
            .map(|s| Duration::from_secs_f64(s * generated as f64));
        RequestStats {
            queue_time: seq
                .first_scheduled_at
                .map_or(total_time, |t| t - seq.arrived_at),
            time_to_first_token: seq.first_token_at.map(|t| t - seq.arrived_at),
            total_time,
            tokens_per_sec,
            num_preemptions: seq.num_preemptions,
            rtf: audio_duration
                .filter(|d| !d.is_zero())
                .map(|d| total_time.as_secs_f64() / d.as_secs_f64()),
            audio_duration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::request::EngineCoreRequest;

    #[test]
    fn chunks_are_numbered_and_the_last_carries_output_and_rtf() {
        let mut seq = Sequence::new(EngineCoreRequest::new(vec![5, 6]), 0);
        let mut outputs = OutputProcessor::new(Some(0.08));
        let start = Instant::now();
        seq.first_scheduled_at = Some(start);
        seq.first_token_at = Some(start);
        seq.tokens.push(7);
        let first = outputs.chunk(&seq, vec![7]);
        assert_eq!((first.sequence, first.is_final()), (0, false));
        seq.tokens.push(8);
        let last = outputs.finish(seq, vec![8], FinishReason::Stop, None);
        assert_eq!(last.sequence, 1);
        let out = last.finished.expect("final chunk carries the output");
        assert_eq!(out.tokens, vec![7, 8]);
        assert_eq!(out.prompt_len, 2);
        assert_eq!(out.stats.audio_duration, Some(Duration::from_millis(160)));
        let rtf = out.stats.rtf.expect("audio model has an RTF");
        assert!((rtf - out.stats.total_time.as_secs_f64() / 0.16).abs() < 1e-9);
        assert!(
            outputs.next_chunk.is_empty(),
            "finished requests leave no state"
        );
    }
}
