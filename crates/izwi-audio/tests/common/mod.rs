//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test file uses a different subset

use std::path::PathBuf;

/// The tone every fixture holds (see fixtures/make_fixtures.sh): 440 Hz, amplitude 0.5 on
/// the left channel (and mono files), 0.25 on the right.
pub const TONE_HZ: f64 = 440.0;
pub const LEFT_AMPLITUDE: f32 = 0.5;
pub const RIGHT_AMPLITUDE: f32 = 0.25;

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("fixture is committed")
}

pub fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

/// One channel of interleaved samples.
pub fn channel(samples: &[f32], channels: u16, index: usize) -> Vec<f32> {
    samples
        .iter()
        .skip(index)
        .step_by(usize::from(channels))
        .copied()
        .collect()
}

/// Frequency of a steady tone from its upward zero crossings, interpolated to sub-sample
/// precision: (crossings - 1) periods between the first and the last.
pub fn tone_frequency(samples: &[f32], sample_rate: u32) -> f64 {
    let mut crossings = Vec::new();
    for i in 1..samples.len() {
        let (a, b) = (samples[i - 1] as f64, samples[i] as f64);
        if a < 0.0 && b >= 0.0 {
            crossings.push((i - 1) as f64 + a / (a - b));
        }
    }
    assert!(crossings.len() > 2, "no tone found");
    let periods = (crossings.len() - 1) as f64;
    let span = crossings[crossings.len() - 1] - crossings[0];
    periods * f64::from(sample_rate) / span
}

/// `seconds` of a sine at `hz`, amplitude `amplitude`, sampled at `rate`.
pub fn sine(hz: f64, amplitude: f32, rate: u32, seconds: f64) -> Vec<f32> {
    let n = (seconds * f64::from(rate)).round() as usize;
    (0..n)
        .map(|i| {
            amplitude * (2.0 * std::f64::consts::PI * hz * i as f64 / f64::from(rate)).sin() as f32
        })
        .collect()
}

/// A small deterministic pseudo-random generator (xorshift64*), so tests need no crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// A fresh, empty directory for one test, under cargo's scratch directory for tests.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("izwi-audio")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test dir");
    dir
}

/// A PCM WAV file: a 16-byte fmt chunk with these fields, then a data chunk whose header
/// says `data_len` bytes followed by `data` (which may be shorter: a lying header). The RIFF
/// length is consistent with `data_len`, as a real writer would make it.
pub fn wav_bytes(channels: u16, rate: u32, bits: u16, data_len: u32, data: &[u8]) -> Vec<u8> {
    let block_align = channels.wrapping_mul(bits / 8);
    let byte_rate = rate.wrapping_mul(u32::from(block_align));
    let mut v = Vec::new();
    v.extend(b"RIFF");
    v.extend(data_len.saturating_add(36).to_le_bytes());
    v.extend(b"WAVE");
    v.extend(b"fmt ");
    v.extend(16u32.to_le_bytes());
    v.extend(1u16.to_le_bytes()); // PCM
    v.extend(channels.to_le_bytes());
    v.extend(rate.to_le_bytes());
    v.extend(byte_rate.to_le_bytes());
    v.extend(block_align.to_le_bytes());
    v.extend(bits.to_le_bytes());
    v.extend(b"data");
    v.extend(data_len.to_le_bytes());
    v.extend(data);
    v
}
