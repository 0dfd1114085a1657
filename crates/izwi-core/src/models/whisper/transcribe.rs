//! Transcription with Whisper on the engine: each window of audio (at most 30 s) is a
//! request; the windows of a file, and the files of a batch, run concurrently so the
//! engine batches them. Per window, as OpenAI's `transcribe()` does: a no-speech check,
//! greedy decoding with temperature fallback when the output looks wrong (too
//! repetitive or too unlikely), and segments from timestamp tokens.

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use futures::{StreamExt, TryStreamExt};

use super::mel::{N_SAMPLES, SAMPLE_RATE};
use super::tokens::WhisperTokenizer;
use super::word_timestamps;
use crate::engine::{AudioAlignment, Engine, EngineCoreRequest, EngineError, GenerationParams};
use crate::transcript::{Segment, Transcript};

/// Seconds per timestamp token.
const TIME_PRECISION: f64 = 0.02;
/// Output tokens per window, as OpenAI: half the decoder's context.
const MAX_NEW_TOKENS: usize = 224;
/// Windows of one file decoded at once: enough to fill the engine's batch with their
/// beams, few enough that each window's encoding stays cached from its probe to its
/// last beam step.
const WINDOWS_IN_FLIGHT: usize = 6;
/// How often a window's untranscribed rest is tried again.
const MAX_RETRIES_OF_THE_REST: usize = 2;
/// The longest initial prompt kept (the rest of the context is the window's output).
const MAX_PROMPT_TOKENS: usize = 223;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Task {
    #[default]
    Transcribe,
    /// Into English.
    Translate,
}

#[derive(Debug, Clone)]
pub struct TranscribeOptions {
    /// ISO code; None detects it from the first window.
    pub language: Option<String>,
    pub task: Task,
    /// Segment timestamps from the model's timestamp tokens; without them a window is
    /// one segment.
    pub timestamps: bool,
    /// Each word's time too, from the alignment heads' cross-attention (one more
    /// decoder pass per window).
    pub word_timestamps: bool,
    /// Text that primes the vocabulary and style (names, spelling).
    pub initial_prompt: Option<String>,
    /// Beams searched at temperature 0; 1 decodes greedily.
    pub beam_size: usize,
    /// Tried in order until the output passes the checks below.
    pub temperatures: Vec<f32>,
    /// Above this gzip compression ratio the output is deemed repetitive.
    pub compression_ratio_threshold: f64,
    /// Below this mean log-probability the output is deemed wrong.
    pub logprob_threshold: f64,
    /// Above this probability of `<|nospeech|>` (and with a low log-probability) the
    /// window is deemed silent.
    pub no_speech_threshold: f64,
    /// Seed of sampling at non-zero temperature.
    pub seed: u64,
    /// Audio whose RMS level is below this (linear, full scale 1.0) is silence and
    /// is not decoded: Whisper hallucinates words ("you") on near-silence.
    pub silence_rms: f32,
}

impl Default for TranscribeOptions {
    fn default() -> Self {
        Self {
            language: None,
            task: Task::Transcribe,
            timestamps: true,
            word_timestamps: false,
            initial_prompt: None,
            beam_size: 1,
            temperatures: vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            compression_ratio_threshold: 2.4,
            logprob_threshold: -1.0,
            no_speech_threshold: 0.6,
            seed: 0,
            // -60 dBFS: far below speech, above dither and hiss.
            silence_rms: 1e-3,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TranscribeError {
    #[error("unknown language {0:?}; this model knows: {1}")]
    UnknownLanguage(String, String),
    #[error("this model is English-only: it cannot {0}")]
    EnglishOnly(&'static str),
    #[error("a window of {0:.1} s is longer than Whisper's 30 s")]
    WindowTooLong(f64),
    #[error("the engine gave a window's decode without its first logits")]
    NoFirstLogits,
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Tokenizer(#[from] super::tokens::TokenizerError),
}

/// Transcribes with a Whisper engine and its tokenizer.
#[derive(Clone)]
pub struct Transcriber {
    engine: Arc<Engine>,
    tokenizer: Arc<WhisperTokenizer>,
}

/// A window transcribed, as `Transcriber::transcribe` reports it.
#[derive(Debug, Clone)]
pub struct WindowDone {
    /// This window's place among the windows (0-based): they finish out of order.
    pub index: usize,
    /// Windows done so far, this one included.
    pub done: usize,
    pub total: usize,
    /// This window's segments, in absolute time.
    pub segments: Vec<Segment>,
}

struct WindowResult {
    segments: Vec<Segment>,
}

/// One decoding of a window: its tokens, each token's log-probability and their mean.
#[derive(Default)]
struct Decoded {
    tokens: Vec<u32>,
    logprobs: Vec<f32>,
    avg_logprob: f64,
    /// What the prompt predicted, when asked for.
    first_logits: Option<Vec<f32>>,
}

impl Transcriber {
    pub fn new(engine: Arc<Engine>, tokenizer: Arc<WhisperTokenizer>) -> Self {
        Self { engine, tokenizer }
    }

    /// Transcribes `samples` (16 kHz mono) cut into `windows` (sample ranges, each at
    /// most 30 s, in order). `on_window` is told each time a window is done, with its
    /// segments: windows finish out of order, several at a time.
    pub async fn transcribe(
        &self,
        samples: &[f32],
        windows: &[Range<usize>],
        options: &TranscribeOptions,
        on_window: impl Fn(WindowDone) + Send + Sync,
    ) -> Result<Transcript, TranscribeError> {
        let started = Instant::now();
        let duration = samples.len() as f64 / SAMPLE_RATE as f64;
        if let Some(w) = windows.iter().find(|w| w.len() > N_SAMPLES) {
            return Err(TranscribeError::WindowTooLong(
                w.len() as f64 / SAMPLE_RATE as f64,
            ));
        }
        let audio: Vec<Arc<[f32]>> = windows
            .iter()
            .map(|w| Arc::from(&samples[w.clone()]))
            .collect();
        let language = self.language(audio.first(), options).await?;
        let prompt = self.prompt(language.as_deref(), options)?;
        let done = std::sync::atomic::AtomicUsize::new(0);
        // The futures are built before streaming them: a closure inside the stream
        // would make this future's Send-ness unprovable to rustc (higher-ranked lifetimes).
        let tasks: Vec<_> = audio
            .iter()
            .zip(windows)
            .enumerate()
            .map(|(index, (audio, window))| {
                let (prompt, done, on_window) = (&prompt, &done, &on_window);
                async move {
                    let offset = window.start as f64 / SAMPLE_RATE as f64;
                    let result = self.window(audio.clone(), offset, prompt, options).await;
                    if let Ok(window) = &result {
                        on_window(WindowDone {
                            index,
                            done: done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                            total: windows.len(),
                            segments: window.segments.clone(),
                        });
                    }
                    result
                }
            })
            .collect();
        let windows_done = futures::stream::iter(tasks).buffered(WINDOWS_IN_FLIGHT);
        let results: Vec<WindowResult> = windows_done.try_collect().await?;
        Ok(Transcript {
            language,
            duration,
            segments: results.into_iter().flat_map(|r| r.segments).collect(),
            rtf: if duration > 0.0 {
                started.elapsed().as_secs_f64() / duration
            } else {
                0.0
            },
        })
    }

    /// The language to use: the one asked for (checked), English for English-only
    /// models, else the most likely language of the first window.
    async fn language(
        &self,
        first: Option<&Arc<[f32]>>,
        options: &TranscribeOptions,
    ) -> Result<Option<String>, TranscribeError> {
        let tokenizer = &self.tokenizer;
        if !tokenizer.is_multilingual() {
            if options.task == Task::Translate {
                return Err(TranscribeError::EnglishOnly("translate"));
            }
            if options.language.as_deref().is_some_and(|l| l != "en") {
                return Err(TranscribeError::EnglishOnly("transcribe other languages"));
            }
            return Ok(Some("en".into()));
        }
        if let Some(code) = &options.language {
            return match tokenizer.language_token(code) {
                Some(_) => Ok(Some(code.clone())),
                None => Err(TranscribeError::UnknownLanguage(
                    code.clone(),
                    tokenizer
                        .special
                        .languages
                        .iter()
                        .map(|(c, _)| c.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                )),
            };
        }
        let Some(audio) = first else {
            return Ok(None);
        };
        let logits = self.probe(audio.clone()).await?;
        let best = tokenizer
            .special
            .languages
            .iter()
            .max_by(|a, b| logits[a.1 as usize].total_cmp(&logits[b.1 as usize]))
            .map(|(code, _)| code.clone());
        Ok(best)
    }

    /// The logits of the token after `<|startoftranscript|>`: they rank the languages
    /// and give the probability of `<|nospeech|>`.
    async fn probe(&self, audio: Arc<[f32]>) -> Result<Vec<f32>, TranscribeError> {
        let request = EngineCoreRequest::new(vec![self.tokenizer.special.sot])
            .with_audio(audio)
            .with_params(GenerationParams {
                max_tokens: 1,
                ignore_eos: true,
                return_logits: true,
                ..GenerationParams::default()
            });
        let output = self.engine.generate(request).await?;
        Ok(output.logits.into_iter().next().unwrap_or_default())
    }

    /// `[<|startofprev|> prompt...] <|startoftranscript|> [<|lang|> <|task|>] [<|notimestamps|>]`
    fn prompt(
        &self,
        language: Option<&str>,
        options: &TranscribeOptions,
    ) -> Result<Vec<u32>, TranscribeError> {
        let s = &self.tokenizer.special;
        let mut prompt = Vec::new();
        if let Some(text) = options
            .initial_prompt
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            let tokens = self.tokenizer.encode(&format!(" {}", text.trim()))?;
            prompt.push(s.sot_prev);
            prompt.extend_from_slice(&tokens[tokens.len().saturating_sub(MAX_PROMPT_TOKENS)..]);
        }
        prompt.push(s.sot);
        if self.tokenizer.is_multilingual() {
            if let Some(token) = language.and_then(|l| self.tokenizer.language_token(l)) {
                prompt.push(token);
            }
            prompt.push(match options.task {
                Task::Transcribe => s.transcribe,
                Task::Translate => s.translate,
            });
        }
        if !options.timestamps {
            prompt.push(s.no_timestamps);
        }
        Ok(prompt)
    }

    /// Transcribes one window. Whisper sometimes ends a window early, leaving its last
    /// words out; OpenAI's sequential loop recovers by starting the next window where
    /// the text stopped. Windows here run concurrently, so a window whose text stops
    /// over a second before its audio does, with speech left, transcribes that rest
    /// itself (a few times at most).
    async fn window(
        &self,
        audio: Arc<[f32]>,
        offset: f64,
        prompt: &[u32],
        options: &TranscribeOptions,
    ) -> Result<WindowResult, TranscribeError> {
        let mut result = self
            .decode_window(audio.clone(), offset, prompt, options)
            .await?;
        let timestamps = !prompt.ends_with(&[self.tokenizer.special.no_timestamps]);
        for _ in 0..MAX_RETRIES_OF_THE_REST {
            let Some(end) = result.segments.last().map(|s| s.end - offset) else {
                break;
            };
            let done = ((end.max(0.0) * SAMPLE_RATE as f64) as usize).min(audio.len());
            let rest = &audio[done..];
            if !timestamps || rest.len() < SAMPLE_RATE || is_silent(rest, options) {
                break;
            }
            let rest_offset = offset + done as f64 / SAMPLE_RATE as f64;
            let more = self
                .decode_window(Arc::from(rest), rest_offset, prompt, options)
                .await?;
            if more.segments.is_empty() {
                break;
            }
            result.segments.extend(more.segments);
        }
        Ok(result)
    }

    async fn decode_window(
        &self,
        audio: Arc<[f32]>,
        offset: f64,
        prompt: &[u32],
        options: &TranscribeOptions,
    ) -> Result<WindowResult, TranscribeError> {
        if is_silent(&audio, options) {
            return Ok(WindowResult {
                segments: Vec::new(),
            });
        }
        let window_seconds = audio.len() as f64 / SAMPLE_RATE as f64;
        let no_speech = self.tokenizer.special.no_speech as usize;
        // The no-speech probability is what the prompt predicts after
        // `<|startoftranscript|>`. When the prompt ends there (English-only models with
        // timestamps, the default) the first sampled decode gives it; otherwise (a
        // language and task after it, no timestamps, beam search) a probe of its own.
        let beams_first = options.temperatures.first() == Some(&0.0) && options.beam_size > 1;
        let in_decode = prompt.last() == Some(&self.tokenizer.special.sot) && !beams_first;
        let mut no_speech_prob = if in_decode {
            None
        } else {
            Some(softmax_at(&self.probe(audio.clone()).await?, no_speech))
        };
        let mut best: Option<Decoded> = None;
        for (attempt, &temperature) in options.temperatures.iter().enumerate() {
            let decoded = if temperature == 0.0 && options.beam_size > 1 {
                self.beam_search(audio.clone(), prompt, options.beam_size)
                    .await?
            } else {
                let seed = options.seed.wrapping_add(attempt as u64);
                let first_logits = no_speech_prob.is_none();
                self.sample(audio.clone(), prompt, temperature, seed, first_logits)
                    .await?
            };
            let no_speech_prob = match no_speech_prob {
                Some(p) => p,
                None => {
                    let logits = decoded
                        .first_logits
                        .as_deref()
                        .ok_or(TranscribeError::NoFirstLogits)?;
                    *no_speech_prob.insert(softmax_at(logits, no_speech))
                }
            };
            let avg_logprob = decoded.avg_logprob;
            let text = self.tokenizer.decode(&decoded.tokens)?;
            let too_repetitive = compression_ratio(&text) > options.compression_ratio_threshold;
            let too_unlikely = avg_logprob < options.logprob_threshold;
            let silent = no_speech_prob > options.no_speech_threshold && too_unlikely;
            if silent {
                return Ok(WindowResult {
                    segments: Vec::new(),
                });
            }
            let better = best.as_ref().is_none_or(|b| avg_logprob > b.avg_logprob);
            let passed = !too_repetitive && !too_unlikely;
            if better || passed {
                best = Some(decoded);
            }
            if passed {
                break;
            }
            tracing::debug!(
                offset,
                temperature,
                avg_logprob,
                too_repetitive,
                "falling back to a higher temperature"
            );
        }
        let Some(decoded) = best else {
            return Ok(WindowResult {
                segments: Vec::new(),
            });
        };
        let (mut segments, texts) = self.segments(
            &decoded.tokens,
            offset,
            window_seconds,
            !prompt.ends_with(&[self.tokenizer.special.no_timestamps]),
        )?;
        if options.word_timestamps && !segments.is_empty() {
            self.add_words(&audio, prompt, &decoded, &mut segments, &texts, offset)
                .await?;
        }
        Ok(WindowResult { segments })
    }

    /// Word times for a window's segments (`texts`: each segment's text tokens), from
    /// one forced decoder pass over the window's text as OpenAI's `find_alignment` runs
    /// it: the start tokens without any initial prompt, `<|notimestamps|>`, the text,
    /// `<|endoftext|>`. Windows run concurrently, so the pause before a window's first
    /// word is measured from the window's start.
    async fn add_words(
        &self,
        audio: &Arc<[f32]>,
        prompt: &[u32],
        decoded: &Decoded,
        segments: &mut [Segment],
        texts: &[Vec<u32>],
        offset: f64,
    ) -> Result<(), TranscribeError> {
        let s = &self.tokenizer.special;
        let start = prompt.iter().position(|&t| t == s.sot).unwrap_or(0);
        let sot_sequence: Vec<u32> = prompt[start..]
            .iter()
            .copied()
            .filter(|&t| t != s.no_timestamps)
            .collect();
        let language = sot_sequence
            .iter()
            .find_map(|&t| self.tokenizer.language_code(t));
        let text: Vec<u32> = texts.iter().flatten().copied().collect();
        let probabilities: Vec<f32> = decoded
            .tokens
            .iter()
            .zip(&decoded.logprobs)
            .filter(|(&t, _)| t < s.eot)
            .map(|(_, &l)| l.exp())
            .collect();
        let Some(alignment) = self.align(audio.clone(), &sot_sequence, &text).await? else {
            return Ok(());
        };
        word_timestamps::add_words(
            segments,
            texts,
            &probabilities,
            &alignment,
            sot_sequence.len(),
            audio.len(),
            offset,
            language,
            &self.tokenizer,
        )?;
        Ok(())
    }

    /// The alignment heads' attention over `audio` from every position of
    /// `sot_sequence`, `<|notimestamps|>`, `text`, `<|endoftext|>`.
    async fn align(
        &self,
        audio: Arc<[f32]>,
        sot_sequence: &[u32],
        text: &[u32],
    ) -> Result<Option<AudioAlignment>, TranscribeError> {
        let s = &self.tokenizer.special;
        let mut tokens = sot_sequence.to_vec();
        tokens.push(s.no_timestamps);
        tokens.extend_from_slice(text);
        tokens.push(s.eot);
        let request = EngineCoreRequest::new(tokens)
            .with_audio(audio)
            .with_params(GenerationParams {
                max_tokens: 1,
                ignore_eos: true,
                return_alignment: true,
                ..GenerationParams::default()
            });
        Ok(self.engine.generate(request).await?.alignment)
    }

    /// One decoding by sampling (greedy at temperature 0).
    async fn sample(
        &self,
        audio: Arc<[f32]>,
        prompt: &[u32],
        temperature: f32,
        seed: u64,
        first_logits: bool,
    ) -> Result<Decoded, TranscribeError> {
        let params = GenerationParams {
            max_tokens: MAX_NEW_TOKENS,
            temperature,
            seed: Some(seed),
            first_logits,
            ..GenerationParams::default()
        };
        let request = EngineCoreRequest::new(prompt.to_vec())
            .with_audio(audio)
            .with_params(params);
        let output = self.engine.generate(request).await?;
        Ok(Decoded {
            avg_logprob: mean(&output.logprobs),
            first_logits: output.logits.into_iter().next(),
            tokens: output.tokens,
            logprobs: output.logprobs,
        })
    }

    /// Beam search as OpenAI's decoder does it, in the engine (see
    /// `engine::beam_search`): the beams run as sequences of the batch sharing their
    /// common prefix; the best ended beam by log-probability per token comes back.
    async fn beam_search(
        &self,
        audio: Arc<[f32]>,
        prompt: &[u32],
        beam_size: usize,
    ) -> Result<Decoded, TranscribeError> {
        let params = GenerationParams {
            max_tokens: MAX_NEW_TOKENS,
            beam_width: beam_size,
            ..GenerationParams::default()
        };
        let request = EngineCoreRequest::new(prompt.to_vec())
            .with_audio(audio)
            .with_params(params);
        let output = self.engine.generate(request).await?;
        let eot = self.tokenizer.special.eot;
        let text = output.tokens.iter().filter(|&&t| t != eot).count();
        let sum: f64 = output.logprobs.iter().map(|&l| f64::from(l)).sum();
        Ok(Decoded {
            avg_logprob: sum / text.max(1) as f64,
            tokens: output.tokens,
            logprobs: output.logprobs,
            first_logits: None,
        })
    }

    /// Cuts a window's tokens into segments at timestamp tokens; gives each segment's
    /// text tokens too.
    fn segments(
        &self,
        tokens: &[u32],
        offset: f64,
        window_seconds: f64,
        timestamps: bool,
    ) -> Result<(Vec<Segment>, Vec<Vec<u32>>), TranscribeError> {
        let s = &self.tokenizer.special;
        let tokens: Vec<u32> = tokens.iter().copied().take_while(|&t| t != s.eot).collect();
        if !timestamps {
            let text: Vec<u32> = tokens.into_iter().filter(|&t| t < s.eot).collect();
            let segment = Segment {
                start: offset,
                end: offset + window_seconds,
                text: self.tokenizer.decode(&text)?,
                words: Vec::new(),
            };
            return Ok((vec![segment], vec![text]));
        }
        let time = |t: u32| (f64::from(t - s.timestamp_begin) * TIME_PRECISION).min(window_seconds);
        let mut segments = Vec::new();
        let mut texts = Vec::new();
        let mut start: Option<f64> = None;
        let mut text: Vec<u32> = Vec::new();
        for &token in &tokens {
            if token < s.timestamp_begin {
                if token < s.eot {
                    text.push(token);
                }
                continue;
            }
            match start {
                Some(begin) if !text.is_empty() => {
                    segments.push(Segment {
                        start: offset + begin,
                        end: offset + time(token).max(begin),
                        text: self.tokenizer.decode(&text)?,
                        words: Vec::new(),
                    });
                    texts.push(std::mem::take(&mut text));
                    start = None;
                }
                _ => start = Some(time(token)),
            }
        }
        if !text.is_empty() {
            // Speech that ran to the end of the window without a closing timestamp.
            let begin = start.unwrap_or(0.0);
            segments.push(Segment {
                start: offset + begin,
                end: offset + window_seconds.max(begin),
                text: self.tokenizer.decode(&text)?,
                words: Vec::new(),
            });
            texts.push(text);
        }
        Ok((segments, texts))
    }
}

fn is_silent(samples: &[f32], options: &TranscribeOptions) -> bool {
    let energy: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    let rms = (energy / samples.len().max(1) as f64).sqrt();
    rms < f64::from(options.silence_rms)
}

fn mean(values: &[f32]) -> f64 {
    if values.is_empty() {
        return f64::NEG_INFINITY;
    }
    values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64
}

fn softmax_at(logits: &[f32], index: usize) -> f64 {
    let Some(&value) = logits.get(index) else {
        return 0.0;
    };
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    f64::from(value - max).exp() / sum
}

/// How much zlib shrinks the text: repetitive output compresses far better than speech.
fn compression_ratio(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    if encoder.write_all(text.as_bytes()).is_err() {
        return 0.0;
    }
    match encoder.finish() {
        Ok(compressed) if !compressed.is_empty() => text.len() as f64 / compressed.len() as f64,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetition_compresses_well_and_speech_does_not() {
        let speech = "And so my fellow Americans, ask not what your country can do for you.";
        assert!(
            compression_ratio(speech) < 1.5,
            "{}",
            compression_ratio(speech)
        );
        let loop_text = "I'm sorry. ".repeat(40);
        assert!(
            compression_ratio(&loop_text) > 2.4,
            "{}",
            compression_ratio(&loop_text)
        );
    }

    #[test]
    fn probabilities_and_means() {
        assert!((softmax_at(&[0.0, 0.0], 1) - 0.5).abs() < 1e-12);
        assert_eq!(softmax_at(&[0.0], 3), 0.0);
        assert_eq!(mean(&[-1.0, -3.0]), -2.0);
        assert_eq!(mean(&[]), f64::NEG_INFINITY);
    }
}
