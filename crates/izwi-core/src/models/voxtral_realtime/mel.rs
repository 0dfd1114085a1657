//! Voxtral Realtime's log-mel features, computed frame by frame as audio arrives.
//!
//! The same STFT and Slaney filterbank as Whisper's (400-point periodic Hann window,
//! hop 160, centred frames), but the log floor is 8 below a fixed ceiling
//! (`global_log_mel_max`) instead of the loudest frame, so a frame never changes once
//! computed and a stream's features equal the whole recording's. Frame `m` is centred
//! on sample `m * 160`: it can be computed once the samples up to `m * 160 + 200` have
//! arrived. Before the first sample and, once the audio has ended, after the last, the
//! audio is reflected, as `torch.stft(center=True)` pads it.

use candle_core::{Device, Result, Tensor};

use crate::models::whisper::mel::{LogMel, HOP_LENGTH, N_FFT};

/// transformers' `VoxtralRealtimeFeatureExtractor` default.
pub const DEFAULT_GLOBAL_LOG_MEL_MAX: f32 = 1.5;

pub struct StreamingMel {
    mel: LogMel,
    global_max: f32,
}

impl StreamingMel {
    pub fn new(n_mels: usize, global_max: f32, device: &Device) -> Result<Self> {
        Ok(Self {
            mel: LogMel::new(n_mels, device)?,
            global_max,
        })
    }

    /// Frames that `len` samples allow; with `ended`, every frame of the audio (the
    /// STFT's last frame dropped, as transformers does).
    pub fn available(len: usize, ended: bool) -> usize {
        if ended {
            len / HOP_LENGTH
        } else {
            (len + 1).saturating_sub(N_FFT / 2).div_ceil(HOP_LENGTH)
        }
    }

    /// The first sample frame `m` reads (before any reflection).
    pub fn first_sample(m: usize) -> usize {
        (m * HOP_LENGTH).saturating_sub(N_FFT / 2)
    }

    /// Frames `first..first + count` of an audio whose samples from `offset` on are
    /// `samples` (the earlier ones no longer needed): `[count, n_mels]`, f32. Every
    /// frame asked for must be [`available`](Self::available) and read no sample before
    /// `offset`.
    pub fn frames(
        &self,
        samples: &[f32],
        offset: usize,
        ended: bool,
        first: usize,
        count: usize,
    ) -> Result<Tensor> {
        let len = offset + samples.len();
        if first + count > Self::available(len, ended) {
            candle_core::bail!(
                "mel frames {first}..{} need audio beyond its {len} samples",
                first + count
            );
        }
        // Frame 0 reflects samples 1..=200 before the start.
        let lowest = if first == 0 {
            1
        } else {
            Self::first_sample(first)
        };
        if count > 0 && lowest < offset {
            candle_core::bail!("mel frame {first} needs samples before {offset}");
        }
        let len = len as isize;
        let sample = |i: isize| -> f32 {
            let i = if i < 0 { -i } else { i };
            let i = if i >= len { 2 * (len - 1) - i } else { i };
            samples
                .get((i - offset as isize).max(0) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let mut windows = Vec::with_capacity(count * N_FFT);
        for m in first..first + count {
            let start = (m * HOP_LENGTH) as isize - (N_FFT / 2) as isize;
            windows.extend((0..N_FFT as isize).map(|i| sample(start + i)));
        }
        let windows = Tensor::from_vec(windows, (count, N_FFT), self.mel.device())?;
        let log = (self
            .mel
            .mel_power(&windows)?
            .clamp(1e-10f32, f32::MAX)?
            .log()?
            / std::f64::consts::LN_10)?;
        let log = log.clamp(self.global_max - 8.0, f32::MAX)?;
        (log + 4.0)? / 4.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_available_once_its_window_has_arrived() {
        // Frame 0 needs samples up to 199, frame 1 up to 359.
        assert_eq!(StreamingMel::available(199, false), 0);
        assert_eq!(StreamingMel::available(200, false), 1);
        assert_eq!(StreamingMel::available(359, false), 1);
        assert_eq!(StreamingMel::available(360, false), 2);
        assert_eq!(StreamingMel::available(1280, true), 8);
    }

    #[test]
    fn frames_computed_in_pieces_equal_frames_computed_at_once() {
        let samples: Vec<f32> = (0..4000).map(|i| (i as f32 * 0.031).sin() * 0.3).collect();
        let mel = StreamingMel::new(128, DEFAULT_GLOBAL_LOG_MEL_MAX, &Device::Cpu).unwrap();
        let all = mel.frames(&samples, 0, true, 0, 25).unwrap();
        let head = mel.frames(&samples[..2000], 0, false, 0, 11).unwrap();
        // The rest from only the samples it reads.
        let from = StreamingMel::first_sample(11);
        let tail = mel.frames(&samples[from..], from, true, 11, 14).unwrap();
        assert!(mel
            .frames(&samples[from + 1..], from + 1, true, 11, 14)
            .is_err());
        let pieces = Tensor::cat(&[head, tail], 0).unwrap();
        let diff = (all - pieces)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(diff < 1e-6, "{diff}");
    }
}
