//! Every supported format decodes to the right length, rate, channels and content.

mod common;

use common::*;
use izwi_audio::{decode_bytes, decode_file, load_for_asr, Audio, ASR_SAMPLE_RATE};

/// Checks a decoded tone fixture: rate, channels, duration (±20 ms), that the tone starts
/// at once and runs to the end (no shift from codec delay or padding), and per-channel
/// level (within `level_tolerance`, relative) and frequency.
fn check_tone(audio: &Audio, rate: u32, channels: u16, seconds: f64, level_tolerance: f32) {
    assert_eq!(audio.sample_rate, rate);
    assert_eq!(audio.channels, channels);
    assert!(
        (audio.duration_seconds() - seconds).abs() <= 0.020,
        "duration {} s, expected {seconds} s",
        audio.duration_seconds()
    );
    let amplitudes = [LEFT_AMPLITUDE, RIGHT_AMPLITUDE];
    for (index, &amplitude) in amplitudes.iter().take(usize::from(channels)).enumerate() {
        let samples = channel(&audio.samples, channels, index);
        let expected = amplitude / 2f32.sqrt();
        let level = rms(&samples);
        assert!(
            (level - expected).abs() <= expected * level_tolerance,
            "channel {index}: rms {level}, expected {expected}"
        );
        let hz = tone_frequency(&samples, rate);
        assert!((hz - TONE_HZ).abs() <= 1.0, "channel {index}: {hz} Hz");

        // The first and last 5 ms carry the tone at nearly full level: no silent lead-in
        // (priming) or tail (padding) of more than a couple of milliseconds.
        let edge = (rate / 200) as usize;
        for (name, part) in [
            ("start", &samples[..edge]),
            ("end", &samples[samples.len() - edge..]),
        ] {
            assert!(
                rms(part) > expected * 0.5,
                "channel {index}: {name} rms {} (expected about {expected})",
                rms(part)
            );
        }
    }
}

#[test]
fn wav_16_bit_mono_8k() {
    let audio = decode_file(fixture("tone440_s16_mono_8k.wav")).unwrap();
    check_tone(&audio, 8_000, 1, 1.0, 0.01);
    assert_eq!(audio.frames(), 8_000);
}

#[test]
fn wav_24_bit_stereo_44k() {
    let audio = decode_file(fixture("tone440_s24_stereo_44k.wav")).unwrap();
    check_tone(&audio, 44_100, 2, 0.25, 0.01);
    assert_eq!(audio.frames(), 11_025);
}

#[test]
fn wav_float_mono_48k() {
    let audio = decode_file(fixture("tone440_f32_mono_48k.wav")).unwrap();
    check_tone(&audio, 48_000, 1, 0.25, 0.001);
    // Float WAV is exact: sample 1 is 0.5 sin(2π 440 / 48000).
    let expected = sine(TONE_HZ, 0.5, 48_000, 0.25);
    let worst = audio
        .samples
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-6, "largest difference {worst}");
}

#[test]
fn flac_stereo_22k() {
    let audio = decode_file(fixture("tone440_stereo_22k.flac")).unwrap();
    check_tone(&audio, 22_050, 2, 1.0, 0.01);
    assert_eq!(audio.frames(), 22_050);
}

#[test]
fn mp3_stereo_44k() {
    let audio = decode_file(fixture("tone440_stereo_44k.mp3")).unwrap();
    check_tone(&audio, 44_100, 2, 1.0, 0.10);
}

#[test]
fn ogg_vorbis_stereo_44k() {
    let audio = decode_file(fixture("tone440_stereo_44k.ogg")).unwrap();
    check_tone(&audio, 44_100, 2, 1.0, 0.10);
}

#[test]
fn aac_m4a_stereo_44k() {
    let audio = decode_file(fixture("tone440_stereo_44k.m4a")).unwrap();
    check_tone(&audio, 44_100, 2, 1.0, 0.10);
}

#[test]
fn speech_flac_22k() {
    let audio = decode_file(fixture("speech_22k.flac")).unwrap();
    assert_eq!((audio.sample_rate, audio.channels), (22_050, 1));
    // espeak-ng's output for "Hello from Izwi." is 27022 samples.
    assert_eq!(audio.frames(), 27_022);
    assert!(rms(&audio.samples) > 0.03, "speech is not silent");
}

#[test]
fn bytes_decode_like_files_with_or_without_a_hint() {
    for name in [
        "tone440_s16_mono_8k.wav",
        "tone440_stereo_22k.flac",
        "tone440_stereo_44k.mp3",
        "tone440_stereo_44k.ogg",
        "tone440_stereo_44k.m4a",
    ] {
        let from_file = decode_file(fixture(name)).unwrap();
        let extension = name.rsplit('.').next();
        for hint in [extension, None, Some("wav")] {
            let from_bytes = decode_bytes(&fixture_bytes(name), hint).unwrap();
            assert_eq!(from_bytes, from_file, "{name} with hint {hint:?}");
        }
    }
}

#[test]
fn to_mono_averages_the_channels() {
    let audio = Audio {
        samples: vec![1.0, 0.0, 0.5, -0.5, -1.0, -0.5],
        sample_rate: 16_000,
        channels: 2,
    };
    assert_eq!(audio.to_mono(), vec![0.5, 0.0, -0.75]);
    assert_eq!(audio.frames(), 3);
}

/// The transcription input: every format comes out as 16 kHz mono holding the same tone,
/// at the mean of the two channels' amplitudes, and the same length.
#[test]
fn load_for_asr_gives_16k_mono_tone() {
    for (name, seconds, amplitude, tolerance) in [
        ("tone440_s16_mono_8k.wav", 1.0, 0.5, 0.01),
        ("tone440_f32_mono_48k.wav", 0.25, 0.5, 0.01),
        ("tone440_s24_stereo_44k.wav", 0.25, 0.375, 0.01),
        ("tone440_stereo_22k.flac", 1.0, 0.375, 0.01),
        ("tone440_stereo_44k.mp3", 1.0, 0.375, 0.10),
        ("tone440_stereo_44k.ogg", 1.0, 0.375, 0.10),
        ("tone440_stereo_44k.m4a", 1.0, 0.375, 0.10),
    ] {
        let samples = load_for_asr(fixture(name)).unwrap();
        let expected_len = (seconds * f64::from(ASR_SAMPLE_RATE)) as usize;
        assert!(
            samples.len().abs_diff(expected_len) <= 2,
            "{name}: {} samples, expected {expected_len}",
            samples.len()
        );
        let hz = tone_frequency(&samples, ASR_SAMPLE_RATE);
        assert!((hz - TONE_HZ).abs() <= 5.0, "{name}: {hz} Hz");
        let expected_rms = amplitude / 2f32.sqrt();
        let level = rms(&samples);
        assert!(
            (level - expected_rms).abs() <= expected_rms * tolerance,
            "{name}: rms {level}, expected {expected_rms}"
        );
    }
}

/// The resampled result matches resampling the decoded audio in one piece: streaming
/// through the decoder changes nothing.
#[test]
fn load_for_asr_equals_decode_then_resample() {
    let name = "tone440_stereo_44k.mp3";
    let audio = decode_file(fixture(name)).unwrap();
    let whole = izwi_audio::resample(&audio.to_mono(), audio.sample_rate, ASR_SAMPLE_RATE).unwrap();
    assert_eq!(load_for_asr(fixture(name)).unwrap(), whole);
}
