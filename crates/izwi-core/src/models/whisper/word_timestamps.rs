//! Word timestamps, as OpenAI's `find_alignment` and `add_word_timestamps` make them.
//! The decoder reads a window's text once more, forced, and the checkpoint's alignment
//! heads (cross-attention heads whose attention follows the speech) give, for each
//! token, a distribution over the audio frames. Normalised per frame, median-filtered
//! along time and averaged over heads, that matrix has a cheapest monotonic path (dynamic
//! time warping) from the first token to the last: where the path reaches a token is
//! when it starts. Tokens join into words (at spaces, or per character for scripts
//! written without spaces), punctuation joins its word, and a few rules keep a word
//! after a pause or at a sentence end from stretching over silence.

use super::tokens::{TokenizerError, WhisperTokenizer};
use crate::engine::AudioAlignment;
use crate::transcript::{Segment, Word};

/// Encoder frames per second (20 ms each).
const FRAMES_PER_SECOND: f64 = 50.0;
/// Samples of 16 kHz audio per encoder frame.
const SAMPLES_PER_FRAME: usize = 320;
const MEDIAN_FILTER_WIDTH: usize = 7;
/// Marks that join the word after them, and those that join the word before them.
const PREPENDED: &str = "\"'“¿([{-";
const APPENDED: &str = "\"'.。,，!！?？:：”)]}、";
const SENTENCE_ENDS: &str = ".。!！?？";
/// Languages written without spaces between words: every complete character is a word.
const UNSPACED_LANGUAGES: &[&str] = &["zh", "ja", "th", "lo", "my", "yue"];
/// The longest a word may be credited with is twice the median word, itself at most this.
const LONGEST_MEDIAN_WORD: f64 = 0.7;

/// A word and the tokens it is made of, with its time inside the window.
#[derive(Debug, Clone, PartialEq)]
struct Timing {
    word: String,
    tokens: Vec<u32>,
    start: f64,
    end: f64,
    probability: f64,
}

/// The words of one window's segments, in place: `segments` are the window's segments
/// (absolute time, `offset` the window's start), `tokens` each segment's text tokens in
/// order, `probabilities` each text token's probability (all segments', in order),
/// `alignment` the forced pass over `sot_len` start tokens, `<|notimestamps|>`, every
/// text token and `<|endoftext|>`, `samples` the window's length. Windows run
/// concurrently, so the pause before the first word is measured from the window's
/// start (OpenAI's sequential loop measures it from the previous window's last word).
#[allow(clippy::too_many_arguments)]
pub fn add_words(
    segments: &mut [Segment],
    tokens: &[Vec<u32>],
    probabilities: &[f32],
    alignment: &AudioAlignment,
    sot_len: usize,
    samples: usize,
    offset: f64,
    language: Option<&str>,
    tokenizer: &WhisperTokenizer,
) -> Result<(), TokenizerError> {
    let text: Vec<u32> = tokens.iter().flatten().copied().collect();
    let frames = (samples / SAMPLES_PER_FRAME).clamp(1, alignment.frames);
    let matrix = alignment_matrix(alignment, frames);
    let rows = text.len() + 1;
    if matrix.len() < (sot_len + rows) * frames {
        return Ok(());
    }
    let matrix = &matrix[sot_len * frames..(sot_len + rows) * frames];
    let mut timings = find_timings(matrix, frames, &text, probabilities, language, tokenizer)?;
    let median = median_duration(&timings);
    let longest = median * 2.0;
    clip_at_sentence_ends(&mut timings, longest);
    merge_punctuation(&mut timings);

    let mut last_speech = offset;
    let mut timings = timings.into_iter();
    for (segment, tokens) in segments.iter_mut().zip(tokens) {
        let mut words: Vec<Word> = Vec::new();
        let mut taken = 0;
        while taken < tokens.len() {
            let Some(timing) = timings.next() else {
                break;
            };
            taken += timing.tokens.len();
            if !timing.word.is_empty() {
                words.push(Word {
                    word: timing.word,
                    start: round2(offset + timing.start),
                    end: round2(offset + timing.end),
                    probability: timing.probability,
                });
            }
        }
        fit_to_segment(segment, &mut words, median, longest, last_speech);
        if !words.is_empty() {
            last_speech = segment.end;
        }
        segment.words = words;
    }
    Ok(())
}

/// The alignment heads' attention over the first `frames` frames, each row a softmax,
/// normalised per frame over the positions, median-filtered along time and averaged
/// over heads: `[positions, frames]`.
fn alignment_matrix(alignment: &AudioAlignment, frames: usize) -> Vec<f32> {
    let (heads, positions, all) = (alignment.heads, alignment.positions, alignment.frames);
    let mut mean = vec![0f32; positions * frames];
    let mut weights = vec![0f32; positions * frames];
    for h in 0..heads {
        for p in 0..positions {
            let start = (h * positions + p) * all;
            let row = &alignment.logits[start..start + frames];
            let out = &mut weights[p * frames..(p + 1) * frames];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0f32;
            for (o, &x) in out.iter_mut().zip(row) {
                *o = (x - max).exp();
                sum += *o;
            }
            out.iter_mut().for_each(|o| *o /= sum);
        }
        for f in 0..frames {
            let column = (0..positions).map(|p| weights[p * frames + f]);
            let m = column.clone().sum::<f32>() / positions as f32;
            let variance = column.map(|w| (w - m) * (w - m)).sum::<f32>() / positions as f32;
            let std = variance.sqrt();
            for p in 0..positions {
                let w = &mut weights[p * frames + f];
                *w = (*w - m) / std;
            }
        }
        for p in 0..positions {
            let row = median_filter(&weights[p * frames..(p + 1) * frames], MEDIAN_FILTER_WIDTH);
            for (m, w) in mean[p * frames..(p + 1) * frames].iter_mut().zip(row) {
                *m += w / heads as f32;
            }
        }
    }
    mean
}

/// Each value replaced by the median of the `width` values around it, the ends
/// reflected (`[c b] a b c d [c b]`); rows too short to reflect stay as they are.
fn median_filter(row: &[f32], width: usize) -> Vec<f32> {
    let pad = width / 2;
    if row.len() <= pad {
        return row.to_vec();
    }
    let n = row.len() as isize;
    let at = |i: isize| {
        let i = if i < 0 { -i } else { i };
        let i = if i >= n { 2 * (n - 1) - i } else { i };
        row[i as usize]
    };
    let mut window = vec![0f32; width];
    (0..n)
        .map(|i| {
            for (k, w) in window.iter_mut().enumerate() {
                *w = at(i + k as isize - pad as isize);
            }
            window.sort_by(f32::total_cmp);
            window[pad]
        })
        .collect()
}

/// The cheapest path through `cost` (`[rows, columns]`) from the first cell to the
/// last, moving down, right or diagonally, as (row, column) pairs in order. Ties prefer
/// moving right, then down, as OpenAI's implementation does.
fn dtw(cost: &[f32], rows: usize, columns: usize) -> Vec<(usize, usize)> {
    let width = columns + 1;
    let mut total = vec![f32::INFINITY; (rows + 1) * width];
    let mut trace = vec![0u8; (rows + 1) * width];
    total[0] = 0.0;
    for j in 1..=columns {
        for i in 1..=rows {
            let diagonal = total[(i - 1) * width + j - 1];
            let up = total[(i - 1) * width + j];
            let left = total[i * width + j - 1];
            let (best, step) = if diagonal < up && diagonal < left {
                (diagonal, 0)
            } else if up < diagonal && up < left {
                (up, 1)
            } else {
                (left, 2)
            };
            total[i * width + j] = cost[(i - 1) * columns + j - 1] + best;
            trace[i * width + j] = step;
        }
    }
    let (mut i, mut j) = (rows, columns);
    let mut path = Vec::with_capacity(rows + columns);
    while i > 0 || j > 0 {
        path.push((i.saturating_sub(1), j.saturating_sub(1)));
        // The first row can only go left, the first column only up.
        let step = if i == 0 {
            2
        } else if j == 0 {
            1
        } else {
            trace[i * width + j]
        };
        match step {
            0 => {
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            _ => j -= 1,
        }
    }
    path.reverse();
    path
}

/// Words and their times from the text rows of the matrix (`<|notimestamps|>` and each
/// text token, `text.len() + 1` rows).
fn find_timings(
    matrix: &[f32],
    frames: usize,
    text: &[u32],
    probabilities: &[f32],
    language: Option<&str>,
    tokenizer: &WhisperTokenizer,
) -> Result<Vec<Timing>, TokenizerError> {
    let negated: Vec<f32> = matrix.iter().map(|v| -v).collect();
    let path = dtw(&negated, text.len() + 1, frames);
    // The time where the path first reaches each row.
    let mut starts = Vec::with_capacity(text.len() + 1);
    for (k, &(row, frame)) in path.iter().enumerate() {
        if k == 0 || path[k - 1].0 != row {
            starts.push(frame as f64 / FRAMES_PER_SECOND);
        }
    }
    let mut with_end = text.to_vec();
    with_end.push(tokenizer.special.eot);
    let (words, groups) = split_into_words(&with_end, language, tokenizer)?;
    if groups.len() <= 1 {
        return Ok(Vec::new());
    }
    let mut timings = Vec::new();
    let mut first = 0;
    // The last group holds `<|endoftext|>` (with any tokens of an unfinished character).
    let spoken = groups.len() - 1;
    for (word, tokens) in words.into_iter().zip(groups).take(spoken) {
        let last = first + tokens.len();
        let probability = probabilities
            .get(first..last)
            .filter(|p| !p.is_empty())
            .map(|p| p.iter().map(|&v| f64::from(v)).sum::<f64>() / p.len() as f64)
            .unwrap_or(0.0);
        timings.push(Timing {
            word,
            tokens,
            start: starts.get(first).copied().unwrap_or(0.0),
            end: starts.get(last).copied().unwrap_or(0.0),
            probability,
        });
        first = last;
    }
    Ok(timings)
}

/// Tokens grouped into words with their text. Special tokens stand alone.
fn split_into_words(
    tokens: &[u32],
    language: Option<&str>,
    tokenizer: &WhisperTokenizer,
) -> Result<(Vec<String>, Vec<Vec<u32>>), TokenizerError> {
    let (pieces, groups) = split_at_characters(tokens, tokenizer)?;
    if language.is_some_and(|l| UNSPACED_LANGUAGES.contains(&l)) {
        return Ok((pieces, groups));
    }
    let eot = tokenizer.special.eot;
    let mut words: Vec<String> = Vec::new();
    let mut word_tokens: Vec<Vec<u32>> = Vec::new();
    for (piece, group) in pieces.into_iter().zip(groups) {
        let starts_word = group[0] >= eot
            || piece.starts_with(' ')
            || is_punctuation(piece.trim())
            || words.is_empty();
        match (starts_word, words.last_mut(), word_tokens.last_mut()) {
            (false, Some(word), Some(tokens)) => {
                word.push_str(&piece);
                tokens.extend(group);
            }
            _ => {
                words.push(piece);
                word_tokens.push(group);
            }
        }
    }
    Ok((words, word_tokens))
}

/// Tokens grouped so that each group decodes to whole characters (a character may
/// span tokens).
fn split_at_characters(
    tokens: &[u32],
    tokenizer: &WhisperTokenizer,
) -> Result<(Vec<String>, Vec<Vec<u32>>), TokenizerError> {
    const REPLACEMENT: char = '\u{fffd}';
    let full: Vec<char> = tokenizer.decode(tokens)?.chars().collect();
    let mut pieces = Vec::new();
    let mut groups = Vec::new();
    let mut current = Vec::new();
    let mut offset = 0;
    for &token in tokens {
        current.push(token);
        let decoded = tokenizer.decode(&current)?;
        let complete = match decoded.chars().position(|c| c == REPLACEMENT) {
            None => true,
            // A replacement character the text itself has.
            Some(at) => full.get(offset + at) == Some(&REPLACEMENT),
        };
        if complete {
            offset += decoded.chars().count();
            pieces.push(decoded);
            groups.push(std::mem::take(&mut current));
        }
    }
    Ok((pieces, groups))
}

/// Whether `s` is in Python's `string.punctuation` as OpenAI tests it: by substring, so
/// the empty string and runs such as `()` are too.
fn is_punctuation(s: &str) -> bool {
    const PUNCTUATION: &str = r##"!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##;
    PUNCTUATION.contains(s)
}

/// The median length of the words that have one, at most [`LONGEST_MEDIAN_WORD`].
fn median_duration(timings: &[Timing]) -> f64 {
    let mut durations: Vec<f64> = timings
        .iter()
        .map(|t| t.end - t.start)
        .filter(|&d| d != 0.0)
        .collect();
    if durations.is_empty() {
        return 0.0;
    }
    durations.sort_by(f64::total_cmp);
    let n = durations.len();
    let median = if n % 2 == 1 {
        durations[n / 2]
    } else {
        (durations[n / 2 - 1] + durations[n / 2]) / 2.0
    };
    median.min(LONGEST_MEDIAN_WORD)
}

/// A sentence's end mark, or the word after one, longer than `longest` is cut to it.
fn clip_at_sentence_ends(timings: &mut [Timing], longest: f64) {
    if longest == 0.0 {
        return;
    }
    for i in 1..timings.len() {
        if timings[i].end - timings[i].start > longest {
            if SENTENCE_ENDS.contains(timings[i].word.as_str()) {
                timings[i].end = timings[i].start + longest;
            } else if SENTENCE_ENDS.contains(timings[i - 1].word.as_str()) {
                timings[i].start = timings[i].end - longest;
            }
        }
    }
}

/// Opening marks join the word after them, closing marks the word before them; what
/// they leave behind is empty. Membership is by substring, as in OpenAI's code (a
/// two-mark word such as `."` is not in the list and stays apart).
fn merge_punctuation(timings: &mut [Timing]) {
    if timings.len() < 2 {
        return;
    }
    let mut following = timings.len() - 1;
    for i in (0..timings.len() - 1).rev() {
        let word = &timings[i].word;
        if word.starts_with(' ') && PREPENDED.contains(word.trim()) {
            let previous = std::mem::take(&mut timings[i].word);
            let tokens = std::mem::take(&mut timings[i].tokens);
            let next = &mut timings[following];
            next.word = previous + &next.word;
            next.tokens = [tokens, std::mem::take(&mut next.tokens)].concat();
        } else {
            following = i;
        }
    }
    let mut previous = 0;
    for j in 1..timings.len() {
        let word = timings[j].word.clone();
        if !timings[previous].word.ends_with(' ') && APPENDED.contains(word.as_str()) {
            let tokens = std::mem::take(&mut timings[j].tokens);
            timings[j].word.clear();
            let before = &mut timings[previous];
            before.word.push_str(&word);
            before.tokens.extend(tokens);
        } else {
            previous = j;
        }
    }
}

/// OpenAI's rules at a segment's edges: the first word after a long pause, or one far
/// longer than the median, is shortened; the segment's own start and end win over a
/// first or last word that runs half a second past them, and otherwise follow the words.
fn fit_to_segment(
    segment: &mut Segment,
    words: &mut [Word],
    median: f64,
    longest: f64,
    last_speech: f64,
) {
    let Some(first) = words.first() else {
        return;
    };
    let long_first = first.end - first.start > longest
        || (words.len() > 1 && words[1].end - first.start > longest * 2.0);
    if first.end - last_speech > median * 4.0 && long_first {
        if words.len() > 1 && words[1].end - words[1].start > longest {
            let boundary = (words[1].end / 2.0).max(words[1].end - longest);
            words[0].end = boundary;
            words[1].start = boundary;
        }
        words[0].start = (words[0].end - longest).max(0.0);
    }
    let first = &mut words[0];
    if segment.start < first.end && segment.start - 0.5 > first.start {
        first.start = (first.end - median).min(segment.start).max(0.0);
    } else {
        segment.start = first.start;
    }
    let Some(last) = words.last_mut() else {
        return;
    };
    if segment.end > last.start && segment.end + 0.5 < last.end {
        last.end = (last.start + median).max(segment.end);
    } else {
        segment.end = last.end;
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtw_follows_the_cheap_diagonal_and_covers_every_row_and_column() {
        // Cheap cells along a staircase: row 0 over columns 0-1, row 1 over 2-3, row 2 over 4.
        let (rows, columns) = (3, 5);
        let mut cost = vec![1f32; rows * columns];
        for (r, c) in [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4)] {
            cost[r * columns + c] = -1.0;
        }
        let path = dtw(&cost, rows, columns);
        assert_eq!(path, vec![(0, 0), (0, 1), (1, 2), (1, 3), (2, 4)]);
        // Monotonic, from corner to corner, on any input.
        let cost: Vec<f32> = (0..6 * 40).map(|i| ((i * 37 % 11) as f32).sin()).collect();
        let path = dtw(&cost, 6, 40);
        assert_eq!(path.first(), Some(&(0, 0)));
        assert_eq!(path.last(), Some(&(5, 39)));
        assert!(path
            .windows(2)
            .all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1 && w[1] != w[0]));
    }

    #[test]
    fn median_filter_reflects_at_the_ends() {
        assert_eq!(
            median_filter(&[5.0, 1.0, 9.0, 2.0], 3),
            vec![1.0, 5.0, 2.0, 9.0]
        );
        // Reflected: [c b] a b c d [c b] with a=0,b=10,c=0,d=0 → medians of 5.
        assert_eq!(
            median_filter(&[0.0, 10.0, 0.0, 0.0], 5),
            vec![0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(median_filter(&[3.0, 1.0], 7), vec![3.0, 1.0]);
    }

    fn timing(word: &str, start: f64, end: f64) -> Timing {
        Timing {
            word: word.into(),
            tokens: vec![word.len() as u32],
            start,
            end,
            probability: 1.0,
        }
    }

    #[test]
    fn punctuation_joins_its_word() {
        let mut t = vec![
            timing(" \"", 0.0, 0.1),
            timing("Hello", 0.1, 0.5),
            timing(",", 0.5, 0.6),
            timing(" world", 0.6, 1.0),
            timing(".\"", 1.0, 1.1),
        ];
        merge_punctuation(&mut t);
        let words: Vec<&str> = t.iter().map(|t| t.word.as_str()).collect();
        assert_eq!(words, ["", " \"Hello,", "", " world", ".\""]);
        // A closing mark made of two characters is not in the list; it stays apart.
        assert_eq!(t[1].tokens, vec![2, 5, 1]);
    }

    #[test]
    fn a_long_sentence_end_is_clipped() {
        let mut t = vec![
            timing(" done", 0.0, 0.4),
            timing(".", 0.4, 3.0),
            timing(" Then", 3.0, 6.0),
        ];
        clip_at_sentence_ends(&mut t, 1.0);
        assert_eq!((t[1].start, t[1].end), (0.4, 1.4));
        assert_eq!((t[2].start, t[2].end), (5.0, 6.0));
    }

    #[test]
    fn medians_ignore_empty_words_and_are_capped() {
        let t = vec![
            timing("a", 0.0, 0.2),
            timing("b", 1.0, 1.0),
            timing("c", 1.0, 1.4),
        ];
        assert!((median_duration(&t) - 0.3).abs() < 1e-12);
        let t = vec![timing("a", 0.0, 5.0)];
        assert_eq!(median_duration(&t), LONGEST_MEDIAN_WORD);
        assert_eq!(median_duration(&[]), 0.0);
    }

    #[test]
    fn a_segment_follows_its_words_unless_a_word_overruns_it() {
        let word = |w: &str, start, end| Word {
            word: w.into(),
            start,
            end,
            probability: 1.0,
        };
        let segment = || Segment {
            start: 1.0,
            end: 3.0,
            text: " a b".into(),
            words: Vec::new(),
        };
        let mut first = segment();
        let mut words = vec![word(" a", 1.1, 1.5), word(" b", 1.6, 2.9)];
        fit_to_segment(&mut first, &mut words, 0.4, 0.8, 1.0);
        assert_eq!((first.start, first.end), (1.1, 2.9));
        // A last word running 2 s past the segment's end is cut back to it.
        let mut second = segment();
        let mut words = vec![word(" a", 1.1, 1.5), word(" b", 1.6, 5.0)];
        fit_to_segment(&mut second, &mut words, 0.4, 0.8, 1.0);
        assert_eq!((second.end, words[1].end), (3.0, 3.0));
    }
}
