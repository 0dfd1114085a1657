//! The baseline of `izwi bench whisper`: candle-transformers' own Whisper model, driven
//! the way candle's whisper example drives it, so the comparison is with what a Rust
//! user would pick. Greedy, no timestamps, no temperature fallback, one window after
//! another, each window decoded by re-running the decoder over all of its tokens every
//! step (the model caches only the cross-attention keys and values of the window's
//! audio features, flushed on the first step).

use std::ops::Range;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use candle_core::{Device, IndexOp, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self as m, audio, model::Whisper, Config};
use izwi_core::models::whisper::mel::mel_filters;
use izwi_core::models::whisper::WhisperTokenizer;

/// Output tokens per window: half the decoder's context, as the example's `sample_len`.
const MAX_NEW_TOKENS: usize = 224;

pub struct CandleWhisper {
    model: Whisper,
    /// Mel filterbank, row-major `[n_mels, 201]`: the values Whisper ships, computed by
    /// our own code so both sides start from the same features' definition.
    filters: Vec<f32>,
    /// 0 or -inf per vocabulary entry, added to the logits: config.json's
    /// `suppress_tokens` (the example also suppresses `<|notimestamps|>` when timestamps
    /// are on; here they are off).
    suppress: Tensor,
    device: Device,
    sot: u32,
    transcribe: u32,
    no_timestamps: u32,
    eot: u32,
    no_speech: u32,
    /// Language tokens, empty for English-only models.
    languages: Vec<u32>,
}

impl CandleWhisper {
    /// Loads `config.json` and `model.safetensors` of a Hugging Face Whisper folder.
    /// Special token ids come from `tokenizer`, read from the same folder's tokenizer.json
    /// the example reads them from.
    pub fn load(dir: &Path, tokenizer: &WhisperTokenizer, device: &Device) -> Result<Self> {
        let config_path = dir.join("config.json");
        let config: Config = serde_json::from_str(
            &std::fs::read_to_string(&config_path)
                .with_context(|| format!("reading {}", config_path.display()))?,
        )
        .with_context(|| format!("parsing {}", config_path.display()))?;
        let weights_path = dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path)
            .with_context(|| format!("reading {}", weights_path.display()))?;
        // Buffered rather than memory-mapped (the example's choice) only to avoid
        // `unsafe`: on the CPU both copy the weights into f32 tensors at load.
        let vb = VarBuilder::from_buffered_safetensors(weights, m::DTYPE, device)?;
        let suppress: Vec<f32> = (0..config.vocab_size as u32)
            .map(|t| {
                if config.suppress_tokens.contains(&t) {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let suppress = Tensor::new(suppress.as_slice(), device)?;
        let s = &tokenizer.special;
        let model = Whisper::load(&vb, config).with_context(|| {
            format!(
                "loading candle-transformers' Whisper from {}",
                dir.display()
            )
        })?;
        Ok(Self {
            filters: mel_filters(model.config.num_mel_bins),
            model,
            suppress,
            device: device.clone(),
            sot: s.sot,
            transcribe: s.transcribe,
            no_timestamps: s.no_timestamps,
            eot: s.eot,
            no_speech: s.no_speech,
            languages: s.languages.iter().map(|&(_, t)| t).collect(),
        })
    }

    /// Transcribes `samples` (16 kHz mono) window by window; returns the text tokens of
    /// every window in order.
    pub fn transcribe(&mut self, samples: &[f32], windows: &[Range<usize>]) -> Result<Vec<u32>> {
        let Some(first) = windows.first() else {
            return Ok(Vec::new());
        };
        ensure!(
            windows.iter().all(|w| w.len() <= m::N_SAMPLES),
            "a window is longer than Whisper's 30 s"
        );
        // The example detects the language once, from the first 30 s, for multilingual
        // models only.
        let language = if self.languages.is_empty() {
            None
        } else {
            let mel = self.mel(&samples[first.clone()])?;
            Some(self.detect_language(&mel)?)
        };
        let mut text = Vec::new();
        for window in windows {
            let mel = self.mel(&samples[window.clone()])?;
            text.extend(self.decode(&mel, language)?);
        }
        Ok(text)
    }

    /// `[1, n_mels, ≤3000]` log-mel features of at most 30 s of audio, by candle's
    /// `pcm_to_mel` (which pads the audio with at least 15 s of zeros).
    fn mel(&self, samples: &[f32]) -> Result<Tensor> {
        let n_mels = self.model.config.num_mel_bins;
        let mel = audio::pcm_to_mel(&self.model.config, samples, &self.filters);
        let frames = mel.len() / n_mels;
        let mel = Tensor::from_vec(mel, (1, n_mels, frames), &self.device)?;
        Ok(mel.narrow(2, 0, frames.min(m::N_FRAMES))?)
    }

    /// The likeliest language token after `<|startoftranscript|>`.
    fn detect_language(&mut self, mel: &Tensor) -> Result<u32> {
        let features = self.model.encoder.forward(mel, true)?;
        let sot = Tensor::new(&[[self.sot]], &self.device)?;
        let hidden = self.model.decoder.forward(&sot, &features, true)?;
        let logits: Vec<f32> = self
            .model
            .decoder
            .final_linear(&hidden)?
            .i((0, 0))?
            .to_vec1()?;
        self.languages
            .iter()
            .copied()
            .max_by(|&a, &b| logits[a as usize].total_cmp(&logits[b as usize]))
            .context("the model has no language tokens")
    }

    /// Greedy decoding of one window; its text tokens, or none when the window is
    /// judged silent (the example's no-speech rule).
    fn decode(&mut self, mel: &Tensor, language: Option<u32>) -> Result<Vec<u32>> {
        let features = self.model.encoder.forward(mel, true)?;
        // The example's prompt: it adds the task token for English-only models too.
        let mut tokens = vec![self.sot];
        tokens.extend(language);
        tokens.extend([self.transcribe, self.no_timestamps]);
        let prompt_len = tokens.len();
        let mut sum_logprob = 0f64;
        let mut no_speech_prob = f64::NAN;
        for step in 0..MAX_NEW_TOKENS {
            let input = Tensor::new(tokens.as_slice(), &self.device)?.unsqueeze(0)?;
            // The whole sequence every step: the model has no self-attention cache.
            let hidden = self.model.decoder.forward(&input, &features, step == 0)?;
            if step == 0 {
                // The first position's prediction rates `<|nospeech|>`.
                let first: Vec<f32> = self
                    .model
                    .decoder
                    .final_linear(&hidden.i((..1, ..1))?)?
                    .i((0, 0))?
                    .to_vec1()?;
                no_speech_prob = softmax_at(&first, self.no_speech as usize);
            }
            let last = hidden.i((..1, tokens.len() - 1..))?;
            let logits = self.model.decoder.final_linear(&last)?.i((0, 0))?;
            let logits: Vec<f32> = logits.broadcast_add(&self.suppress)?.to_vec1()?;
            let next = argmax(&logits);
            tokens.push(next);
            if next == self.eot || tokens.len() > self.model.config.max_target_positions {
                break;
            }
            sum_logprob += softmax_at(&logits, next as usize).ln();
        }
        // As the example: the mean runs over all tokens, prompt included.
        let avg_logprob = sum_logprob / tokens.len() as f64;
        if no_speech_prob > m::NO_SPEECH_THRESHOLD && avg_logprob < m::LOGPROB_THRESHOLD {
            return Ok(Vec::new());
        }
        Ok(tokens
            .into_iter()
            .skip(prompt_len)
            .filter(|&t| t != self.eot)
            .collect())
    }
}

fn argmax(values: &[f32]) -> u32 {
    values
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i as u32)
}

fn softmax_at(logits: &[f32], index: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    logits
        .get(index)
        .map_or(0.0, |&l| f64::from(l - max).exp() / sum)
}
