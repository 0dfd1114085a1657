//! The resampler: exact lengths, no time shift, the tone kept, aliasing removed.

mod common;

use common::*;
use izwi_audio::{resample, AudioError, StreamResampler};

const RATES: [u32; 6] = [8_000, 16_000, 22_050, 44_100, 48_000, 96_000];

#[test]
fn output_length_is_rounded_ratio() {
    for &from in &RATES {
        for &to in &[16_000, 44_100, 48_000] {
            for len in [0usize, 1, 2, 7, 1000, 12_345] {
                let input = vec![0.1f32; len];
                let out = resample(&input, from, to).unwrap();
                let expected = (len as f64 * f64::from(to) / f64::from(from)).round() as usize;
                assert_eq!(out.len(), expected, "{len} samples {from} -> {to}");
            }
        }
    }
}

#[test]
fn unusual_rates_work() {
    // Coprime with 16 kHz: rubato needs a long FFT chunk; still exact in length.
    let input = sine(440.0, 0.5, 44_101, 0.5);
    let out = resample(&input, 44_101, 16_000).unwrap();
    assert_eq!(
        out.len(),
        (input.len() as f64 * 16_000.0 / 44_101.0).round() as usize
    );
    let hz = tone_frequency(&out[1000..7000], 16_000);
    assert!((hz - 440.0).abs() < 1.0, "{hz} Hz");
}

/// Where the largest sample is, in seconds.
fn peak_time(samples: &[f32], rate: u32) -> f64 {
    let index = samples
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .map(|(i, _)| i)
        .unwrap();
    index as f64 / f64::from(rate)
}

/// An impulse stays where it was: the resampler's delay is compensated.
#[test]
fn impulse_keeps_its_time() {
    for &from in &RATES {
        for &to in &[16_000u32, 48_000] {
            let mut input = vec![0.0f32; from as usize / 2];
            // At 0.2345 s, rounded to the input grid.
            let at = (0.2345 * f64::from(from)).round() as usize;
            input[at] = 1.0;
            let t_in = at as f64 / f64::from(from);
            let out = resample(&input, from, to).unwrap();
            let shift = peak_time(&out, to) - t_in;
            assert!(
                shift.abs() <= 0.001,
                "{from} -> {to}: impulse moved by {:.3} ms",
                shift * 1e3
            );
        }
    }
}

/// The onset of a tone (silence, then a 1 kHz burst) is at the same time after
/// 44.1k -> 16k and 8k -> 16k, measured where the envelope first reaches half level.
#[test]
fn tone_onset_keeps_its_time() {
    for from in [44_100u32, 8_000] {
        let onset = 0.3;
        let mut input = vec![0.0f32; (onset * f64::from(from)) as usize];
        input.extend(sine(1_000.0, 0.8, from, 0.2));
        let out = resample(&input, from, 16_000).unwrap();
        let first_loud = |s: &[f32], rate: u32| {
            s.iter().position(|x| x.abs() > 0.4).unwrap() as f64 / f64::from(rate)
        };
        let shift = first_loud(&out, 16_000) - first_loud(&input, from);
        assert!(
            shift.abs() <= 0.001,
            "{from} -> 16k: onset moved by {shift} s"
        );
    }
}

#[test]
fn tone_frequency_and_level_survive() {
    for &from in &RATES {
        let input = sine(440.0, 0.5, from, 0.5);
        let out = resample(&input, from, 16_000).unwrap();
        // Away from the edges, where the filter sees zeros outside the signal.
        let middle = &out[800..out.len() - 800];
        let hz = tone_frequency(middle, 16_000);
        assert!((hz - 440.0).abs() < 0.5, "{from}: {hz} Hz");
        let level = rms(middle);
        assert!((level - 0.3536).abs() < 0.005, "{from}: rms {level}");
    }
}

/// Downsampling removes what the new rate cannot hold instead of folding it back: a 7 kHz
/// tone at 48 kHz must nearly vanish at 8 kHz (Nyquist 4 kHz).
#[test]
fn downsampling_filters_aliases() {
    let input = sine(7_000.0, 0.5, 48_000, 0.5);
    let out = resample(&input, 48_000, 8_000).unwrap();
    let level = rms(&out[400..out.len() - 400]);
    assert!(
        level < 0.35 * 0.01,
        "alias at -40 dB or lower, got rms {level}"
    );
}

#[test]
fn streaming_in_odd_pieces_matches_one_call() {
    let input = sine(440.0, 0.5, 22_050, 0.7);
    let whole = resample(&input, 22_050, 16_000).unwrap();
    let mut resampler = StreamResampler::new(22_050, 16_000).unwrap();
    let mut out = Vec::new();
    let mut rest = &input[..];
    let mut rng = Rng(7);
    while !rest.is_empty() {
        let n = (1 + rng.below(3000)).min(rest.len());
        resampler.push(&rest[..n], &mut out).unwrap();
        rest = &rest[n..];
    }
    resampler.finish(&mut out).unwrap();
    assert_eq!(out, whole);
}

#[test]
fn invalid_rates_are_errors() {
    for (from, to) in [(0, 16_000), (16_000, 0), (800_000, 16_000), (999, 16_000)] {
        match resample(&[0.0; 100], from, to) {
            Err(AudioError::InvalidSampleRate(rate)) => assert!(rate == from || rate == to),
            other => panic!("{from} -> {to}: {other:?}"),
        }
    }
}
