//! Every kind of bad input gives the error that names it, quickly and without panicking.

mod common;

use std::time::{Duration, Instant};

use common::*;
use izwi_audio::{decode_bytes, decode_file, load_for_asr, AudioError};

#[test]
fn nonexistent_path() {
    let path = fixture("no-such-file.wav");
    match decode_file(&path) {
        Err(AudioError::NotFound { path: p }) => assert_eq!(p, path),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        load_for_asr(&path),
        Err(AudioError::NotFound { .. })
    ));
}

#[test]
fn directory_is_unreadable() {
    let dir = temp_dir("directory_is_unreadable");
    match decode_file(&dir) {
        Err(AudioError::Unreadable { path, .. }) => assert_eq!(path, dir),
        other => panic!("{other:?}"),
    }
}

#[test]
fn zero_byte_file() {
    let dir = temp_dir("zero_byte_file");
    let path = dir.join("empty.wav");
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(decode_file(&path), Err(AudioError::EmptyFile)));
    assert!(matches!(
        decode_bytes(&Vec::new(), Some("wav")),
        Err(AudioError::EmptyFile)
    ));
}

/// Random bytes are not audio. Whether the error says "unrecognised format" or "corrupt"
/// depends on whether the bytes happen to contain something like a format's sync marker
/// (an MP3 frame sync is just 11 set bits); either way it is an error, never audio.
#[test]
fn random_bytes() {
    // Without 0xFF bytes no MPEG/ADTS sync can occur, and the other markers ("RIFF",
    // "fLaC", "OggS", ...) are too long to appear by chance.
    let mut rng = Rng(2);
    let bytes: Vec<u8> = (0..4096).map(|_| (rng.next_u64() % 255) as u8).collect();
    assert!(matches!(
        decode_bytes(&bytes, None),
        Err(AudioError::UnsupportedFormat(_))
    ));
    // Arbitrary bytes: an error, except that now and then they hold a valid MPEG frame
    // header by chance (MP3 has no magic number and, by default, no checksum), and the
    // decoder rightly returns that frame: one frame, not a stream of noise.
    let mut frames_found = 0;
    for seed in 1..200 {
        let bytes = Rng(seed).bytes(64 + seed as usize * 37);
        match decode_bytes(&bytes, None) {
            Err(AudioError::UnsupportedFormat(_)) | Err(AudioError::Corrupt(_)) => {}
            Ok(audio) if audio.frames() <= 1152 => frames_found += 1,
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert!(
        frames_found <= 2,
        "{frames_found} of 199 random inputs gave audio"
    );
}

#[test]
fn text_renamed_to_mp3() {
    let dir = temp_dir("text_renamed_to_mp3");
    let path = dir.join("notes.mp3");
    std::fs::write(&path, "Meeting notes: nothing to hear here.\n".repeat(50)).unwrap();
    assert!(matches!(
        decode_file(&path),
        Err(AudioError::UnsupportedFormat(_))
    ));
}

/// Truncation, the documented behaviour: a file cut off mid-way gives the audio before the
/// cut when the container can be read without its end (WAV, FLAC, MP3), and a file cut
/// inside its header is an error.
#[test]
fn truncated_wav_flac_mp3_give_the_first_part() {
    for (name, full_seconds, slack) in [
        // WAV: the whole samples present (the 44-byte header takes 2.75 ms of the half).
        ("tone440_s16_mono_8k.wav", 1.0, 0.003),
        // MP3: up to a frame (26 ms) less.
        ("tone440_stereo_44k.mp3", 1.0, 0.03),
        // FLAC: the header holds 8 KB of padding and a frame is 0.2 s, so the first half of
        // the bytes holds about 0.3 to 0.4 s of whole frames.
        ("tone440_stereo_22k.flac", 1.0, 0.25),
    ] {
        let bytes = fixture_bytes(name);
        let half = bytes[..bytes.len() / 2].to_vec();
        let audio = decode_bytes(&half, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = full_seconds / 2.0;
        let got = audio.duration_seconds();
        assert!(
            got <= expected + 0.001 && got >= expected - slack,
            "{name}: {got} s from half the file"
        );
        // And what is there is the right audio.
        let hz = tone_frequency(&audio.to_mono(), audio.sample_rate);
        assert!((hz - TONE_HZ).abs() < 2.0, "{name}: {hz} Hz");

        // Cut inside the header: FLAC and WAV are recognised and found cut short; 40 bytes
        // of an MP3 (its ID3 tag) are not enough to recognise it at all.
        let header_only = decode_bytes(&bytes[..40], None);
        if name.ends_with(".mp3") {
            assert!(
                matches!(header_only, Err(AudioError::UnsupportedFormat(_))),
                "{name}: {header_only:?}"
            );
        } else {
            assert!(
                matches!(header_only, Err(AudioError::Corrupt(_))),
                "{name}: {header_only:?}"
            );
        }
    }
}

/// Ogg and MP4 (with its index at the end, as ffmpeg writes it) cannot be opened without
/// their end: symphonia reads the last Ogg page when opening, and an MP4 without its index
/// ("moov") is not a file symphonia can read.
#[test]
fn truncated_ogg_and_m4a_are_errors() {
    let ogg = fixture_bytes("tone440_stereo_44k.ogg");
    assert!(matches!(
        decode_bytes(&ogg[..ogg.len() / 2], None),
        Err(AudioError::Corrupt(_))
    ));
    let m4a = fixture_bytes("tone440_stereo_44k.m4a");
    match decode_bytes(&m4a[..m4a.len() / 2], None) {
        Err(AudioError::UnsupportedFormat(why)) => assert!(why.contains("moov"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Counts in an MP4 sample table set to 4 billion (a 4-byte change): an error at once,
/// not a 64 GB allocation (symphonia 0.5 aborted the process here).
#[test]
fn m4a_with_huge_table_counts_is_corrupt_at_once() {
    for (atom, count_at) in [("stsc", 8), ("stsz", 12), ("stco", 8), ("stts", 8)] {
        let mut bytes = fixture_bytes("tone440_stereo_44k.m4a");
        let pos = bytes.windows(4).position(|w| w == atom.as_bytes()).unwrap();
        bytes[pos + count_at..pos + count_at + 4].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        let started = Instant::now();
        let result = decode_bytes(&bytes, None);
        assert!(started.elapsed() < Duration::from_millis(100));
        assert!(
            matches!(result, Err(AudioError::Corrupt(_))),
            "{atom}: {result:?}"
        );
    }
}

/// A FLAC file whose header is intact but whose audio frames are garbage.
#[test]
fn flac_with_garbage_frames_is_corrupt() {
    let mut bytes = fixture_bytes("tone440_stereo_22k.flac");
    let mut rng = Rng(3);
    let start = bytes.len() / 4;
    for b in &mut bytes[start..] {
        *b = rng.next_u64() as u8;
    }
    assert!(matches!(
        decode_bytes(&bytes, Some("flac")),
        Err(AudioError::Corrupt(_))
    ));
}

/// A damaged stretch inside an MP3 is skipped; the audio keeps its length and the tone.
#[test]
fn damaged_mp3_packets_are_skipped() {
    let mut bytes = fixture_bytes("tone440_stereo_44k.mp3");
    let mut rng = Rng(4);
    let start = bytes.len() / 3;
    for b in &mut bytes[start..start + 200] {
        *b = rng.next_u64() as u8;
    }
    let audio = decode_bytes(&bytes, Some("mp3")).unwrap();
    assert!((audio.duration_seconds() - 1.0).abs() < 0.03);
    let hz = tone_frequency(&audio.to_mono()[..10_000], audio.sample_rate);
    assert!((hz - TONE_HZ).abs() < 2.0, "{hz} Hz");
}

/// A header claiming 4 GB of audio (hours at these rates) is rejected from the header
/// alone, at once, without allocating for it.
#[test]
fn wav_claiming_4_gb_is_too_long_at_once() {
    for (channels, rate) in [(2u16, 44_100u32), (1, 16_000)] {
        let bytes = wav_bytes(channels, rate, 16, 0xFFFF_FF00, &[0; 4000]);
        let started = Instant::now();
        let result = decode_bytes(&bytes, Some("wav"));
        assert!(started.elapsed() < Duration::from_millis(100));
        match result {
            Err(AudioError::TooLong {
                seconds,
                limit_seconds,
            }) => {
                assert!(seconds > limit_seconds);
                assert_eq!(limit_seconds, 4.0 * 3600.0);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn wav_with_zero_channels() {
    let bytes = wav_bytes(0, 16_000, 16, 100, &[0; 100]);
    assert!(matches!(
        decode_bytes(&bytes, None),
        Err(AudioError::InvalidChannels(0))
    ));
}

#[test]
fn wav_with_zero_or_absurd_sample_rate() {
    for rate in [0u32, 1_000_000, u32::MAX] {
        let bytes = wav_bytes(1, rate, 16, 100, &[0; 100]);
        match decode_bytes(&bytes, None) {
            Err(AudioError::InvalidSampleRate(r)) => assert_eq!(r, rate),
            other => panic!("{rate} Hz: {other:?}"),
        }
    }
}

#[test]
fn wav_with_no_samples() {
    let bytes = wav_bytes(1, 16_000, 16, 0, &[]);
    assert!(matches!(
        decode_bytes(&bytes, None),
        Err(AudioError::ZeroLength)
    ));
}

#[test]
fn container_without_audio_track() {
    for name in ["video_only.mp4", "video_only.mkv"] {
        assert!(
            matches!(decode_file(fixture(name)), Err(AudioError::NoAudioTrack)),
            "{name}"
        );
    }
}

#[test]
fn opus_is_an_unsupported_codec() {
    match decode_file(fixture("tone440.opus")) {
        Err(AudioError::UnsupportedCodec(name)) => assert_eq!(name, "opus"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_read_well() {
    let err = decode_file(fixture("missing.mp3")).unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    assert!(err.to_string().contains("missing.mp3"), "{err}");
    let err = decode_file(fixture("tone440.opus")).unwrap_err();
    assert_eq!(err.to_string(), "unsupported audio codec: opus");
}
