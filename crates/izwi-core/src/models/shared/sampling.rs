//! Token sampling: greedy, temperature, top-k, top-p and repetition penalty, seeded.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::engine::GenerationParams;

/// Samples the next token of one sequence. Holds the sequence's random state, so a
/// seeded request gives the same tokens however it is batched.
#[derive(Debug, Clone)]
pub struct Sampler {
    temperature: f32,
    top_k: usize,
    top_p: f32,
    repetition_penalty: f32,
    rng: StdRng,
}

impl Sampler {
    pub fn new(params: &GenerationParams) -> Self {
        let rng = match params.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        Self {
            temperature: params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            repetition_penalty: params.repetition_penalty,
            rng,
        }
    }

    /// Picks a token from `logits` (modified in place); `previous` are the tokens of the
    /// sequence so far, for the repetition penalty.
    pub fn sample(&mut self, logits: &mut [f32], previous: &[u32]) -> u32 {
        if self.repetition_penalty != 1.0 {
            apply_repetition_penalty(logits, previous, self.repetition_penalty);
        }
        if self.temperature <= 0.0 {
            return argmax(logits);
        }
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l / self.temperature))
            .collect();
        candidates.sort_unstable_by(|a, b| b.1.total_cmp(&a.1));
        if self.top_k > 0 {
            candidates.truncate(self.top_k);
        }
        let max = candidates[0].1;
        let mut probs: Vec<f32> = candidates.iter().map(|&(_, l)| (l - max).exp()).collect();
        let total: f32 = probs.iter().sum();
        probs.iter_mut().for_each(|p| *p /= total);
        if self.top_p < 1.0 {
            let mut cumulative = 0.0;
            let keep = probs
                .iter()
                .position(|&p| {
                    cumulative += p;
                    cumulative >= self.top_p
                })
                .map_or(probs.len(), |i| i + 1);
            probs.truncate(keep);
            candidates.truncate(keep);
        }
        let total: f32 = probs.iter().sum();
        let mut threshold = self.rng.random::<f32>() * total;
        for (&(token, _), &p) in candidates.iter().zip(&probs) {
            threshold -= p;
            if threshold <= 0.0 {
                return token;
            }
        }
        candidates[candidates.len() - 1].0
    }
}

/// Index of the largest logit; the lowest index wins a tie.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// `log softmax(logits)[token]`.
pub fn log_softmax_at(logits: &[f32], token: u32) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|&l| (l - max).exp()).sum();
    logits[token as usize] - max - sum.ln()
}

/// The `k` likeliest tokens, likeliest first, with their log-probabilities.
pub fn top_logprobs(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_total = max + logits.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
    let mut order: Vec<u32> = (0..logits.len() as u32).collect();
    let k = k.min(order.len());
    if k == 0 {
        return Vec::new();
    }
    order.select_nth_unstable_by(k - 1, |&a, &b| {
        logits[b as usize].total_cmp(&logits[a as usize])
    });
    order.truncate(k);
    order.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
    order
        .into_iter()
        .map(|t| (t, logits[t as usize] - log_total))
        .collect()
}

/// The penalty of the CTRL paper as transformers applies it: once per distinct token.
fn apply_repetition_penalty(logits: &mut [f32], previous: &[u32], penalty: f32) {
    let mut seen = vec![false; logits.len()];
    for &token in previous {
        let i = token as usize;
        if i < logits.len() && !seen[i] {
            seen[i] = true;
            logits[i] = if logits[i] > 0.0 {
                logits[i] / penalty
            } else {
                logits[i] * penalty
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(temperature: f32, top_k: usize, top_p: f32, seed: u64) -> GenerationParams {
        GenerationParams {
            temperature,
            top_k,
            top_p,
            seed: Some(seed),
            ..GenerationParams::default()
        }
    }

    #[test]
    fn log_softmax_at_is_a_normalised_log_probability() {
        let logits = [1.0f32, 2.0, 3.0];
        let total: f32 = (0..3).map(|t| log_softmax_at(&logits, t).exp()).sum();
        assert!((total - 1.0).abs() < 1e-6);
        assert!((log_softmax_at(&[0.0, 0.0], 1) - 0.5f32.ln()).abs() < 1e-6);
        assert_eq!(log_softmax_at(&[f32::NEG_INFINITY, 0.0], 1), 0.0);
    }

    #[test]
    fn top_logprobs_are_the_likeliest_in_order() {
        let logits = [0.5f32, 3.0, -1.0, 2.0];
        let top = top_logprobs(&logits, 2);
        assert_eq!(top.iter().map(|&(t, _)| t).collect::<Vec<_>>(), vec![1, 3]);
        assert!((top[0].1 - log_softmax_at(&logits, 1)).abs() < 1e-6);
        assert_eq!(top_logprobs(&logits, 10).len(), 4);
        assert!(top_logprobs(&logits, 0).is_empty());
    }

    #[test]
    fn greedy_takes_the_largest_logit() {
        let mut sampler = Sampler::new(&params(0.0, 0, 1.0, 1));
        assert_eq!(sampler.sample(&mut [0.1, 2.0, -1.0, 1.9], &[]), 1);
    }

    #[test]
    fn repetition_penalty_moves_greedy_choice_off_a_seen_token() {
        let mut p = params(0.0, 0, 1.0, 1);
        p.repetition_penalty = 1.5;
        let mut sampler = Sampler::new(&p);
        // 2.0 / 1.5 = 1.33 < 1.9: the unseen token wins.
        assert_eq!(sampler.sample(&mut [0.1, 2.0, -1.0, 1.9], &[1, 1]), 3);
        let mut logits = [-1.0, 0.5];
        apply_repetition_penalty(&mut logits, &[0, 0, 0], 2.0);
        assert_eq!(logits, [-2.0, 0.5], "applied once per distinct token");
    }

    #[test]
    fn top_k_one_is_greedy_whatever_the_temperature() {
        let mut sampler = Sampler::new(&params(5.0, 1, 1.0, 7));
        for _ in 0..50 {
            assert_eq!(sampler.sample(&mut [0.0, 0.3, 0.2, 0.1], &[]), 1);
        }
    }

    #[test]
    fn top_p_keeps_only_the_nucleus() {
        // Probabilities ~ [0.64, 0.24, 0.09, 0.03]: p = 0.8 keeps the first two.
        let mut sampler = Sampler::new(&params(1.0, 0, 0.8, 3));
        let mut seen = [0usize; 4];
        for _ in 0..500 {
            let logits = [3.0f32, 2.0, 1.0, 0.0];
            seen[sampler.sample(&mut logits.clone(), &[]) as usize] += 1;
        }
        assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
        assert_eq!(seen[2] + seen[3], 0, "{seen:?}");
    }

    #[test]
    fn temperature_sampling_follows_the_distribution() {
        let mut sampler = Sampler::new(&params(1.0, 0, 1.0, 11));
        let mut ones = 0;
        for _ in 0..4000 {
            // p(1) = e / (1 + e) = 0.731
            if sampler.sample(&mut [0.0, 1.0], &[]) == 1 {
                ones += 1;
            }
        }
        let freq = ones as f64 / 4000.0;
        assert!((freq - 0.731).abs() < 0.03, "frequency {freq}");
    }

    #[test]
    fn the_same_seed_gives_the_same_tokens() {
        let run = |seed| {
            let mut sampler = Sampler::new(&params(1.0, 0, 0.95, seed));
            (0..64)
                .map(|i| {
                    let mut logits: Vec<f32> =
                        (0..32).map(|j| ((i * j) % 7) as f32 * 0.3).collect();
                    sampler.sample(&mut logits, &[])
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
