//! LFM2.5-Audio's audio detokenizer (its `audio_detokenizer/` folder, as PyPI
//! liquid-audio 1.3.0's `LFM2AudioDetokenizer` runs it), which replaces Mimi: the codes
//! of a frame are averaged from one fused embedding table, each frame is repeated 6
//! times along time, an LFM2 backbone runs over the whole sequence (attention causal
//! within a sliding window), a linear gives each step a log-magnitude and a phase
//! spectrum, and an inverse STFT makes 24 kHz audio.

use std::path::Path;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;

use crate::models::lfm2::{Lfm2, Lfm2Config};
use crate::models::shared::weights::map_safetensors;

/// Entries per codebook (liquid-audio's codes are in `0..2048`).
pub const CODEBOOK_SIZE: usize = 2048;
/// Backbone steps per code frame (liquid-audio's fixed upsampling).
const UPSAMPLE: usize = 6;
/// liquid-audio's window when the config names none.
const DEFAULT_SLIDING_WINDOW: usize = 30;

pub struct AudioDetokenizer {
    /// `[codebooks * CODEBOOK_SIZE, width]`: codebook k's code c at row k·2048 + c.
    embedding: Tensor,
    codebooks: usize,
    backbone: Lfm2,
    sliding_window: usize,
    lin_weight: Tensor,
    lin_bias: Tensor,
    istft: Istft,
    device: Device,
}

impl AudioDetokenizer {
    /// Loads `config.json` and `model.safetensors` from an `audio_detokenizer/` folder.
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Self> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| {
            candle_core::Error::msg(format!("cannot read {}: {e}", config_path.display()))
        })?;
        let mut json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            candle_core::Error::msg(format!("invalid {}: {e}", config_path.display()))
        })?;
        let sliding_window = match json.get("sliding_window") {
            None | Some(serde_json::Value::Null) => DEFAULT_SLIDING_WINDOW,
            Some(v) => v.as_u64().filter(|&w| w > 0).ok_or_else(|| {
                candle_core::Error::msg(format!("sliding_window {v} is not a positive integer"))
            })? as usize,
        };
        // liquid-audio reads llama.cpp's "sliding_attention" as full attention and
        // applies its sliding-window mask to every attention layer.
        if let Some(types) = json.get_mut("layer_types").and_then(|t| t.as_array_mut()) {
            for t in types.iter_mut() {
                if t == "sliding_attention" {
                    *t = "full_attention".into();
                }
            }
        }
        let config: Lfm2Config = serde_json::from_value(json).map_err(|e| {
            candle_core::Error::msg(format!("invalid {}: {e}", config_path.display()))
        })?;
        let weights_path = dir.join("model.safetensors");
        let tensors = candle_core::safetensors::load(&weights_path, device)?;
        let get = |name: &str| -> Result<Tensor> {
            tensors
                .get(name)
                .ok_or_else(|| {
                    candle_core::Error::msg(format!("{} has no {name}", weights_path.display()))
                })?
                .to_dtype(DType::F32)
        };
        let embedding = get("emb.emb.weight")?;
        let (rows, width) = embedding.dims2()?;
        if rows == 0 || rows % CODEBOOK_SIZE != 0 || width != config.hidden_size {
            candle_core::bail!(
                "emb.emb.weight is [{rows}, {width}]: expected codebooks × {CODEBOOK_SIZE} rows of the backbone's width {}",
                config.hidden_size
            );
        }
        let lin_weight = get("lin.weight")?;
        let (out, lin_in) = lin_weight.dims2()?;
        let lin_bias = get("lin.bias")?;
        let window = get("istft.window")?;
        let win = window.dims1()?;
        if lin_in != width || out < 4 || out % 2 != 0 || lin_bias.dims() != [out] {
            candle_core::bail!(
                "lin is [{out}, {lin_in}]: expected an even output over width {width}"
            );
        }
        let n_fft = out - 2;
        if win != n_fft || n_fft % 4 != 0 {
            candle_core::bail!("istft.window has {win} samples for an FFT of {n_fft}");
        }
        let vb: VarBuilder = map_safetensors(&[&weights_path], DType::F32, device)?;
        let vb = vb.rename_f(|name| name.replacen("model.", "lfm.", 1));
        let backbone = Lfm2::load(config, vb)?;
        Ok(Self {
            embedding,
            codebooks: rows / CODEBOOK_SIZE,
            backbone,
            sliding_window,
            lin_weight,
            lin_bias,
            // liquid-audio's hop is a quarter of the window (320 of 1280).
            istft: Istft::new(window, n_fft / 4)?,
            device: device.clone(),
        })
    }

    /// Output samples per code frame.
    pub fn samples_per_frame(&self) -> usize {
        UPSAMPLE * self.istft.hop
    }

    /// Samples at the end of a decode that frames still to come change: the inverse
    /// STFT's last overlap. Everything before them stays as later decodes give it.
    pub fn overlap(&self) -> usize {
        (self.istft.n_fft - self.istft.hop) / 2
    }

    /// 24 kHz audio for `frames` (each one code per codebook).
    pub fn decode(&self, frames: &[Vec<u32>]) -> Result<Vec<f32>> {
        if frames.is_empty() {
            return Ok(Vec::new());
        }
        let mut rows = Vec::with_capacity(frames.len() * self.codebooks);
        for (i, frame) in frames.iter().enumerate() {
            if frame.len() != self.codebooks {
                candle_core::bail!(
                    "frame {i} has {} codes for {} codebooks",
                    frame.len(),
                    self.codebooks
                );
            }
            for (k, &code) in frame.iter().enumerate() {
                if code as usize >= CODEBOOK_SIZE {
                    candle_core::bail!("frame {i} has code {code}, not below {CODEBOOK_SIZE}");
                }
                rows.push((k * CODEBOOK_SIZE) as u32 + code);
            }
        }
        let n = frames.len();
        let width = self.embedding.dim(1)?;
        let ids = Tensor::new(rows.as_slice(), &self.device)?;
        let x = self
            .embedding
            .index_select(&ids, 0)?
            .reshape((n, self.codebooks, width))?
            .mean(1)?;
        // Nearest-exact upsampling by a whole factor repeats each frame.
        let steps = n * UPSAMPLE;
        let x = x
            .unsqueeze(1)?
            .expand((n, UPSAMPLE, width))?
            .reshape((steps, width))?;
        let x = self.backbone.forward_dense(&x, &self.mask(steps)?)?;
        let spec = x
            .matmul(&self.lin_weight.t()?)?
            .broadcast_add(&self.lin_bias)?;
        let bins = spec.dim(1)? / 2;
        let magnitude = spec.narrow(1, 0, bins)?.exp()?;
        let angle = spec.narrow(1, bins, bins)?;
        let re = (&magnitude * angle.cos()?)?;
        let im = (&magnitude * angle.sin()?)?;
        self.istft.forward(&re, &im)
    }

    /// 0 where step i sees step j (j ≤ i, fewer than `sliding_window` steps back), −∞
    /// elsewhere.
    fn mask(&self, steps: usize) -> Result<Tensor> {
        let mask: Vec<f32> = (0..steps)
            .flat_map(|i| {
                (0..steps).map(move |j| {
                    if j <= i && i - j < self.sliding_window {
                        0.0
                    } else {
                        f32::NEG_INFINITY
                    }
                })
            })
            .collect();
        Tensor::from_vec(mask, (steps, steps), &self.device)
    }
}

/// Inverse STFT with "same" padding: each frame's real inverse FFT, windowed,
/// overlap-added, trimmed by (window − hop) / 2 at each end and divided by the
/// overlap-added squared window.
struct Istft {
    window: Tensor,
    n_fft: usize,
    hop: usize,
    /// `[bins, n_fft]`: the inverse real DFT's cosine and sine terms, with the
    /// 1/n and the doubling of the bins between DC and Nyquist folded in.
    cos: Tensor,
    sin: Tensor,
}

impl Istft {
    fn new(window: Tensor, hop: usize) -> Result<Self> {
        let n = window.dims1()?;
        let bins = n / 2 + 1;
        let (mut cos, mut sin) = (Vec::with_capacity(bins * n), Vec::with_capacity(bins * n));
        for k in 0..bins {
            let weight = if k == 0 || k == n / 2 { 1.0 } else { 2.0 } / n as f64;
            for t in 0..n {
                let angle = 2.0 * std::f64::consts::PI * ((k * t) % n) as f64 / n as f64;
                cos.push((weight * angle.cos()) as f32);
                sin.push((-weight * angle.sin()) as f32);
            }
        }
        let device = window.device().clone();
        Ok(Self {
            cos: Tensor::from_vec(cos, (bins, n), &device)?,
            sin: Tensor::from_vec(sin, (bins, n), &device)?,
            window,
            n_fft: n,
            hop,
        })
    }

    /// `re`, `im`: `[frames, bins]`.
    fn forward(&self, re: &Tensor, im: &Tensor) -> Result<Vec<f32>> {
        let frames = re.dim(0)?;
        let n = self.window.dims1()?;
        let bins = self.cos.dim(0)?;
        if re.dim(1)? != bins {
            candle_core::bail!("{} frequency bins for an FFT of {n}", re.dim(1)?);
        }
        let signal = (re.matmul(&self.cos)? + im.matmul(&self.sin)?)?
            .broadcast_mul(&self.window)?
            .to_vec2::<f32>()?;
        let window = self.window.to_vec1::<f32>()?;
        let length = (frames - 1) * self.hop + n;
        let (mut out, mut envelope) = (vec![0f32; length], vec![0f32; length]);
        for (f, frame) in signal.iter().enumerate() {
            let start = f * self.hop;
            for (t, (&s, &w)) in frame.iter().zip(&window).enumerate() {
                out[start + t] += s;
                envelope[start + t] += w * w;
            }
        }
        let pad = (n - self.hop) / 2;
        Ok(out[pad..length - pad]
            .iter()
            .zip(&envelope[pad..length - pad])
            .map(|(s, e)| s / e)
            .collect())
    }
}
