//! Whole recordings through the streaming model, as mistral-common prepares them: the
//! prompt is BOS then one `[STREAMING_PAD]` per left-pad and delay position, and the
//! audio gets that much silence before it, and after it silence to a whole position
//! plus the delay, one position and a margin for the last word, so that the text of
//! the last word comes out before the positions end.

use candle_core::Result;

use super::model::VoxtralRealtime;
use crate::engine::{EngineCoreRequest, GenerationParams};

/// Positions of silence after a recording beyond the delay and one more, so that the
/// text of a long last word still comes out (mistral-common's figure).
const END_MARGIN_TOKENS: usize = 10;

impl VoxtralRealtime {
    fn samples_per_token(&self) -> usize {
        self.tokenizer()
            .audio()
            .map_or(1280, |a| a.samples_per_token())
    }

    fn left_pad_tokens(&self) -> usize {
        self.tokenizer()
            .audio()
            .and_then(|a| a.streaming_n_left_pad_tokens)
            .unwrap_or(0)
    }

    /// The prompt every transcription starts with.
    pub fn prompt(&self) -> Result<Vec<u32>> {
        let t = self.tokenizer();
        let bos = t
            .special("<s>")
            .ok_or_else(|| candle_core::Error::msg("tekken.json has no <s> token"))?;
        let pad = t
            .special("[STREAMING_PAD]")
            .ok_or_else(|| candle_core::Error::msg("tekken.json has no [STREAMING_PAD] token"))?;
        let mut tokens = vec![bos];
        tokens.extend(std::iter::repeat_n(
            pad,
            self.left_pad_tokens() + self.delay_tokens(),
        ));
        Ok(tokens)
    }

    /// A whole recording (16 kHz mono) with the silence the model expects around it.
    pub fn pad_recording(&self, samples: &[f32]) -> Vec<f32> {
        let per = self.samples_per_token();
        let left = self.left_pad_tokens() * per;
        let to_whole = (per - samples.len() % per) % per;
        let right = to_whole + (self.delay_tokens() + 1 + END_MARGIN_TOKENS) * per;
        let mut padded = vec![0.0; left + samples.len() + right];
        padded[left..left + samples.len()].copy_from_slice(samples);
        padded
    }

    /// An engine request that transcribes a whole recording, greedily: one position
    /// per slice of the padded audio.
    pub fn recording_request(&self, samples: &[f32]) -> Result<EngineCoreRequest> {
        let prompt = self.prompt()?;
        let padded = self.pad_recording(samples);
        let positions = padded.len() / self.samples_per_token();
        let params = GenerationParams {
            max_tokens: positions - prompt.len(),
            ..GenerationParams::default()
        };
        Ok(EngineCoreRequest::new(prompt)
            .with_params(params)
            .with_audio(padded))
    }
}
