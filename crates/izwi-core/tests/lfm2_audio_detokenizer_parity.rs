//! Parity with PyPI liquid-audio 1.3.0's LFM2.5-Audio audio detokenizer on a tiny random
//! one (tests/fixtures/make_lfm2_audio_detokenizer_tiny.py; weights stored as f16, the
//! reference computed in f32 from those same weights).

use std::path::PathBuf;
use std::sync::Arc;

use candle_core::Device;
use izwi_core::models::lfm2_audio::{AudioDetokenizer, AudioOut};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lfm2-audio-detokenizer-tiny")
}

#[test]
fn waveform_matches_liquid_audio() {
    let reference =
        candle_core::safetensors::load(dir().join("reference.safetensors"), &Device::Cpu)
            .expect("reference");
    let codes = reference["codes"].to_vec2::<i64>().unwrap(); // [8, frames]
    let frames: Vec<Vec<u32>> = (0..codes[0].len())
        .map(|t| codes.iter().map(|book| book[t] as u32).collect())
        .collect();
    let detokenizer = AudioDetokenizer::from_dir(&dir(), &Device::Cpu).expect("loads");
    let wave = detokenizer.decode(&frames).expect("decodes");
    assert_eq!(wave.len(), frames.len() * detokenizer.samples_per_frame());
    let expected = reference["wave"].to_vec1::<f32>().unwrap();
    assert_eq!(wave.len(), expected.len());
    let diff = wave
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-4, "waveform differs by {diff}");
}

#[test]
fn bad_codes_are_refused() {
    let detokenizer = AudioDetokenizer::from_dir(&dir(), &Device::Cpu).expect("loads");
    let err = detokenizer.decode(&[vec![0; 7]]).unwrap_err().to_string();
    assert!(err.contains("7 codes for 8 codebooks"), "{err}");
    let err = detokenizer
        .decode(&[vec![2048; 8]])
        .unwrap_err()
        .to_string();
    assert!(err.contains("code 2048"), "{err}");
}

/// Streamed (as a spoken turn decodes it: again from the start every 12 frames, the
/// last overlap held back) the audio is the whole decode's.
#[test]
fn streamed_audio_is_the_whole_decode() {
    let reference =
        candle_core::safetensors::load(dir().join("reference.safetensors"), &Device::Cpu)
            .expect("reference");
    let codes = reference["codes"].to_vec2::<i64>().unwrap();
    // Long enough for several decodes: the fixture's frames, over and over.
    let frames: Vec<Vec<u32>> = (0..40)
        .map(|t| {
            let t = t % codes[0].len();
            codes.iter().map(|book| book[t] as u32).collect()
        })
        .collect();
    let detokenizer = AudioDetokenizer::from_dir(&dir(), &Device::Cpu).expect("loads");
    let whole = detokenizer.decode(&frames).expect("decodes");
    let mut stream = AudioOut::Detokenizer(Arc::new(detokenizer)).stream();
    let mut streamed = Vec::new();
    let mut pieces = 0;
    for frame in &frames {
        let piece = stream.push(vec![frame.clone()]).expect("decodes");
        pieces += usize::from(!piece.is_empty());
        streamed.extend(piece);
    }
    streamed.extend(stream.finish().expect("decodes"));
    assert_eq!(pieces, 3, "audio before the end, every 12 frames");
    assert_eq!(streamed.len(), whole.len());
    let diff = streamed
        .iter()
        .zip(&whole)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-5, "streamed audio differs by {diff}");
}
