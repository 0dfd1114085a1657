//! Whisper's input features: a log-mel spectrogram of 30 seconds of 16 kHz audio.
//!
//! As OpenAI's `whisper/audio.py` computes it: the audio is zero-padded or cut to 30 s,
//! a 400-point STFT with a periodic Hann window and hop 160 (centred, reflect padding)
//! gives 3000 frames of power spectra, a Slaney-normalised mel filterbank (as librosa
//! builds it) projects them to 80 or 128 bins, then `log10`, a floor 8 below the
//! maximum, and `(x + 4) / 4`.

use candle_core::{Device, Result, Tensor};

use crate::models::shared::mel_filters::slaney_mel_filters;

pub const SAMPLE_RATE: usize = 16_000;
pub const N_FFT: usize = 400;
pub const HOP_LENGTH: usize = 160;
/// Samples in one 30-second window.
pub const N_SAMPLES: usize = 30 * SAMPLE_RATE;
/// Mel frames in one window.
pub const N_FRAMES: usize = N_SAMPLES / HOP_LENGTH;
const N_FREQS: usize = N_FFT / 2 + 1;

/// Computes log-mel features; holds the DFT bases and the filterbank.
pub struct LogMel {
    n_mels: usize,
    /// `[N_FFT, N_FREQS]` cosine and sine bases, the window folded in.
    cos: Tensor,
    sin: Tensor,
    /// `[N_FREQS, n_mels]`
    filters_t: Tensor,
    device: Device,
}

impl LogMel {
    pub fn new(n_mels: usize, device: &Device) -> Result<Self> {
        let window: Vec<f64> = (0..N_FFT)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos())
            .collect();
        let mut cos = Vec::with_capacity(N_FFT * N_FREQS);
        let mut sin = Vec::with_capacity(N_FFT * N_FREQS);
        for (n, w) in window.iter().enumerate() {
            for k in 0..N_FREQS {
                // n·k reduced mod N_FFT keeps the angle small and the basis exact.
                let angle = 2.0 * std::f64::consts::PI * ((n * k) % N_FFT) as f64 / N_FFT as f64;
                cos.push((w * angle.cos()) as f32);
                sin.push((w * angle.sin()) as f32);
            }
        }
        let filters = mel_filters(n_mels);
        let filters_t = Tensor::from_vec(filters, (n_mels, N_FREQS), device)?
            .t()?
            .contiguous()?;
        Ok(Self {
            n_mels,
            cos: Tensor::from_vec(cos, (N_FFT, N_FREQS), device)?,
            sin: Tensor::from_vec(sin, (N_FFT, N_FREQS), device)?,
            filters_t,
            device: device.clone(),
        })
    }

    pub fn n_mels(&self) -> usize {
        self.n_mels
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The mel-filtered power spectrum of STFT frames (`[frames, N_FFT]` samples, the
    /// window not yet applied): `[frames, n_mels]`, before the log.
    pub fn mel_power(&self, frames: &Tensor) -> Result<Tensor> {
        let re = frames.matmul(&self.cos)?;
        let im = frames.matmul(&self.sin)?;
        (re.sqr()? + im.sqr()?)?.matmul(&self.filters_t)
    }

    /// Features of up to 30 s of 16 kHz mono audio (longer input is cut):
    /// `[n_mels, 3000]`, f32.
    pub fn compute(&self, samples: &[f32]) -> Result<Tensor> {
        let mut audio = vec![0f32; N_SAMPLES];
        let n = samples.len().min(N_SAMPLES);
        audio[..n].copy_from_slice(&samples[..n]);
        // Centre the frames: reflect-pad N_FFT/2 on each side, as torch.stft(center=True).
        let pad = N_FFT / 2;
        let mut padded = Vec::with_capacity(N_SAMPLES + 2 * pad);
        padded.extend((1..=pad).rev().map(|i| audio[i]));
        padded.extend_from_slice(&audio);
        padded.extend((1..=pad).map(|i| audio[N_SAMPLES - 1 - i]));
        // The STFT has N_FRAMES + 1 frames; Whisper drops the last.
        let mut frames = Vec::with_capacity(N_FRAMES * N_FFT);
        for f in 0..N_FRAMES {
            frames.extend_from_slice(&padded[f * HOP_LENGTH..f * HOP_LENGTH + N_FFT]);
        }
        let frames = Tensor::from_vec(frames, (N_FRAMES, N_FFT), &self.device)?;
        let mel = self.mel_power(&frames)?.t()?; // [n_mels, frames]
        let log = (mel.clamp(1e-10f32, f32::MAX)?.log()? / std::f64::consts::LN_10)?;
        let max = log.max_all()?.to_scalar::<f32>()?;
        let log = log.clamp(max - 8.0, f32::MAX)?;
        ((log + 4.0)? / 4.0)?.contiguous()
    }
}

/// The Slaney-style mel filterbank librosa builds (and Whisper ships precomputed):
/// `n_mels` triangles over 0–8 kHz, each scaled to unit area. Row-major `[n_mels, 201]`.
pub fn mel_filters(n_mels: usize) -> Vec<f32> {
    slaney_mel_filters(
        n_mels,
        N_FFT,
        SAMPLE_RATE as f64,
        0.0,
        SAMPLE_RATE as f64 / 2.0,
    )
}
