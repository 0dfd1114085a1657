//! Live dictation with a streaming model (Voxtral Realtime): the audio goes to the
//! engine as it arrives and the model writes its text a fixed delay behind it, once
//! and for good, so there are no passes and nothing to agree on. A word is final as
//! soon as the next one begins; the word being written is the partial text.

use std::time::Instant;

use izwi_core::models::voxtral_realtime::{words_of, VoxtralTranscriber};
use izwi_core::transcript::Word;

use crate::dictation::{AudioChunks, DictatedText, DictationEvent};
use crate::RuntimeError;

/// The longest dictation a streaming model takes in one go: its decoder holds every
/// position (one per 80 ms) in the KV cache.
pub const MAX_STREAMING_DICTATION_SECONDS: f64 = 300.0;

/// Dictates from `audio` with a streaming model until the audio ends (or reaches
/// [`MAX_STREAMING_DICTATION_SECONDS`]); returns the final texts in order.
pub(crate) async fn dictate(
    model: &VoxtralTranscriber,
    mut audio: AudioChunks,
    on_event: impl Fn(DictationEvent),
) -> Result<Vec<DictatedText>, RuntimeError> {
    let engine_error = |e| RuntimeError::from(izwi_core::models::whisper::TranscribeError::from(e));
    let mut live = model
        .start_live(MAX_STREAMING_DICTATION_SECONDS)
        .await
        .map_err(engine_error)?;
    let mut state = State {
        tokens: Vec::new(),
        logprobs: Vec::new(),
        words_final: 0,
        confirmed: Vec::new(),
        first_audio: None,
        recorded: 0,
    };
    let mut audio_open = true;
    loop {
        tokio::select! {
            chunk = audio.recv(), if audio_open => match chunk {
                Some(chunk) => {
                    let chunk = chunk?;
                    state.first_audio.get_or_insert_with(Instant::now);
                    state.recorded += chunk.len();
                    live.push(chunk).await.map_err(engine_error)?;
                }
                None => {
                    audio_open = false;
                    live.finish().await.map_err(engine_error)?;
                }
            },
            output = live.next() => {
                let Some(output) = output else { break };
                state.tokens.extend(&output.tokens);
                if let Some(done) = output.finished {
                    if let izwi_core::engine::FinishReason::Failed(message) = done.finish_reason {
                        return Err(RuntimeError::InvalidRequest(format!(
                            "the model failed: {message}"
                        )));
                    }
                    if audio_open {
                        tracing::warn!(
                            "dictation stopped at the {MAX_STREAMING_DICTATION_SECONDS} s a \
                             streaming model takes in one go"
                        );
                    }
                    state.logprobs = done.logprobs;
                    state.show(model, true, &on_event);
                    break;
                }
                state.show(model, false, &on_event);
            }
        }
    }
    Ok(state.confirmed)
}

struct State {
    tokens: Vec<u32>,
    /// Known at the end; word probabilities are not shown while dictating.
    logprobs: Vec<f32>,
    /// Words already given as final.
    words_final: usize,
    confirmed: Vec<DictatedText>,
    first_audio: Option<Instant>,
    /// Samples recorded so far.
    recorded: usize,
}

impl State {
    /// Words no longer being written become final; the last one is partial until the
    /// next begins or the text ends.
    fn show(
        &mut self,
        model: &VoxtralTranscriber,
        ended: bool,
        on_event: &impl Fn(DictationEvent),
    ) {
        let heard = self.recorded as f64 / f64::from(izwi_audio::ASR_SAMPLE_RATE);
        let words = words_of(model.format(), &self.tokens, &self.logprobs, 0.0, heard);
        let complete = if ended {
            words.len()
        } else {
            words.len().saturating_sub(1)
        };
        if complete > self.words_final {
            let text = self.text_of(&words[self.words_final..complete]);
            self.words_final = complete;
            if let Some(text) = text {
                self.confirmed.push(text.clone());
                on_event(DictationEvent::Final(text));
            }
        }
        if !ended {
            if let Some(text) = self.text_of(&words[complete..]) {
                on_event(DictationEvent::Partial(text));
            }
        }
    }

    fn text_of(&self, words: &[Word]) -> Option<DictatedText> {
        let text: String = words.iter().map(|w| w.word.as_str()).collect();
        let text = text.trim();
        (!text.is_empty()).then(|| DictatedText {
            text: text.to_string(),
            start_s: words.first().map_or(0.0, |w| w.start),
            end_s: words.last().map_or(0.0, |w| w.end),
            emitted_at_s: self.first_audio.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        })
    }
}
