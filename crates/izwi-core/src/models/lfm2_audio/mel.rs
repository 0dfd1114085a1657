//! LFM2-Audio's input features: NeMo's log-mel (`AudioToMelSpectrogramPreprocessor` as
//! liquid-audio configures it, in eval mode: no dither).
//!
//! Pre-emphasis (0.97), a centred STFT with zero padding (`n_fft` points; the symmetric
//! Hann window of `window_size` seconds centred in it; hop `window_stride` seconds), the
//! power spectrum, a Slaney mel filterbank over 0..sample_rate/2, `ln(x + 2^-24)`, then
//! each mel bin normalised to mean 0 and (unbiased) standard deviation 1 over the
//! audio's frames. The STFT's last frame (centred on the end) is outside the audio's
//! length: it is set to 0 and kept, as liquid-audio passes it on to the encoder.
//!
//! The DFT runs as f64 matmuls: quiet bins sit near the `2^-24` floor, where a float32
//! rounding of the power would move the log visibly.

use candle_core::{DType, Device, Result, Tensor};

use super::config::PreprocessorConfig;
use crate::models::shared::mel_filters::slaney_mel_filters;

const PREEMPHASIS: f64 = 0.97;
const LOG_GUARD: f64 = 1.0 / (1u64 << 24) as f64;
const STD_GUARD: f64 = 1e-5;

pub struct NemoMel {
    n_fft: usize,
    hop: usize,
    n_mels: usize,
    /// `[n_fft, n_fft / 2 + 1]` cosine and sine bases with the window folded in, f64.
    cos: Tensor,
    sin: Tensor,
    /// `[n_fft / 2 + 1, n_mels]`, f64.
    filters_t: Tensor,
}

impl NemoMel {
    pub fn new(config: &PreprocessorConfig) -> Result<Self> {
        config.validate()?;
        let rate = config.sample_rate as f64;
        let win = (config.window_size * rate) as usize;
        let hop = (config.window_stride * rate) as usize;
        let n_fft = config.n_fft;
        if win > n_fft || hop == 0 {
            candle_core::bail!("preprocessor window {win} / hop {hop} do not fit n_fft {n_fft}");
        }
        // torch.stft centres a shorter window inside the n_fft frame.
        let offset = (n_fft - win) / 2;
        let window: Vec<f64> = (0..n_fft)
            .map(|n| {
                if n < offset || n >= offset + win {
                    0.0
                } else {
                    let i = (n - offset) as f64;
                    0.5 - 0.5 * (2.0 * std::f64::consts::PI * i / (win - 1) as f64).cos()
                }
            })
            .collect();
        let freqs = n_fft / 2 + 1;
        let mut cos = Vec::with_capacity(n_fft * freqs);
        let mut sin = Vec::with_capacity(n_fft * freqs);
        for (n, w) in window.iter().enumerate() {
            for k in 0..freqs {
                let angle = 2.0 * std::f64::consts::PI * ((n * k) % n_fft) as f64 / n_fft as f64;
                cos.push(w * angle.cos());
                sin.push(w * angle.sin());
            }
        }
        let filters: Vec<f64> = slaney_mel_filters(config.features, n_fft, rate, 0.0, rate / 2.0)
            .into_iter()
            .map(f64::from)
            .collect();
        let device = Device::Cpu;
        Ok(Self {
            n_fft,
            hop,
            n_mels: config.features,
            cos: Tensor::from_vec(cos, (n_fft, freqs), &device)?,
            sin: Tensor::from_vec(sin, (n_fft, freqs), &device)?,
            filters_t: Tensor::from_vec(filters, (config.features, freqs), &device)?
                .t()?
                .contiguous()?,
        })
    }

    /// Frames for `samples` audio samples: the STFT's, one more than the valid ones.
    pub fn frames(&self, samples: usize) -> usize {
        samples / self.hop + 1
    }

    /// Features of mono audio at the configured rate: `[n_mels, frames]`, f32.
    pub fn compute(&self, samples: &[f32]) -> Result<Tensor> {
        if samples.len() < 2 * self.hop {
            candle_core::bail!(
                "audio of {} samples is too short for a log-mel (at least {})",
                samples.len(),
                2 * self.hop
            );
        }
        let emphasised: Vec<f64> = (0..samples.len())
            .map(|i| {
                let x = samples[i] as f64;
                if i == 0 {
                    x
                } else {
                    // As torch: the difference in float32.
                    (samples[i] - PREEMPHASIS as f32 * samples[i - 1]) as f64
                }
            })
            .collect();
        let frames = self.frames(samples.len());
        let half = (self.n_fft / 2) as isize;
        let mut windows = Vec::with_capacity(frames * self.n_fft);
        for m in 0..frames {
            let start = (m * self.hop) as isize - half;
            windows.extend((0..self.n_fft as isize).map(|i| {
                let j = start + i;
                if j < 0 || j as usize >= emphasised.len() {
                    0.0
                } else {
                    emphasised[j as usize]
                }
            }));
        }
        let windows = Tensor::from_vec(windows, (frames, self.n_fft), &Device::Cpu)?;
        let re = windows.matmul(&self.cos)?;
        let im = windows.matmul(&self.sin)?;
        let power = (re.sqr()? + im.sqr()?)?;
        // [frames, n_mels] -> ln(x + guard)
        let log = (power.matmul(&self.filters_t)? + LOG_GUARD)?.log()?;
        let log = log.t()?.contiguous()?; // [n_mels, frames]
        let valid = frames - 1;
        let head = log.narrow(1, 0, valid)?;
        let mean = head.mean_keepdim(1)?;
        let centred = head.broadcast_sub(&mean)?;
        let var = (centred.sqr()?.sum_keepdim(1)? / (valid as f64 - 1.0))?;
        let std = (var.sqrt()? + STD_GUARD)?;
        let normalised = centred.broadcast_div(&std)?;
        let tail = Tensor::zeros((self.n_mels, 1), DType::F64, &Device::Cpu)?;
        Tensor::cat(&[normalised, tail], 1)?.to_dtype(DType::F32)
    }
}
