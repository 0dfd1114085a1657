//! Whisper's rules on the next token, as OpenAI's decoder applies them: suppressed
//! tokens, no blank or end at the start, and the timestamp grammar.

use super::tokens::SpecialTokens;

/// Timestamps at the start of a window may not exceed 1 s (50 × 0.02 s).
const MAX_INITIAL_TIMESTAMP_INDEX: u32 = 50;

pub struct LogitRules {
    special: SpecialTokens,
    always_suppressed: Vec<u32>,
}

impl LogitRules {
    pub fn new(special: SpecialTokens) -> Self {
        let s = &special;
        let mut always_suppressed = s.suppress.clone();
        always_suppressed.extend([s.transcribe, s.translate, s.sot, s.sot_prev, s.no_speech]);
        always_suppressed.extend(s.languages.iter().map(|&(_, t)| t));
        Self {
            special,
            always_suppressed,
        }
    }

    /// Where the text starts: after `<|startoftranscript|>` and the language, task and
    /// `<|notimestamps|>` tokens that follow it; and whether timestamps are on. Read from
    /// the tokens, so a prompt that does not end with that sequence still decodes by
    /// Whisper's rules (the prompt length is the fallback when it has none).
    fn sample_begin(&self, tokens: &[u32], prompt_len: usize) -> (usize, bool) {
        let s = &self.special;
        let Some(sot) = tokens.iter().rposition(|&t| t == s.sot) else {
            return (prompt_len.min(tokens.len()), true);
        };
        let mut begin = sot + 1;
        let mut timestamps = true;
        while let Some(&t) = tokens.get(begin) {
            let is_language = s.languages.iter().any(|&(_, l)| l == t);
            if t == s.no_timestamps {
                timestamps = false;
            } else if !(is_language || t == s.transcribe || t == s.translate) {
                break;
            }
            begin += 1;
        }
        (begin, timestamps)
    }

    /// Applies the rules to `logits`, the next-token logits of `tokens`. Timestamp
    /// rules apply unless the start-of-transcript sequence has `<|notimestamps|>`.
    pub fn apply(&self, tokens: &[u32], prompt_len: usize, logits: &mut [f32]) {
        let s = &self.special;
        let vocab = logits.len();
        let (begin, timestamps) = self.sample_begin(tokens, prompt_len);
        let generated = &tokens[begin..];
        for &t in &self.always_suppressed {
            forbid(logits, t as usize..t as usize + 1);
        }
        if generated.is_empty() {
            for &t in &s.begin_suppress {
                forbid(logits, t as usize..t as usize + 1);
            }
        }
        forbid(
            logits,
            s.no_timestamps as usize..s.no_timestamps as usize + 1,
        );
        if !timestamps {
            forbid(logits, s.timestamp_begin as usize..vocab);
            return;
        }
        let ts = s.timestamp_begin as usize;

        let is_ts = |t: &u32| *t >= s.timestamp_begin;
        let last_was_ts = generated.last().is_some_and(is_ts);
        let penultimate_was_ts = generated.len() < 2 || is_ts(&generated[generated.len() - 2]);
        if last_was_ts {
            if penultimate_was_ts {
                // A segment just closed: text must follow.
                forbid(logits, ts..vocab);
            } else {
                // A segment's end: only a timestamp (the next start) or the end.
                forbid(logits, 0..s.eot as usize);
            }
        }
        if let Some(&last_ts) = generated.iter().rev().find(|t| is_ts(t)) {
            // Time never runs backwards; a new segment starts after the last one ends.
            let floor = if last_was_ts && !penultimate_was_ts {
                last_ts
            } else {
                last_ts + 1
            };
            forbid(logits, ts..floor as usize);
        }
        if generated.is_empty() {
            forbid(logits, 0..ts);
            forbid(logits, ts + MAX_INITIAL_TIMESTAMP_INDEX as usize + 1..vocab);
        }
        // If all timestamps together are likelier than any single text token, take one.
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if max == f32::NEG_INFINITY {
            return;
        }
        let log_sum = |range: &[f32]| -> f32 {
            let sum: f32 = range.iter().map(|&l| (l - max).exp()).sum();
            max + sum.ln()
        };
        let timestamp_mass = log_sum(&logits[ts.min(vocab)..]);
        let best_text = logits[..ts.min(vocab)]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        if timestamp_mass > best_text {
            forbid(logits, 0..ts);
        }
    }
}

fn forbid(logits: &mut [f32], range: std::ops::Range<usize>) {
    let vocab = logits.len();
    for l in &mut logits[range.start.min(vocab)..range.end.min(vocab)] {
        *l = f32::NEG_INFINITY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A toy vocabulary: text 0..10, eot 10, sot 11, sot_prev 12, transcribe 13,
    // translate 14, no_speech 15, no_timestamps 16, timestamps 17..(17+60).
    fn rules() -> LogitRules {
        LogitRules::new(SpecialTokens {
            eot: 10,
            sot: 11,
            sot_prev: 12,
            transcribe: 13,
            translate: 14,
            no_timestamps: 16,
            no_speech: 15,
            timestamp_begin: 17,
            languages: Vec::new(),
            suppress: vec![3],
            begin_suppress: vec![0, 10],
        })
    }

    const VOCAB: usize = 17 + 60;

    fn allowed(tokens: &[u32], prompt_len: usize, logits: Option<Vec<f32>>) -> Vec<usize> {
        let mut logits = logits.unwrap_or_else(|| vec![0.0; VOCAB]);
        rules().apply(tokens, prompt_len, &mut logits);
        (0..VOCAB).filter(|&i| logits[i].is_finite()).collect()
    }

    #[test]
    fn without_timestamps_only_text_and_end_remain() {
        let got = allowed(&[11, 13, 16, 5], 3, None);
        assert_eq!(got, vec![0, 1, 2, 4, 5, 6, 7, 8, 9, 10]);
        let first = allowed(&[11, 13, 16], 3, None);
        assert!(
            !first.contains(&0) && !first.contains(&10),
            "no blank or end first"
        );
    }

    #[test]
    fn a_window_starts_with_a_timestamp_of_at_most_one_second() {
        let got = allowed(&[11, 13], 2, None);
        assert_eq!(got.first(), Some(&17));
        assert_eq!(got.last(), Some(&(17 + 50)));
        assert_eq!(got.len(), 51);
    }

    #[test]
    fn timestamps_come_in_pairs_and_never_go_back() {
        // <|0.20|> text: the closing timestamp must be later than 0.20.
        let mut text_likely = vec![0.0; VOCAB];
        text_likely[5] = 10.0;
        let got = allowed(&[11, 13, 27, 5], 2, Some(text_likely));
        assert!(got.contains(&5) && !got.contains(&27) && got.contains(&28));
        // <|0.20|> text <|0.60|>: an end — next only a timestamp ≥ 0.60 or eot.
        let got = allowed(&[11, 13, 27, 5, 47], 2, None);
        assert!(got.iter().all(|&t| t == 10 || t >= 47), "{got:?}");
        // ... <|0.60|><|0.60|>: a pair closed — text must follow.
        let got = allowed(&[11, 13, 27, 5, 47, 47], 2, None);
        assert!(got.iter().all(|&t| t < 17), "{got:?}");
        assert!(!got.contains(&3), "suppressed tokens stay suppressed");
    }

    #[test]
    fn timestamp_mass_above_the_best_text_token_forces_a_timestamp() {
        // Text token 5 at 2.0, all 60 timestamps at 0.0: log(60) = 4.1 > 2.0.
        let mut logits = vec![-5.0; VOCAB];
        logits[5] = 2.0;
        for l in &mut logits[17..] {
            *l = 0.0;
        }
        let got = allowed(&[11, 13, 27, 5], 2, Some(logits));
        assert!(got.iter().all(|&t| t >= 27), "{got:?}");
    }
}
