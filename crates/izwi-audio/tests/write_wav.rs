//! Writing WAV: what is written reads back, and a failed write leaves nothing behind.

mod common;

use common::*;
use izwi_audio::{decode_file, write_wav, AudioError};

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn round_trip_within_16_bit_precision() {
    let dir = temp_dir("round_trip");
    let path = dir.join("tone.wav");
    let tone = sine(440.0, 0.5, 22_050, 0.5);
    write_wav(&path, &tone, 22_050).unwrap();
    let audio = decode_file(&path).unwrap();
    assert_eq!((audio.sample_rate, audio.channels), (22_050, 1));
    assert_eq!(audio.samples.len(), tone.len());
    let worst = audio
        .samples
        .iter()
        .zip(&tone)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1.0 / 32768.0 + 1e-6, "largest error {worst}");
    // The file is 16-bit PCM: 44-byte header plus 2 bytes a sample.
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        44 + 2 * tone.len() as u64
    );
    // No temp file left behind.
    assert_eq!(entries(&dir), vec!["tone.wav"]);
}

#[test]
fn overwrites_an_existing_file() {
    let dir = temp_dir("overwrites");
    let path = dir.join("out.wav");
    std::fs::write(&path, b"old contents").unwrap();
    write_wav(&path, &[0.25; 1000], 16_000).unwrap();
    assert_eq!(decode_file(&path).unwrap().samples.len(), 1000);
    assert_eq!(entries(&dir), vec!["out.wav"]);
}

#[test]
fn clips_out_of_range_samples() {
    let dir = temp_dir("clips");
    let path = dir.join("loud.wav");
    write_wav(&path, &[2.0, -2.0, f32::NAN, 0.0], 16_000).unwrap();
    let samples = decode_file(&path).unwrap().samples;
    assert!((samples[0] - 32767.0 / 32768.0).abs() < 1e-6);
    assert!((samples[1] + 32767.0 / 32768.0).abs() < 1e-6);
    assert_eq!(&samples[2..], &[0.0, 0.0]);
}

#[test]
fn missing_directory_is_a_write_error() {
    let dir = temp_dir("missing_dir");
    let path = dir.join("no/such/dir/out.wav");
    match write_wav(&path, &[0.0; 10], 16_000) {
        Err(AudioError::Write { path: p, .. }) => assert_eq!(p, path),
        other => panic!("{other:?}"),
    }
    assert!(entries(&dir).is_empty());
}

/// The rename fails (the target is a directory) after the data was written: the temp file
/// is removed and the target is untouched.
#[test]
fn failed_rename_leaves_no_temp_file() {
    let dir = temp_dir("failed_rename");
    let target = dir.join("taken.wav");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), b"x").unwrap();
    assert!(matches!(
        write_wav(&target, &[0.1; 100], 16_000),
        Err(AudioError::Write { .. })
    ));
    assert_eq!(entries(&dir), vec!["taken.wav"]);
    assert_eq!(entries(&target), vec!["keep"]);
}

#[test]
fn invalid_sample_rate_writes_nothing() {
    let dir = temp_dir("invalid_rate");
    assert!(matches!(
        write_wav(dir.join("x.wav"), &[0.0; 10], 0),
        Err(AudioError::InvalidSampleRate(0))
    ));
    assert!(entries(&dir).is_empty());
}
