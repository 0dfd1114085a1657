//! The tiny LFM2-Audio checkpoint and liquid-audio's reference run on it
//! (tests/fixtures/make_lfm2_audio_tiny.py), for the tests that read them.

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{Device, Tensor};

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lfm2-audio-tiny")
}

pub fn reference() -> HashMap<String, Tensor> {
    candle_core::safetensors::load(dir().join("reference.safetensors"), &Device::Cpu)
        .expect("reference.safetensors")
}

/// The reference's steps: (text token or -1, frame or empty).
pub fn expected_steps(reference: &HashMap<String, Tensor>, case: &str) -> Vec<(i64, Vec<u32>)> {
    let kinds = reference[&format!("{case}_out_kind")]
        .to_vec1::<i64>()
        .unwrap();
    let texts = reference[&format!("{case}_out_text")]
        .to_vec1::<i64>()
        .unwrap();
    let audio = reference[&format!("{case}_out_audio")]
        .to_vec2::<i64>()
        .unwrap();
    kinds
        .iter()
        .zip(texts)
        .zip(audio)
        .map(|((&k, t), f)| {
            if k == 0 {
                (t, Vec::new())
            } else {
                (-1, f.iter().map(|&c| c as u32).collect())
            }
        })
        .collect()
}
