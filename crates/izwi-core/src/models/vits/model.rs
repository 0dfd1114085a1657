//! The whole VITS synthesizer as piper runs it (`SynthesizerTrn.infer`): phoneme ids →
//! text encoder → durations → the prior expanded to frames → flow (reverse) → vocoder.

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::config::{Scales, VoiceConfig};
use super::decoder::Decoder;
use super::duration::DurationPredictor;
use super::flow::Flow;
use super::text_encoder::TextEncoder;
use super::weights::{Weights, WeightsError};
use crate::models::shared::onnx::{OnnxError, OnnxModel};

#[derive(Debug, thiserror::Error)]
pub enum VitsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Onnx {
        path: PathBuf,
        #[source]
        source: OnnxError,
    },
    #[error("a weight of the voice cannot be read: {0}")]
    Tensor(#[source] OnnxError),
    #[error("{path}: not a Piper voice config: {source}")]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Weights(#[from] WeightsError),
    #[error("the voice config and the network disagree: {0}")]
    Mismatch(String),
    #[error("nothing to say: no phoneme ids")]
    NoPhonemes,
    #[error("phoneme id {id} is outside the voice's {symbols} symbols")]
    PhonemeId { id: i64, symbols: usize },
    #[error("speaker {id} is outside the voice's {speakers} speakers")]
    Speaker { id: i64, speakers: usize },
    #[error(
        "the durations add up to {seconds:.0} s of audio for {ids} phoneme ids, more than \
         {limit:.0} s; the model is not reading this input as speech"
    )]
    TooLong {
        seconds: f64,
        ids: usize,
        limit: f64,
    },
    #[error("invalid scales {0:?}: they must be finite, and the length scale above 0")]
    Scales(Scales),
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// Longest audio one sentence may produce, relative to its input: a phoneme id (half
/// of them padding) takes about 40 ms in normal speech, so 0.25 s per id at the
/// length scale asked for is a bound no real sentence reaches, and a runaway
/// duration predictor or length scale fails before the vocoder allocates gigabytes.
const MAX_SECONDS_PER_ID: f64 = 0.25;
/// ... and at least this much, for sentences of a word or two, and at most this much
/// whatever the length scale.
const MIN_LIMIT_SECONDS: f64 = 5.0;
const MAX_LIMIT_SECONDS: f64 = 600.0;

/// One synthesized sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesis {
    /// PCM at the voice's sample rate, in [-1, 1], as the network outputs it (piper's
    /// peak normalization and volume are left to the caller).
    pub audio: Vec<f32>,
    /// Frames each phoneme id lasts; its audio is `frames × hop_length` samples.
    pub durations: Vec<u32>,
    /// Where the time of the pass that made it went (shared by a batch's sentences).
    pub timings: ModuleTimings,
}

/// Seconds spent in each part of the network during one synthesis pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModuleTimings {
    pub text_encoder: f64,
    /// The duration predictor, and expanding each phoneme's prior over its frames.
    pub durations: f64,
    pub flow: f64,
    pub vocoder: f64,
}

/// A loaded Piper voice, ready to speak phoneme ids.
pub struct Vits {
    config: VoiceConfig,
    text_encoder: TextEncoder,
    durations: DurationPredictor,
    flow: Flow,
    decoder: Decoder,
    /// `[speakers, gin_channels]`, multi-speaker voices only.
    speaker_embedding: Option<Tensor>,
    device: Device,
}

impl Vits {
    /// Loads a Piper voice: its `.onnx` (weights and layer hyperparameters are read
    /// out of the graph; nothing of ONNX runs) and its `.onnx.json`.
    pub fn from_onnx(
        onnx_path: &Path,
        json_path: &Path,
        device: &Device,
    ) -> Result<Self, VitsError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| VitsError::Io { path, source }
        };
        let text = std::fs::read_to_string(json_path).map_err(io(json_path))?;
        let config = VoiceConfig::from_json(&text).map_err(|source| VitsError::Config {
            path: json_path.to_path_buf(),
            source,
        })?;
        // The file and its graph are let go before the modules are built: the packed
        // convolutions copy their weights, and all three at once raised peak memory.
        let w = {
            let file = std::fs::File::open(onnx_path).map_err(io(onnx_path))?;
            // Mapped, not read: a read copies the whole file into fresh memory before
            // the weights are copied out of it (a third of loading a medium voice).
            // SAFETY: the map lives only while the weights are copied out, here; a
            // program truncating the voice file in that moment could end this one
            // (SIGBUS), as it could candle's mapped safetensors.
            let bytes = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
                .map_err(io(onnx_path))?;
            let graph = OnnxModel::parse(&bytes).map_err(|source| VitsError::Onnx {
                path: onnx_path.to_path_buf(),
                source,
            })?;
            Weights::from_onnx(&graph, device).map_err(VitsError::Tensor)?
        };
        Self::from_weights(w, config, device)
    }

    /// Builds the network from an already parsed voice graph and its config.
    pub fn from_graph(
        graph: &OnnxModel,
        config: VoiceConfig,
        device: &Device,
    ) -> Result<Self, VitsError> {
        let w = Weights::from_onnx(graph, device).map_err(VitsError::Tensor)?;
        Self::from_weights(w, config, device)
    }

    fn from_weights(w: Weights, config: VoiceConfig, device: &Device) -> Result<Self, VitsError> {
        let built = (|| {
            Ok((
                TextEncoder::load(&w)?,
                DurationPredictor::load(&w)?,
                Flow::load(&w)?,
                Decoder::load(&w)?,
            ))
        })();
        let (text_encoder, durations, flow, decoder) = w.finish(built)?;
        let speaker_embedding = w.get_optional("emb_g.weight");
        match &speaker_embedding {
            None if config.num_speakers > 1 => {
                return Err(VitsError::Mismatch(format!(
                    "{} speakers, but no speaker embedding (emb_g)",
                    config.num_speakers
                )))
            }
            Some(emb) if emb.dim(0)? < config.num_speakers => {
                return Err(VitsError::Mismatch(format!(
                    "{} speakers, but embeddings for {}",
                    config.num_speakers,
                    emb.dim(0)?
                )))
            }
            _ => {}
        }
        Ok(Self {
            config,
            text_encoder,
            durations,
            flow,
            decoder,
            speaker_embedding,
            device: device.clone(),
        })
    }

    /// The same voice with its vocoder's convolutions in bf16 where the CPU multiplies
    /// bf16 natively (AVX512-BF16): about two thirds of synthesis is the vocoder, and
    /// these run at twice the arithmetic per cycle. Activations entering each
    /// convolution are rounded to bf16; sums and the residual path stay f32. The text
    /// encoder, durations and flow are unchanged. Elsewhere nothing changes.
    pub fn with_bf16_vocoder(self) -> Result<Self, VitsError> {
        Ok(Self {
            decoder: self.decoder.with_bf16()?,
            ..self
        })
    }

    pub fn config(&self) -> &VoiceConfig {
        &self.config
    }

    pub fn sample_rate(&self) -> u32 {
        self.config.audio.sample_rate
    }

    /// Audio samples per spectrogram frame.
    pub fn hop_length(&self) -> usize {
        self.decoder.hop_length()
    }

    /// Speaks one sentence of phoneme ids (as piper makes them: `^`, each phoneme's ids
    /// followed by `_`, then `$`). `speaker` picks the voice of a multi-speaker model
    /// (default: the config's default speaker) and is ignored otherwise; `seed` fixes
    /// the noise when the scales ask for any.
    pub fn synthesize(
        &self,
        phoneme_ids: &[i64],
        speaker: Option<i64>,
        scales: Scales,
        seed: u64,
    ) -> Result<Vec<f32>, VitsError> {
        let mut out = self.synthesize_batch(&[phoneme_ids], speaker, scales, seed)?;
        Ok(out.pop().map(|s| s.audio).unwrap_or_default())
    }

    /// Speaks several sentences in one pass, padded to the longest. The vocoder sees
    /// the padding after a shorter sentence, so its last few milliseconds can differ
    /// slightly from synthesizing it alone (as in piper with a batch).
    ///
    /// On the CPU the synthesis runs on a worker of rayon's pool, as an engine step
    /// does (docs/engine.md): its many small parallel operations then share the work
    /// with the other workers instead of handing it over from outside and sleeping
    /// until it is done.
    pub fn synthesize_batch(
        &self,
        sentences: &[&[i64]],
        speaker: Option<i64>,
        scales: Scales,
        seed: u64,
    ) -> Result<Vec<Synthesis>, VitsError> {
        if self.device.is_cpu() {
            rayon::scope(|_| self.synthesize_here(sentences, speaker, scales, seed))
        } else {
            self.synthesize_here(sentences, speaker, scales, seed)
        }
    }

    fn synthesize_here(
        &self,
        sentences: &[&[i64]],
        speaker: Option<i64>,
        scales: Scales,
        seed: u64,
    ) -> Result<Vec<Synthesis>, VitsError> {
        let valid = [scales.noise_scale, scales.length_scale, scales.noise_w]
            .iter()
            .all(|s| s.is_finite());
        if !valid || scales.length_scale <= 0.0 {
            return Err(VitsError::Scales(scales));
        }
        let symbols = self.text_encoder.num_symbols()?;
        let len = sentences.iter().map(|s| s.len()).max().unwrap_or(0);
        if sentences.iter().any(|s| s.is_empty()) || len == 0 {
            return Err(VitsError::NoPhonemes);
        }
        let batch = sentences.len();
        let mut ids = vec![0u32; batch * len];
        let mut mask = vec![0f32; batch * len];
        for (b, sentence) in sentences.iter().enumerate() {
            for (t, &id) in sentence.iter().enumerate() {
                ids[b * len + t] = u32::try_from(id)
                    .ok()
                    .filter(|&i| (i as usize) < symbols)
                    .ok_or(VitsError::PhonemeId { id, symbols })?;
                mask[b * len + t] = 1.0;
            }
        }
        let g = self.speaker_conditioning(speaker, batch)?;
        let dev = &self.device;
        let ids = Tensor::from_vec(ids, (batch, len), dev)?;
        let x_mask = Tensor::from_vec(mask, (batch, 1, len), dev)?;
        let mut rng = StdRng::seed_from_u64(seed);

        let clock = std::time::Instant::now();
        let text = self.text_encoder.forward(&ids, &x_mask)?;
        let text_seconds = clock.elapsed().as_secs_f64();
        let noise = if self.durations.is_stochastic() && scales.noise_w != 0.0 {
            Some((normal(&mut rng, (batch, 2, len), dev)? * f64::from(scales.noise_w))?)
        } else {
            None
        };
        let logw = self
            .durations
            .log_durations(&text.x, &x_mask, g.as_ref(), noise.as_ref())?;
        let durations = frame_counts(&logw, sentences, scales.length_scale)?;

        let frames: Vec<u64> = durations
            .iter()
            .map(|d| d.iter().map(|&n| u64::from(n)).sum::<u64>().max(1))
            .collect();
        let max_frames = frames.iter().copied().max().unwrap_or(1);
        let seconds_per_frame = self.hop_length() as f64 / f64::from(self.sample_rate());
        for (sentence, &n) in sentences.iter().zip(&frames) {
            let seconds = n as f64 * seconds_per_frame;
            let limit =
                (MAX_SECONDS_PER_ID * sentence.len() as f64 * f64::from(scales.length_scale))
                    .clamp(MIN_LIMIT_SECONDS, MAX_LIMIT_SECONDS);
            if seconds > limit {
                return Err(VitsError::TooLong {
                    seconds,
                    ids: sentence.len(),
                    limit,
                });
            }
        }
        let frames: Vec<usize> = frames.into_iter().map(|f| f as usize).collect();
        let max_frames = max_frames as usize;

        // Each frame copies the prior of the phoneme it belongs to. Frames no phoneme
        // covers (padding, or a sentence whose durations all rounded to 0) get 0.
        let mut phoneme_of = vec![0u32; batch * max_frames];
        let mut covered = vec![0f32; batch * max_frames];
        let mut y_mask = vec![0f32; batch * max_frames];
        for (b, d) in durations.iter().enumerate() {
            let row = b * max_frames;
            let mut frame = row;
            for (t, &n) in d.iter().enumerate() {
                phoneme_of[frame..frame + n as usize].fill(t as u32);
                covered[frame..frame + n as usize].fill(1.0);
                frame += n as usize;
            }
            y_mask[row..row + frames[b]].fill(1.0);
        }
        let covered = Tensor::from_vec(covered, (batch, 1, max_frames), dev)?;
        let y_mask = Tensor::from_vec(y_mask, (batch, 1, max_frames), dev)?;
        let expand = |stats: &Tensor| -> candle_core::Result<Tensor> {
            let items = (0..batch)
                .map(|b| {
                    let row = &phoneme_of[b * max_frames..(b + 1) * max_frames];
                    stats.get(b)?.index_select(&Tensor::new(row, dev)?, 1)
                })
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::stack(&items, 0)?.broadcast_mul(&covered)
        };
        let m = expand(&text.m)?;
        let z_p = if scales.noise_scale != 0.0 {
            let logs = expand(&text.logs)?;
            let noise = normal(&mut rng, m.shape().dims(), dev)?;
            (m + ((noise * logs.exp()?)? * f64::from(scales.noise_scale))?)?
        } else {
            m
        };
        let flow_started = clock.elapsed().as_secs_f64();
        let z = self.flow.reverse(&z_p, &y_mask, g.as_ref())?;
        let decoder_started = clock.elapsed().as_secs_f64();
        let audio = self
            .decoder
            .forward(&z.broadcast_mul(&y_mask)?, g.as_ref())?;
        let timings = ModuleTimings {
            text_encoder: text_seconds,
            durations: flow_started - text_seconds,
            flow: decoder_started - flow_started,
            vocoder: clock.elapsed().as_secs_f64() - decoder_started,
        };

        let hop = self.hop_length();
        durations
            .into_iter()
            .enumerate()
            .map(|(b, durations)| {
                let samples = audio.get(b)?.narrow(0, 0, frames[b] * hop)?;
                Ok(Synthesis {
                    audio: samples.to_vec1::<f32>()?,
                    durations,
                    timings,
                })
            })
            .collect()
    }

    /// The speaker embedding `[batch, gin, 1]` of a multi-speaker voice.
    fn speaker_conditioning(
        &self,
        speaker: Option<i64>,
        batch: usize,
    ) -> Result<Option<Tensor>, VitsError> {
        let Some(emb) = &self.speaker_embedding else {
            return Ok(None);
        };
        let id = speaker.unwrap_or(self.config.default_speaker_id);
        let speakers = emb.dim(0)?;
        let index = u32::try_from(id)
            .ok()
            .filter(|&i| (i as usize) < speakers)
            .ok_or(VitsError::Speaker { id, speakers })?;
        let index = Tensor::new(&[index], &self.device)?;
        let g = emb.index_select(&index, 0)?.unsqueeze(2)?;
        Ok(Some(g.repeat((batch, 1, 1))?))
    }
}

/// Frames per phoneme: `ceil(exp(logw) · length_scale)`, in f32 in the order piper's
/// graph computes it, so the rounding up lands where piper's does.
fn frame_counts(
    logw: &Tensor,
    sentences: &[&[i64]],
    length_scale: f32,
) -> candle_core::Result<Vec<Vec<u32>>> {
    let logw = logw.squeeze(1)?.to_vec2::<f32>()?;
    Ok(logw
        .iter()
        .zip(sentences)
        .map(|(row, sentence)| {
            row[..sentence.len()]
                .iter()
                .map(|&l| (l.exp() * length_scale).ceil().max(0.0) as u32)
                .collect()
        })
        .collect())
}

/// Standard normal noise (Box–Muller) from `rng`.
fn normal(
    rng: &mut StdRng,
    shape: impl Into<candle_core::Shape>,
    dev: &Device,
) -> candle_core::Result<Tensor> {
    let shape = shape.into();
    let values: Vec<f32> = (0..shape.elem_count())
        .map(|_| {
            let u1 = rng.random::<f32>().max(f32::MIN_POSITIVE);
            let u2 = rng.random::<f32>();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
        })
        .collect();
    Tensor::from_vec(values, shape, dev)
}
