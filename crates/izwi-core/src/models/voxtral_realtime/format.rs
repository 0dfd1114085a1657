//! How audio and text line up for transcription, as mistral-common prepares them: the
//! prompt is BOS then one `[STREAMING_PAD]` per left-pad and delay position; the audio
//! gets that much silence before it and, once it ends, silence to a whole position plus
//! the delay, one position and a margin, so that the text of the last word comes out
//! before the positions run out. A recording known whole is padded at once; a live one
//! takes the leading silence first and the trailing silence when it stops.
//!
//! Read from the checkpoint's `tekken.json` and `config.json` alone, so the runtime can
//! build requests and read their text while the model itself sits in the engine.

use std::path::Path;

use candle_core::Result;

use super::config::VoxtralRealtimeConfig;
use super::tokenizer::Tekken;
use crate::engine::{EngineCoreRequest, GenerationParams};
use crate::models::whisper::mel::{HOP_LENGTH, N_FFT, SAMPLE_RATE};

/// Positions of silence after a recording beyond the delay and one more, so that the
/// text of a long last word still comes out (mistral-common's figure).
const END_MARGIN_TOKENS: usize = 10;

pub struct StreamingFormat {
    tokenizer: Tekken,
    prompt: Vec<u32>,
    samples_per_token: usize,
    left_pad_tokens: usize,
    delay_tokens: usize,
    default_delay_tokens: usize,
}

impl StreamingFormat {
    /// `delay_ms`: how far the text runs behind the audio, a whole number of positions
    /// (80 ms each for the real checkpoint); None takes the tokenizer's default.
    pub fn from_dir(dir: &Path, delay_ms: Option<f64>) -> Result<Self> {
        let config_path = dir.join("config.json");
        let config: VoxtralRealtimeConfig = std::fs::read_to_string(&config_path)
            .map_err(|e| format!("cannot read {}: {e}", config_path.display()))
            .and_then(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| format!("invalid {}: {e}", config_path.display()))
            })
            .map_err(candle_core::Error::msg)?;
        Self::with_config(dir, &config, delay_ms)
    }

    /// As [`from_dir`](Self::from_dir), with the checkpoint's `config.json` already read.
    pub fn with_config(
        dir: &Path,
        config: &VoxtralRealtimeConfig,
        delay_ms: Option<f64>,
    ) -> Result<Self> {
        let tokenizer =
            Tekken::from_file(&dir.join("tekken.json")).map_err(candle_core::Error::wrap)?;
        let audio = tokenizer
            .audio()
            .ok_or_else(|| candle_core::Error::msg("tekken.json has no audio section"))?;
        if audio.transcription_format != "streaming" {
            candle_core::bail!(
                "tekken.json's transcription format is {:?}, not streaming",
                audio.transcription_format
            );
        }
        let samples_per_token = audio.samples_per_token();
        let spectrogram = &audio.audio_encoding_config;
        if spectrogram.hop_length != HOP_LENGTH
            || spectrogram.window_size != N_FFT
            || audio.sampling_rate != SAMPLE_RATE
            || samples_per_token != HOP_LENGTH * config.audio_length_per_tok
        {
            candle_core::bail!("unsupported audio settings in tekken.json: {audio:?}");
        }
        let default_delay_tokens = match audio.transcription_delay_ms {
            Some(ms) => audio.delay_tokens(ms),
            None => config.default_num_delay_tokens,
        };
        let delay_tokens = match delay_ms {
            Some(ms) => {
                let tokens = audio.delay_tokens(ms);
                let exact = (tokens * samples_per_token) as f64 == ms / 1000.0 * SAMPLE_RATE as f64;
                if tokens == 0 || !exact {
                    candle_core::bail!(
                        "a delay of {ms} ms is not a whole number of {} ms positions",
                        samples_per_token * 1000 / SAMPLE_RATE
                    );
                }
                tokens
            }
            None => default_delay_tokens,
        };
        let left_pad_tokens = audio.streaming_n_left_pad_tokens.unwrap_or(0);
        let special = |name: &str| {
            tokenizer
                .special(name)
                .ok_or_else(|| candle_core::Error::msg(format!("tekken.json has no {name} token")))
        };
        let mut prompt = vec![special("<s>")?];
        prompt.extend(std::iter::repeat_n(
            special("[STREAMING_PAD]")?,
            left_pad_tokens + delay_tokens,
        ));
        Ok(Self {
            tokenizer,
            prompt,
            samples_per_token,
            left_pad_tokens,
            delay_tokens,
            default_delay_tokens,
        })
    }

    pub fn tokenizer(&self) -> &Tekken {
        &self.tokenizer
    }

    /// The prompt every transcription starts with.
    pub fn prompt(&self) -> &[u32] {
        &self.prompt
    }

    pub fn delay_tokens(&self) -> usize {
        self.delay_tokens
    }

    /// How far the text runs behind the audio, in milliseconds.
    pub fn delay_ms(&self) -> f64 {
        self.positions_ms(self.delay_tokens)
    }

    /// The delay the checkpoint is made for (its `tekken.json`'s, else its config's).
    pub fn default_delay_ms(&self) -> f64 {
        self.positions_ms(self.default_delay_tokens)
    }

    fn positions_ms(&self, positions: usize) -> f64 {
        (positions * self.samples_per_token) as f64 * 1000.0 / SAMPLE_RATE as f64
    }

    /// Seconds of audio one position stands for.
    pub fn seconds_per_token(&self) -> f64 {
        self.samples_per_token as f64 / SAMPLE_RATE as f64
    }

    /// Silence (in samples) before the recording.
    pub fn leading_silence(&self) -> usize {
        self.left_pad_tokens * self.samples_per_token
    }

    /// Silence (in samples) after a recording of `recorded` samples.
    pub fn trailing_silence(&self, recorded: usize) -> usize {
        let per = self.samples_per_token;
        (per - recorded % per) % per + (self.delay_tokens + 1 + END_MARGIN_TOKENS) * per
    }

    /// A whole recording (16 kHz mono) with its silence around it.
    pub fn pad_recording(&self, samples: &[f32]) -> Vec<f32> {
        let left = self.leading_silence();
        let mut padded = vec![0.0; left + samples.len() + self.trailing_silence(samples.len())];
        padded[left..left + samples.len()].copy_from_slice(samples);
        padded
    }

    /// An engine request that transcribes a whole recording, greedily: one position
    /// per slice of the padded audio.
    pub fn recording_request(&self, samples: &[f32]) -> EngineCoreRequest {
        let padded = self.pad_recording(samples);
        let positions = padded.len() / self.samples_per_token;
        let params = GenerationParams {
            max_tokens: positions - self.prompt.len(),
            ..GenerationParams::default()
        };
        EngineCoreRequest::new(self.prompt.clone())
            .with_params(params)
            .with_audio(padded)
    }

    /// An engine request for audio that arrives as it is recorded: append
    /// [`leading_silence`](Self::leading_silence) zeros first, then the recording, then
    /// [`trailing_silence`](Self::trailing_silence) zeros with `ended`. At most
    /// `max_seconds` of audio are transcribed.
    pub fn live_request(&self, max_seconds: f64) -> EngineCoreRequest {
        let positions = (max_seconds / self.seconds_per_token()).ceil() as usize;
        let params = GenerationParams {
            max_tokens: positions + self.delay_tokens + 1 + END_MARGIN_TOKENS,
            ..GenerationParams::default()
        };
        EngineCoreRequest::new(self.prompt.clone())
            .with_params(params)
            .with_live_audio()
    }
}
