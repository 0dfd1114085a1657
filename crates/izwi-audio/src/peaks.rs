//! A file's waveform, computed while it decodes: the peak magnitude of its mono mix in
//! each of a number of equal spans of time, without holding its samples.
//!
//! The length is not known until the end (many containers do not declare it), so the
//! peaks are first kept per block of frames; when the blocks fill their budget, pairs are
//! merged and blocks become twice as long. Memory stays within a few times the number of
//! spans asked for, whatever the file's length, and each span's peak is exact up to a
//! block at its edges.

use std::path::Path;

use crate::decode::{decode_path_with, downmix_into};
use crate::AudioError;

/// Peaks of mono samples pushed in order, in blocks of `block_frames` frames.
#[derive(Debug, Clone)]
pub struct PeakBlocks {
    blocks: Vec<f32>,
    block_frames: u64,
    /// The peak of the block being filled, and how many frames it has.
    current: f32,
    in_current: u64,
    frames: u64,
    max_blocks: usize,
}

impl PeakBlocks {
    /// Ready for `buckets` spans: blocks stay at least twice as fine as the spans.
    pub fn new(buckets: usize) -> Self {
        // Even, so that merging pairs halves it exactly.
        let max_blocks = (buckets.max(1) * 4).max(4096);
        Self {
            blocks: Vec::new(),
            block_frames: 1,
            current: 0.0,
            in_current: 0,
            frames: 0,
            max_blocks,
        }
    }

    /// Adds mono samples, in order.
    pub fn push(&mut self, samples: &[f32]) {
        for s in samples {
            self.current = self.current.max(s.abs());
            self.in_current += 1;
            if self.in_current == self.block_frames {
                self.blocks.push(self.current);
                self.current = 0.0;
                self.in_current = 0;
                if self.blocks.len() == self.max_blocks {
                    self.merge_pairs();
                }
            }
        }
        self.frames += samples.len() as u64;
    }

    fn merge_pairs(&mut self) {
        let merged: Vec<f32> = self
            .blocks
            .chunks(2)
            .map(|pair| pair.iter().fold(0.0f32, |a, &b| a.max(b)))
            .collect();
        self.blocks = merged;
        self.block_frames *= 2;
    }

    /// The peak magnitude (0 to 1) in each of `buckets` equal spans of what was pushed.
    /// Spans shorter than a sample (a short file, many buckets) reuse the nearest sample.
    pub fn finish(mut self, buckets: usize) -> Vec<f32> {
        if self.in_current > 0 {
            self.blocks.push(self.current);
        }
        let n = self.frames as usize;
        if n == 0 {
            return vec![0.0; buckets];
        }
        let width = self.block_frames as usize;
        (0..buckets)
            .map(|i| {
                let start = (i * n / buckets).min(n - 1);
                let end = ((i + 1) * n / buckets).clamp(start + 1, n);
                self.blocks[start / width..=(end - 1) / width]
                    .iter()
                    .fold(0.0f32, |peak, &p| peak.max(p))
                    .min(1.0)
            })
            .collect()
    }
}

/// The peak magnitude (0 to 1) of mono `samples` in each of `buckets` equal spans.
pub fn peaks(samples: &[f32], buckets: usize) -> Vec<f32> {
    let mut blocks = PeakBlocks::new(buckets);
    blocks.push(samples);
    blocks.finish(buckets)
}

/// The waveform of the file at `path` as [`peaks`] of its mono mix, computed packet by
/// packet while it decodes. `stop` is asked before each packet's samples are taken in;
/// when it says true, decoding ends with [`AudioError::Cancelled`].
pub fn decode_peaks(
    path: impl AsRef<Path>,
    buckets: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<f32>, AudioError> {
    let mut blocks = PeakBlocks::new(buckets);
    let mut mono = Vec::new();
    decode_path_with(path.as_ref(), &mut |samples, _, channels| {
        if stop() {
            return Err(AudioError::Cancelled);
        }
        mono.clear();
        downmix_into(samples, channels, &mut mono);
        blocks.push(&mono);
        Ok(())
    })?;
    Ok(blocks.finish(buckets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_per_bucket_maxima_of_magnitudes() {
        let samples = [0.1, -0.5, 0.2, 0.3, -0.1, 0.0, 2.0, -0.25];
        assert_eq!(peaks(&samples, 4), [0.5, 0.3, 0.1, 1.0]);
        assert_eq!(peaks(&samples, 1), [1.0]);
        // More buckets than samples: every bucket still shows a sample.
        assert_eq!(peaks(&[0.5, -0.25], 4), [0.5, 0.5, 0.25, 0.25]);
        assert_eq!(peaks(&[], 3), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn merged_blocks_keep_every_peak_and_stay_within_budget() {
        // One loud sample in each tenth of a signal far longer than the block budget.
        let n = 1_000_000;
        let mut samples = vec![0.01f32; n];
        for i in 0..10 {
            samples[i * n / 10 + 1234] = -0.1 * (i + 1) as f32;
        }
        let mut blocks = PeakBlocks::new(10);
        for chunk in samples.chunks(1000) {
            blocks.push(chunk);
            assert!(blocks.blocks.len() < blocks.max_blocks);
        }
        assert!(blocks.block_frames > 1);
        let got = blocks.finish(10);
        for (i, p) in got.iter().enumerate() {
            assert!((p - 0.1 * (i + 1) as f32).abs() < 1e-6, "{got:?}");
        }
    }
}
