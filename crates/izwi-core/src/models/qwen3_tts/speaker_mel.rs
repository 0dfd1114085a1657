//! The speaker encoder's input: a log-mel spectrogram of 24 kHz audio as the reference
//! computes it (1024-point STFT, periodic Hann window, hop 256, reflect padding of 384 on
//! each side and no centring, magnitude, 128 Slaney mel bins over 0–12 kHz, natural log
//! floored at 1e-5).

use candle_core::{Device, Result, Tensor};

use crate::models::shared::mel_filters::slaney_mel_filters;

pub const SAMPLE_RATE: u32 = 24_000;
const N_FFT: usize = 1024;
const HOP: usize = 256;
const N_MELS: usize = 128;
const N_FREQS: usize = N_FFT / 2 + 1;

pub struct SpeakerMel {
    /// `[N_FFT, N_FREQS]` cosine and sine bases, the window folded in.
    cos: Tensor,
    sin: Tensor,
    /// `[N_FREQS, N_MELS]`
    filters_t: Tensor,
    device: Device,
}

impl SpeakerMel {
    pub fn new(device: &Device) -> Result<Self> {
        let mut cos = Vec::with_capacity(N_FFT * N_FREQS);
        let mut sin = Vec::with_capacity(N_FFT * N_FREQS);
        for n in 0..N_FFT {
            let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos();
            for k in 0..N_FREQS {
                let angle = 2.0 * std::f64::consts::PI * ((n * k) % N_FFT) as f64 / N_FFT as f64;
                cos.push((w * angle.cos()) as f32);
                sin.push((w * angle.sin()) as f32);
            }
        }
        let filters = slaney_mel_filters(N_MELS, N_FFT, f64::from(SAMPLE_RATE), 0.0, 12_000.0);
        Ok(Self {
            cos: Tensor::from_vec(cos, (N_FFT, N_FREQS), device)?,
            sin: Tensor::from_vec(sin, (N_FFT, N_FREQS), device)?,
            filters_t: Tensor::from_vec(filters, (N_MELS, N_FREQS), device)?
                .t()?
                .contiguous()?,
            device: device.clone(),
        })
    }

    /// `[frames, 128]` for 24 kHz mono samples (at least one frame's worth).
    pub fn compute(&self, samples: &[f32]) -> Result<Tensor> {
        let pad = (N_FFT - HOP) / 2;
        if samples.len() <= pad || samples.len() + 2 * pad < N_FFT {
            candle_core::bail!("the reference audio is too short for a speaker embedding");
        }
        let n = samples.len();
        let mut padded = Vec::with_capacity(n + 2 * pad);
        padded.extend((1..=pad).rev().map(|i| samples[i]));
        padded.extend_from_slice(samples);
        padded.extend((1..=pad).map(|i| samples[n - 1 - i]));
        let count = (padded.len() - N_FFT) / HOP + 1;
        let mut frames = Vec::with_capacity(count * N_FFT);
        for f in 0..count {
            frames.extend_from_slice(&padded[f * HOP..f * HOP + N_FFT]);
        }
        let frames = Tensor::from_vec(frames, (count, N_FFT), &self.device)?;
        let re = frames.matmul(&self.cos)?;
        let im = frames.matmul(&self.sin)?;
        let magnitude = ((re.sqr()? + im.sqr()?)? + 1e-9)?.sqrt()?;
        magnitude
            .matmul(&self.filters_t)?
            .clamp(1e-5f32, f32::MAX)?
            .log()
    }
}
