//! Splitting long audio at silences.

mod common;

use common::*;
use izwi_audio::{decode_file, resample, split_at_silence, Window, ASR_SAMPLE_RATE};

const RATE: usize = ASR_SAMPLE_RATE as usize;

/// Loud noise-like signal (no quiet points of its own), deterministic.
fn busy(seconds: f64, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let n = (seconds * RATE as f64) as usize;
    (0..n)
        .map(|i| {
            let noise = (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0;
            0.3 * noise + 0.3 * (i as f32 * 0.07).sin()
        })
        .collect()
}

fn check_cover(windows: &[Window], len: usize, max_seconds: f64) {
    assert_eq!(windows.first().map(|w| w.start_sample), Some(0));
    assert_eq!(windows.last().map(|w| w.end_sample), Some(len));
    for pair in windows.windows(2) {
        assert_eq!(pair[0].end_sample, pair[1].start_sample, "gap or overlap");
    }
    for w in windows {
        assert!(!w.is_empty());
        assert!(
            w.len() <= (max_seconds * RATE as f64) as usize,
            "window of {} s",
            w.len() as f64 / RATE as f64
        );
    }
}

#[test]
fn windows_are_contiguous_and_within_the_limit() {
    let audio = busy(95.3, 1);
    let windows = split_at_silence(&audio, 30.0);
    check_cover(&windows, audio.len(), 30.0);
    assert_eq!(windows.len(), 4);
    // No silence anywhere: each cut is still in the search zone, the last 5 s.
    for w in &windows[..3] {
        assert!(w.len() >= 25 * RATE, "{w:?}");
    }
}

#[test]
fn cut_lands_in_an_inserted_silence_gap() {
    // 27.0-27.4 s is silent: inside the 25-30 s search zone of the first window.
    let mut audio = busy(70.0, 2);
    let gap = 27 * RATE..27 * RATE + 4 * RATE / 10;
    audio[gap.clone()].fill(0.0);
    // A second gap at 54.0-54.3 s, inside the next search zone (the first cut, about
    // 27.2 s, plus 25 to 30 s).
    let gap2 = 54 * RATE..54 * RATE + 3 * RATE / 10;
    audio[gap2.clone()].fill(0.0);
    let windows = split_at_silence(&audio, 30.0);
    check_cover(&windows, audio.len(), 30.0);
    assert_eq!(windows.len(), 3);
    for (cut, gap) in [(windows[0].end_sample, gap), (windows[1].end_sample, gap2)] {
        // Inside the gap, at least 30 ms from its edges (the scoring window).
        assert!(
            cut >= gap.start + RATE * 3 / 100 && cut <= gap.end - RATE * 3 / 100,
            "cut at {} s, gap {}..{} s",
            cut as f64 / RATE as f64,
            gap.start as f64 / RATE as f64,
            gap.end as f64 / RATE as f64
        );
        // The middle of the gap, within a frame.
        assert!(cut.abs_diff((gap.start + gap.end) / 2) <= RATE / 100);
    }
}

/// A quieter (not silent) pause is found too: real recordings have room noise.
#[test]
fn cut_finds_a_quiet_but_not_silent_pause() {
    let mut audio = busy(40.0, 3);
    let pause = 28 * RATE..28 * RATE + RATE / 4;
    for s in &mut audio[pause.clone()] {
        *s *= 0.01;
    }
    let windows = split_at_silence(&audio, 30.0);
    assert_eq!(windows.len(), 2);
    let cut = windows[0].end_sample;
    assert!(pause.contains(&cut), "cut at {cut}");
}

/// Real speech: espeak saying a sentence, repeated with pauses between, over 30 s long.
#[test]
fn speech_is_cut_between_utterances() {
    let speech = decode_file(fixture("speech_22k.flac")).unwrap();
    let speech = resample(&speech.samples, speech.sample_rate, ASR_SAMPLE_RATE).unwrap();
    let pause = vec![0.0f32; RATE * 7 / 10];
    let mut audio = Vec::new();
    let mut starts = Vec::new();
    while audio.len() < 45 * RATE {
        starts.push(audio.len());
        audio.extend_from_slice(&speech);
        audio.extend_from_slice(&pause);
    }
    let windows = split_at_silence(&audio, 30.0);
    check_cover(&windows, audio.len(), 30.0);
    let cut = windows[0].end_sample;
    // The cut is in a pause: not within any utterance's loud part.
    let loud = |i: usize| {
        audio[i.saturating_sub(160)..(i + 160).min(audio.len())]
            .iter()
            .any(|s| s.abs() > 0.01)
    };
    assert!(
        !loud(cut),
        "cut at {} s is inside speech",
        cut as f64 / RATE as f64
    );
    assert!(cut > 25 * RATE);
}

#[test]
fn short_audio_is_one_window() {
    let audio = busy(29.9, 4);
    assert_eq!(
        split_at_silence(&audio, 30.0),
        vec![Window {
            start_sample: 0,
            end_sample: audio.len()
        }]
    );
    // Exactly the limit is still one window.
    let audio = busy(30.0, 4);
    assert_eq!(split_at_silence(&audio, 30.0).len(), 1);
}

#[test]
fn empty_audio_has_no_windows() {
    assert!(split_at_silence(&[], 30.0).is_empty());
}

#[test]
fn other_limits_and_determinism() {
    let audio = busy(100.0, 5);
    for max in [1.0f32, 2.5, 10.0, 30.0, 60.0] {
        let windows = split_at_silence(&audio, max);
        check_cover(&windows, audio.len(), f64::from(max));
        assert_eq!(windows, split_at_silence(&audio, max));
    }
    // Limits below 1 s (and NaN) are raised to 1 s.
    for max in [0.0, -5.0, f32::NAN] {
        let windows = split_at_silence(&audio[..3 * RATE], max);
        check_cover(&windows, 3 * RATE, 1.0);
        assert!((3..=6).contains(&windows.len()), "{}", windows.len());
    }
}

#[test]
fn window_times() {
    let w = Window {
        start_sample: 16_000,
        end_sample: 40_000,
    };
    assert_eq!(w.len(), 24_000);
    assert_eq!(w.start_seconds(), 1.0);
    assert_eq!(w.end_seconds(), 2.5);
}
