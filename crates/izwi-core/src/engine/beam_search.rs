//! Beam search inside the engine. A request's beams are sequences of the batch: each
//! step runs them together, and the shared part of their contexts is the same KV
//! blocks (forked, reference counted), so a beam costs one decoded token per step, not
//! a request. This file holds the search's bookkeeping and its choice of continuations;
//! the engine core moves the sequences.

use std::collections::HashMap;

use super::types::RequestId;

/// A finished candidate: generated tokens and their log-probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    /// Whether it ended with an end-of-sequence or stop token (else it ran out of length).
    pub ended: bool,
}

impl Hypothesis {
    /// Log-probability per token, the end token's probability counted but not the end
    /// token itself (OpenAI's maximum-likelihood ranking without a length penalty).
    pub fn rank(&self) -> f64 {
        let sum: f64 = self.logprobs.iter().map(|&l| f64::from(l)).sum();
        let text = self.tokens.len() - usize::from(self.ended);
        sum / text.max(1) as f64
    }
}

/// One chosen continuation: beam `source` (an index into [`BeamSearch::beams`])
/// extended by `token`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extension {
    pub source: usize,
    pub token: u32,
    pub logprob: f32,
}

/// What one step of the search decided.
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// The beams to go on with, best first.
    pub kept: Vec<Extension>,
    /// Continuations that ended, to be set aside as hypotheses.
    pub ended: Vec<Extension>,
}

/// The state of one request's search between steps.
#[derive(Debug)]
pub struct BeamSearch {
    pub width: usize,
    /// The live beams' sequence ids, best first.
    pub beams: Vec<RequestId>,
    /// Each live beam's likeliest next tokens, once its logits of this step are known.
    candidates: HashMap<RequestId, Vec<(u32, f32)>>,
    pub finished: Vec<Hypothesis>,
    forks: usize,
}

impl BeamSearch {
    /// A search whose first beam is the request's own sequence.
    pub fn new(request: RequestId, width: usize) -> Self {
        Self {
            width,
            beams: vec![request],
            candidates: HashMap::new(),
            finished: Vec::new(),
            forks: 0,
        }
    }

    /// A fresh id for a forked beam of `request`.
    pub fn fork_id(&mut self, request: &RequestId) -> RequestId {
        self.forks += 1;
        RequestId::from(format!("{request}~beam{}", self.forks))
    }

    /// Records a beam's likeliest next tokens (`width + 1` of them, best first).
    pub fn record(&mut self, beam: &RequestId, candidates: Vec<(u32, f32)>) {
        self.candidates.insert(beam.clone(), candidates);
    }

    /// A beam was preempted: its logits will be computed again.
    pub fn forget(&mut self, beam: &RequestId) {
        self.candidates.remove(beam);
    }

    /// Whether every live beam's candidates of this step are in.
    pub fn is_ready(&self) -> bool {
        self.beams.iter().all(|b| self.candidates.contains_key(b))
    }

    /// Chooses this step's continuations, given each live beam's summed log-probability
    /// (in [`beams`](Self::beams) order) and whether a token ends a sequence. As
    /// OpenAI's decoder: every beam's candidates are ranked together by the score
    /// they reach; an ending candidate is set aside while fewer than `width` have
    /// ended, the others are kept until `width` are kept. Clears the candidates.
    pub fn select(&mut self, scores: &[f64], ends: impl Fn(u32) -> bool) -> Selection {
        let mut ranked: Vec<(f64, Extension)> = Vec::new();
        for (source, (beam, score)) in self.beams.iter().zip(scores).enumerate() {
            for &(token, logprob) in self.candidates.get(beam).into_iter().flatten() {
                if logprob.is_finite() {
                    let extension = Extension {
                        source,
                        token,
                        logprob,
                    };
                    ranked.push((score + f64::from(logprob), extension));
                }
            }
        }
        self.candidates.clear();
        // Stable: equal scores keep beam order, then candidate order.
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut selection = Selection::default();
        let mut finished = self.finished.len();
        for (_, extension) in ranked {
            if selection.kept.len() == self.width {
                break;
            }
            if !ends(extension.token) {
                selection.kept.push(extension);
            } else if finished < self.width {
                finished += 1;
                selection.ended.push(extension);
            }
        }
        selection
    }

    /// The best hypothesis by [`Hypothesis::rank`] (the last of equals).
    pub fn best(hypotheses: Vec<Hypothesis>) -> Option<Hypothesis> {
        hypotheses
            .into_iter()
            .max_by(|a, b| a.rank().total_cmp(&b.rank()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: u32 = 0;

    fn search(beams: usize, width: usize) -> BeamSearch {
        let mut search = BeamSearch::new(RequestId::from("r"), width);
        search.beams = (0..beams)
            .map(|b| RequestId::from(format!("b{b}")))
            .collect();
        search
    }

    fn ext(source: usize, token: u32, logprob: f32) -> Extension {
        Extension {
            source,
            token,
            logprob,
        }
    }

    #[test]
    fn the_best_continuations_across_beams_are_kept_best_first() {
        let mut s = search(2, 2);
        s.record(
            &RequestId::from("b0"),
            vec![(5, -0.1), (6, -2.0), (7, -3.0)],
        );
        assert!(!s.is_ready(), "b1 has not reported yet");
        s.record(
            &RequestId::from("b1"),
            vec![(8, -0.2), (9, -0.3), (10, -5.0)],
        );
        assert!(s.is_ready());
        // b0 stands at -1.0, b1 at -0.5: b1+8 = -0.7, b1+9 = -0.8, b0+5 = -1.1.
        let picked = s.select(&[-1.0, -0.5], |t| t == END);
        assert_eq!(picked.kept, vec![ext(1, 8, -0.2), ext(1, 9, -0.3)]);
        assert!(picked.ended.is_empty());
        assert!(!s.is_ready(), "candidates are cleared");
    }

    #[test]
    fn endings_are_set_aside_only_while_fewer_than_width_have_ended() {
        let mut s = search(1, 2);
        s.record(
            &RequestId::from("b0"),
            vec![(END, -0.1), (4, -0.2), (5, -0.3)],
        );
        let picked = s.select(&[0.0], |t| t == END);
        assert_eq!(picked.ended, vec![ext(0, END, -0.1)]);
        assert_eq!(picked.kept, vec![ext(0, 4, -0.2), ext(0, 5, -0.3)]);

        let mut full = search(1, 2);
        full.finished = vec![
            Hypothesis {
                tokens: vec![1, END],
                logprobs: vec![-1.0, -1.0],
                ended: true,
            };
            2
        ];
        full.record(&RequestId::from("b0"), vec![(END, -0.1), (4, -0.2)]);
        let picked = full.select(&[0.0], |t| t == END);
        assert!(picked.ended.is_empty(), "two have ended already");
        assert_eq!(picked.kept, vec![ext(0, 4, -0.2)]);
    }

    #[test]
    fn impossible_tokens_are_never_chosen() {
        let mut s = search(1, 3);
        s.record(
            &RequestId::from("b0"),
            vec![(3, -0.5), (4, f32::NEG_INFINITY), (5, f32::NAN)],
        );
        assert_eq!(s.select(&[0.0], |t| t == END).kept, vec![ext(0, 3, -0.5)]);
    }

    #[test]
    fn ranking_is_per_text_token_with_the_end_probability_counted() {
        let short = Hypothesis {
            tokens: vec![1, END],
            logprobs: vec![-1.0, -1.0],
            ended: true,
        };
        let long = Hypothesis {
            tokens: vec![1, 2, 3, END],
            logprobs: vec![-1.0, -0.5, -0.5, -0.5],
            ended: true,
        };
        assert_eq!(short.rank(), -2.0);
        assert!((long.rank() - -2.5 / 3.0).abs() < 1e-12);
        let cut = Hypothesis {
            tokens: vec![1, 2],
            logprobs: vec![-1.0, -1.0],
            ended: false,
        };
        assert_eq!(cut.rank(), -1.0, "a beam cut by length counts every token");
        let best = BeamSearch::best(vec![short, long.clone()]).expect("one is best");
        assert_eq!(best, long);
    }

    #[test]
    fn fork_ids_are_distinct() {
        let mut s = search(1, 2);
        let r = RequestId::from("r");
        assert_ne!(s.fork_id(&r), s.fork_id(&r));
    }
}
