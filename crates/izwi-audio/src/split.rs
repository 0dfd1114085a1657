//! Splitting long 16 kHz audio into windows a speech model can take (Whisper: 30 s), cutting
//! where it is quietest so no word is cut in half.

use crate::ASR_SAMPLE_RATE;

/// A half-open range `start_sample..end_sample` of 16 kHz samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_sample: usize,
    pub end_sample: usize,
}

impl Window {
    pub fn len(&self) -> usize {
        self.end_sample - self.start_sample
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Start time in seconds, for timestamps.
    pub fn start_seconds(&self) -> f64 {
        self.start_sample as f64 / f64::from(ASR_SAMPLE_RATE)
    }

    /// End time in seconds.
    pub fn end_seconds(&self) -> f64 {
        self.end_sample as f64 / f64::from(ASR_SAMPLE_RATE)
    }
}

/// Energy is measured over 10 ms frames...
const FRAME: usize = ASR_SAMPLE_RATE as usize / 100;
/// ...and a candidate cut scores the energy of the 30 ms around it (its frame and one each
/// side), long enough to ignore a single zero crossing, short enough for a pause between
/// words.
const SCORE_FRAMES: usize = 3;
/// A cut is searched for in the last 5 s before a window's limit: long enough to contain a
/// pause in normal speech, short enough that windows stay near full length.
const SEARCH_SECONDS: f32 = 5.0;
/// Windows shorter than this make no sense for a speech model; smaller limits are raised.
const MIN_WINDOW_SECONDS: f32 = 1.0;

/// Splits 16 kHz mono `samples` into windows of at most `max_window_seconds` (raised to at
/// least 1 s; Whisper takes 30 s).
///
/// The windows cover the audio in order, without gaps or overlap. Audio no longer than the
/// limit is one window; empty audio gives no windows. Each cut is at the quietest 30 ms
/// (lowest energy) within the last 5 s (at most half the window) before the limit, at the
/// middle of a run of equally quiet points, so it lands inside a pause. Deterministic and
/// O(n): every sample is looked at at most once.
pub fn split_at_silence(samples: &[f32], max_window_seconds: f32) -> Vec<Window> {
    let rate = ASR_SAMPLE_RATE as f32;
    // `max` also turns NaN into the minimum; a huge or infinite limit saturates.
    let max_len = (max_window_seconds.max(MIN_WINDOW_SECONDS) * rate) as usize;
    let search_len = ((SEARCH_SECONDS * rate) as usize).min(max_len / 2);

    let mut windows = Vec::new();
    let mut start = 0;
    while samples.len() - start > max_len {
        let zone_end = start + max_len;
        let zone_start = zone_end - search_len;
        let cut = zone_start + quietest_point(&samples[zone_start..zone_end]);
        windows.push(Window {
            start_sample: start,
            end_sample: cut,
        });
        start = cut;
    }
    if start < samples.len() {
        windows.push(Window {
            start_sample: start,
            end_sample: samples.len(),
        });
    }
    windows
}

/// The offset in `zone` of the quietest point: the middle of the 10 ms frame whose 30 ms
/// neighbourhood has the least energy; among equally quiet frames in a row (digital
/// silence), the middle one.
fn quietest_point(zone: &[f32]) -> usize {
    let energies: Vec<f64> = zone
        .chunks_exact(FRAME)
        .map(|frame| frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum())
        .collect();
    if energies.is_empty() {
        return zone.len();
    }
    let reach = SCORE_FRAMES / 2;
    let mut best = f64::INFINITY;
    let (mut run_start, mut run_end) = (0, 0);
    for i in 0..energies.len() {
        let lo = i.saturating_sub(reach);
        let hi = (i + reach + 1).min(energies.len());
        // Mean, so frames at the zone's edge (fewer neighbours) are not favoured.
        let score = energies[lo..hi].iter().sum::<f64>() / (hi - lo) as f64;
        if score < best {
            best = score;
            run_start = i;
            run_end = i;
        } else if score == best && run_end + 1 == i {
            run_end = i;
        }
    }
    let frame = (run_start + run_end) / 2;
    frame * FRAME + FRAME / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quietest_point_finds_the_middle_of_a_silent_run() {
        let mut zone = vec![0.5f32; 100 * FRAME];
        zone[40 * FRAME..50 * FRAME].fill(0.0);
        let cut = quietest_point(&zone);
        // Frames 41..=48 have all-silent neighbourhoods; the middle one is 44.
        assert_eq!(cut, 44 * FRAME + FRAME / 2);
    }

    #[test]
    fn nan_does_not_panic() {
        let samples = vec![f32::NAN; 70 * 16_000];
        let windows = split_at_silence(&samples, 30.0);
        assert_eq!(windows.last().unwrap().end_sample, samples.len());
        assert!(split_at_silence(&[0.0; 100], f32::NAN).len() == 1);
    }
}
