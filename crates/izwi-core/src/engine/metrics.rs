//! Engine-wide performance figures: latency percentiles, real-time factor, throughput,
//! and scheduler counters, over a rolling window of recent requests.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::output::RequestStats;

const DEFAULT_WINDOW: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricsSnapshot {
    pub total_requests: u64,
    pub failed_requests: u64,
    pub aborted_requests: u64,
    pub total_tokens_generated: u64,
    pub avg_latency_ms: f64,
    pub p50_latency_ms: f64,
    pub p90_latency_ms: f64,
    pub p99_latency_ms: f64,
    pub avg_time_to_first_token_ms: f64,
    /// Mean RTF of the requests that produced audio.
    pub avg_rtf: Option<f64>,
    /// Mean per-request decode rate.
    pub avg_tokens_per_sec: f64,
    /// Tokens generated per second of engine time stepping, all requests together.
    pub throughput_tokens_per_sec: f64,
    pub steps: u64,
    pub avg_batch_size: f64,
    pub preemptions: u64,
    pub chunked_prefills: u64,
    pub prefix_hit_tokens: u64,
}

#[derive(Debug, Clone, Copy)]
struct RequestSample {
    latency: Duration,
    ttft: Option<Duration>,
    tokens_per_sec: f64,
    rtf: Option<f64>,
}

#[derive(Debug, Default)]
struct State {
    window: VecDeque<RequestSample>,
    total_requests: u64,
    failed_requests: u64,
    aborted_requests: u64,
    total_tokens: u64,
    steps: u64,
    scheduled_sequences: u64,
    step_time: Duration,
    preemptions: u64,
    chunked_prefills: u64,
    prefix_hit_tokens: u64,
}

/// Thread-safe collector the engine thread writes and any caller reads.
#[derive(Debug)]
pub struct MetricsCollector {
    window_size: usize,
    state: Mutex<State>,
}

impl Default for MetricsCollector {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW)
    }
}

/// Outcome of a finished request, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Aborted,
    Failed,
}

impl MetricsCollector {
    pub fn new(window_size: usize) -> Self {
        Self {
            window_size: window_size.max(1),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave these counters inconsistent.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn record_request(&self, stats: &RequestStats, tokens_generated: usize, outcome: Outcome) {
        let mut s = self.state();
        s.total_requests += 1;
        s.total_tokens += tokens_generated as u64;
        match outcome {
            Outcome::Failed => s.failed_requests += 1,
            Outcome::Aborted => s.aborted_requests += 1,
            Outcome::Completed => {
                if s.window.len() == self.window_size {
                    s.window.pop_front();
                }
                s.window.push_back(RequestSample {
                    latency: stats.total_time,
                    ttft: stats.time_to_first_token,
                    tokens_per_sec: stats.tokens_per_sec,
                    rtf: stats.rtf,
                });
            }
        }
    }

    /// One engine step: how many sequences ran, how long it took, what the scheduler did.
    pub fn record_step(
        &self,
        sequences: usize,
        started: Instant,
        preemptions: usize,
        chunked_prefills: usize,
    ) {
        let mut s = self.state();
        s.steps += 1;
        s.scheduled_sequences += sequences as u64;
        s.step_time += started.elapsed();
        s.preemptions += preemptions as u64;
        s.chunked_prefills += chunked_prefills as u64;
    }

    pub fn set_prefix_hit_tokens(&self, tokens: u64) {
        self.state().prefix_hit_tokens = tokens;
    }

    pub fn snapshot(&self) -> MetricsSnapshot {
        let s = self.state();
        let mut latencies: Vec<f64> = s
            .window
            .iter()
            .map(|r| r.latency.as_secs_f64() * 1e3)
            .collect();
        latencies.sort_by(f64::total_cmp);
        let mean = |values: &mut dyn Iterator<Item = f64>| {
            let (sum, n) = values.fold((0.0, 0usize), |(sum, n), v| (sum + v, n + 1));
            (n > 0).then(|| sum / n as f64)
        };
        MetricsSnapshot {
            total_requests: s.total_requests,
            failed_requests: s.failed_requests,
            aborted_requests: s.aborted_requests,
            total_tokens_generated: s.total_tokens,
            avg_latency_ms: mean(&mut latencies.iter().copied()).unwrap_or(0.0),
            p50_latency_ms: percentile(&latencies, 50.0),
            p90_latency_ms: percentile(&latencies, 90.0),
            p99_latency_ms: percentile(&latencies, 99.0),
            avg_time_to_first_token_ms: mean(
                &mut s
                    .window
                    .iter()
                    .filter_map(|r| r.ttft)
                    .map(|t| t.as_secs_f64() * 1e3),
            )
            .unwrap_or(0.0),
            avg_rtf: mean(&mut s.window.iter().filter_map(|r| r.rtf)),
            avg_tokens_per_sec: mean(&mut s.window.iter().map(|r| r.tokens_per_sec)).unwrap_or(0.0),
            throughput_tokens_per_sec: if s.step_time.is_zero() {
                0.0
            } else {
                s.total_tokens as f64 / s.step_time.as_secs_f64()
            },
            steps: s.steps,
            avg_batch_size: if s.steps == 0 {
                0.0
            } else {
                s.scheduled_sequences as f64 / s.steps as f64
            },
            preemptions: s.preemptions,
            chunked_prefills: s.chunked_prefills,
            prefix_hit_tokens: s.prefix_hit_tokens,
        }
    }

    pub fn reset(&self) {
        *self.state() = State::default();
    }
}

/// Nearest-rank percentile of sorted values; 0 when empty.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: u64) -> RequestStats {
        RequestStats {
            queue_time: Duration::ZERO,
            time_to_first_token: Some(Duration::from_millis(ms / 2)),
            total_time: Duration::from_millis(ms),
            tokens_per_sec: 10.0,
            num_preemptions: 0,
            audio_duration: None,
            rtf: if ms.is_multiple_of(2) {
                Some(0.5)
            } else {
                None
            },
        }
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let m = MetricsCollector::default();
        for ms in 1..=100 {
            m.record_request(&stats(ms), 3, Outcome::Completed);
        }
        let s = m.snapshot();
        assert_eq!(
            (s.p50_latency_ms, s.p90_latency_ms, s.p99_latency_ms),
            (50.0, 90.0, 99.0)
        );
        assert!((s.avg_latency_ms - 50.5).abs() < 1e-9);
        assert_eq!(s.avg_rtf, Some(0.5));
        assert_eq!(s.total_tokens_generated, 300);
    }

    #[test]
    fn the_window_rolls_and_failures_are_counted_apart() {
        let m = MetricsCollector::new(10);
        for ms in 1..=20 {
            m.record_request(&stats(ms), 1, Outcome::Completed);
        }
        m.record_request(&stats(1000), 0, Outcome::Failed);
        m.record_request(&stats(1000), 0, Outcome::Aborted);
        let s = m.snapshot();
        assert_eq!(
            s.p50_latency_ms, 15.0,
            "only the last 10 completed requests count"
        );
        assert_eq!(
            (s.total_requests, s.failed_requests, s.aborted_requests),
            (22, 1, 1)
        );
        m.reset();
        assert_eq!(m.snapshot(), MetricsSnapshot::default());
    }
}
