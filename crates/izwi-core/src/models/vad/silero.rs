//! Silero VAD v6 (16 kHz): the probability that each 32 ms frame of audio is speech.
//!
//! Per frame, the network sees the frame's 512 samples after the previous frame's last
//! 64 (zeros before the first), reflect-padded by 64 on the right: a short-time Fourier
//! transform as a strided convolution (window 256, hop 128, 4 steps), its magnitude,
//! four convolutions with ReLU that fold the 4 steps into one 128-wide vector, an LSTM
//! cell carried from frame to frame, and a 1×1 convolution with a sigmoid. The
//! convolutional part of a whole file runs as one candle batch; the LSTM runs frame by
//! frame in plain Rust (a 512×128 matrix-vector product per frame).

use std::ops::Range;
use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{Conv1d, Conv1dConfig};

use super::segments::{chunks, speech_segments, VadOptions};
use crate::models::shared::onnx::OnnxModel;

/// Samples per frame at 16 kHz (32 ms).
pub const FRAME_SAMPLES: usize = 512;
/// Samples of the previous frame each frame sees first.
const CONTEXT_SAMPLES: usize = 64;
/// Reflect padding on the right of each frame's input.
const RIGHT_PAD: usize = 64;
const STFT_BINS: usize = 129;
const HIDDEN: usize = 128;
/// Frames whose convolutional part is computed in one batch.
const FRAMES_PER_BATCH: usize = 1024;

/// The recurrent state carried between frames.
#[derive(Debug, Clone)]
pub struct VadState {
    h: Vec<f32>,
    c: Vec<f32>,
    /// The last samples of the previous frame.
    context: Vec<f32>,
}

impl Default for VadState {
    fn default() -> Self {
        Self {
            h: vec![0.0; HIDDEN],
            c: vec![0.0; HIDDEN],
            context: vec![0.0; CONTEXT_SAMPLES],
        }
    }
}

pub struct SileroVad {
    stft: Tensor,
    convs: [Conv1d; 4],
    /// `[4·HIDDEN, HIDDEN]`, gates in PyTorch's order: input, forget, cell, output.
    weight_ih: Tensor,
    /// Row-major `[4·HIDDEN][HIDDEN]`.
    weight_hh: Vec<f32>,
    /// `bias_ih + bias_hh`, `[4·HIDDEN]`.
    bias: Vec<f32>,
    /// The output projection's weights (`[HIDDEN]`) and bias.
    out_weight: Vec<f32>,
    out_bias: f32,
    device: Device,
}

impl SileroVad {
    /// Loads `silero_vad_16k_op15.onnx` as the silero-vad package ships it: the
    /// weights are the graph's initializers (the package's `silero_vad_16k.safetensors`
    /// holds other, older weights that its ONNX models do not use).
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        let bytes = std::fs::read(path)
            .map_err(|e| candle_core::Error::msg(format!("{}: {e}", path.display())))?;
        let model = OnnxModel::parse(&bytes)
            .map_err(|e| candle_core::Error::msg(format!("{}: {e}", path.display())))?;
        let get = |name: &str, shape: &[usize]| -> Result<Tensor> {
            let initializer = model
                .initializers
                .iter()
                .find(|i| i.name == name)
                .ok_or_else(|| {
                    candle_core::Error::msg(format!(
                        "{}: no tensor {name}; is this Silero VAD's 16 kHz ONNX model?",
                        path.display()
                    ))
                })?;
            let tensor = initializer
                .to_tensor(device)
                .map_err(|e| candle_core::Error::msg(format!("{}: {e}", path.display())))?
                .to_dtype(DType::F32)?;
            if tensor.dims() != shape {
                candle_core::bail!(
                    "{}: {name} has shape {:?}, not {shape:?}",
                    path.display(),
                    tensor.dims()
                );
            }
            Ok(tensor)
        };
        let conv = |i: usize, inputs: usize, outputs: usize, stride: usize| -> Result<Conv1d> {
            let config = Conv1dConfig {
                padding: 1,
                stride,
                ..Conv1dConfig::default()
            };
            let p = format!("model.encoder.{i}.reparam_conv");
            Ok(Conv1d::new(
                get(&format!("{p}.weight"), &[outputs, inputs, 3])?,
                Some(get(&format!("{p}.bias"), &[outputs])?),
                config,
            ))
        };
        let flat = |t: Tensor| -> Result<Vec<f32>> { t.flatten_all()?.to_vec1::<f32>() };
        let rnn = "model.decoder.rnn";
        let bias_ih = flat(get(&format!("{rnn}.bias_ih"), &[4 * HIDDEN])?)?;
        let bias_hh = flat(get(&format!("{rnn}.bias_hh"), &[4 * HIDDEN])?)?;
        Ok(Self {
            stft: get("model.stft.forward_basis_buffer", &[2 * STFT_BINS, 1, 256])?,
            convs: [
                conv(0, STFT_BINS, HIDDEN, 1)?,
                conv(1, HIDDEN, 64, 2)?,
                conv(2, 64, 64, 2)?,
                conv(3, 64, HIDDEN, 1)?,
            ],
            weight_ih: get(&format!("{rnn}.weight_ih"), &[4 * HIDDEN, HIDDEN])?,
            weight_hh: flat(get(&format!("{rnn}.weight_hh"), &[4 * HIDDEN, HIDDEN])?)?,
            bias: bias_ih.iter().zip(&bias_hh).map(|(a, b)| a + b).collect(),
            out_weight: flat(get("model.decoder.decoder.2.weight", &[1, HIDDEN, 1])?)?,
            out_bias: flat(get("model.decoder.decoder.2.bias", &[1])?)?[0],
            device: device.clone(),
        })
    }

    /// The speech probability of every 32 ms frame of `samples` (16 kHz mono); the
    /// last frame is completed with zeros.
    pub fn probabilities(&self, samples: &[f32]) -> Result<Vec<f32>> {
        let mut state = VadState::default();
        let mut probabilities = Vec::with_capacity(samples.len().div_ceil(FRAME_SAMPLES));
        let batch = FRAME_SAMPLES * FRAMES_PER_BATCH;
        for chunk in samples.chunks(batch) {
            let mut padded = chunk.to_vec();
            padded.resize(chunk.len().div_ceil(FRAME_SAMPLES) * FRAME_SAMPLES, 0.0);
            probabilities.extend(self.frames(&padded, &mut state)?);
        }
        Ok(probabilities)
    }

    /// The chunks of speech in `samples` a model with a `max_seconds` window decodes:
    /// speech segments ended by 160 ms of silence, at most `max_seconds` long, joined
    /// while they fit one window ([`VadOptions::for_chunks`], [`chunks`]). Silence
    /// outside them is left out; no speech gives no chunks.
    pub fn speech_chunks(&self, samples: &[f32], max_seconds: f64) -> Result<Vec<Range<usize>>> {
        let probabilities = self.probabilities(samples)?;
        let options = VadOptions::for_chunks(max_seconds);
        let segments = speech_segments(&probabilities, samples.len(), &options);
        Ok(chunks(&segments, (max_seconds * 16_000.0) as usize))
    }

    /// The probabilities of consecutive whole frames (`samples.len()` a multiple of
    /// [`FRAME_SAMPLES`]), continuing from `state` and leaving it after the last.
    pub fn frames(&self, samples: &[f32], state: &mut VadState) -> Result<Vec<f32>> {
        let count = samples.len() / FRAME_SAMPLES;
        if count == 0 {
            return Ok(Vec::new());
        }
        let width = CONTEXT_SAMPLES + FRAME_SAMPLES + RIGHT_PAD;
        let mut inputs = Vec::with_capacity(count * width);
        let mut context = state.context.clone();
        for frame in samples.chunks_exact(FRAME_SAMPLES) {
            let start = inputs.len();
            inputs.extend_from_slice(&context);
            inputs.extend_from_slice(frame);
            // Reflection without repeating the edge, as torch's "reflect" padding.
            let seen = CONTEXT_SAMPLES + FRAME_SAMPLES;
            for i in 0..RIGHT_PAD {
                inputs.push(inputs[start + seen - 2 - i]);
            }
            context.copy_from_slice(&frame[FRAME_SAMPLES - CONTEXT_SAMPLES..]);
        }
        state.context = context;
        let x = Tensor::from_vec(inputs, (count, 1, width), &self.device)?;
        let spectrum = x.conv1d(&self.stft, 0, 128, 1, 1)?;
        let real = spectrum.narrow(1, 0, STFT_BINS)?;
        let imaginary = spectrum.narrow(1, STFT_BINS, STFT_BINS)?;
        let mut x = (real.sqr()? + imaginary.sqr()?)?.sqrt()?;
        for conv in &self.convs {
            x = conv.forward(&x)?.relu()?;
        }
        // [count, HIDDEN, 1] → input gates of every frame, [count, 4·HIDDEN]
        let features = x.squeeze(D::Minus1)?;
        let input_gates = features
            .matmul(&self.weight_ih.t()?)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok(input_gates
            .chunks_exact(4 * HIDDEN)
            .map(|gates| self.step(gates, state))
            .collect())
    }

    /// One LSTM step from the frame's input gates; returns its speech probability.
    fn step(&self, input_gates: &[f32], state: &mut VadState) -> f32 {
        let mut gates = [0f32; 4 * HIDDEN];
        for (g, ((row, &x), &b)) in gates.iter_mut().zip(
            self.weight_hh
                .chunks_exact(HIDDEN)
                .zip(input_gates)
                .zip(&self.bias),
        ) {
            *g = x + b + row.iter().zip(&state.h).map(|(w, h)| w * h).sum::<f32>();
        }
        let mut logit = self.out_bias;
        for j in 0..HIDDEN {
            let input = sigmoid(gates[j]);
            let forget = sigmoid(gates[HIDDEN + j]);
            let cell = gates[2 * HIDDEN + j].tanh();
            let output = sigmoid(gates[3 * HIDDEN + j]);
            state.c[j] = forget * state.c[j] + input * cell;
            state.h[j] = output * state.c[j].tanh();
            logit += self.out_weight[j] * state.h[j].max(0.0);
        }
        sigmoid(logit)
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}
