//! Live dictation with a streaming model (Voxtral Realtime): the audio goes to the
//! engine as it arrives and the model writes its text a fixed delay behind it, once
//! and for good, so there are no passes and nothing to agree on. A word is final as
//! soon as the next one begins; the word being written is the partial text.
//!
//! The decoder keeps every position (one per 80 ms) in the KV cache, so a dictation of
//! any length goes through the engine in segments of a few minutes: once a segment has
//! heard [`Segments::target_s`], it ends at the end of its last final word, and a new
//! request picks up the audio from there (the word being written is heard again from
//! its start). When no word has ended for [`Segments::stale_s`] (a pause, or the end of
//! what was said), every word written so far is final and the next segment starts one
//! delay behind the audio. Each segment is a new context for the model, as a window is
//! for Whisper.

use std::time::Instant;

use izwi_audio::ASR_SAMPLE_RATE;
use izwi_core::models::voxtral_realtime::{
    indexed_words_of, LiveTranscription, VoxtralTranscriber,
};
use izwi_core::transcript::Word;

use crate::dictation::{AudioChunks, DictatedText, DictationEvent};
use crate::RuntimeError;

/// How long a segment runs before it ends, and how long since its last final word it
/// may be to end there rather than where the audio is.
#[derive(Debug, Clone, Copy)]
struct Segments {
    target_s: f64,
    stale_s: f64,
}

/// Four minutes a segment: well inside the real checkpoint's attention window (8192
/// positions, 11 minutes), its KV cache a few hundred MB.
const SEGMENTS: Segments = Segments {
    target_s: 240.0,
    stale_s: 10.0,
};

/// Dictates from `audio` with a streaming model until the audio ends; returns the final
/// texts in order.
pub(crate) async fn dictate(
    model: &VoxtralTranscriber,
    audio: AudioChunks,
    on_event: impl Fn(DictationEvent),
) -> Result<Vec<DictatedText>, RuntimeError> {
    dictate_in_segments(model, audio, on_event, SEGMENTS).await
}

fn engine_error(e: izwi_core::engine::EngineError) -> RuntimeError {
    RuntimeError::from(izwi_core::models::whisper::TranscribeError::from(e))
}

async fn dictate_in_segments(
    model: &VoxtralTranscriber,
    mut audio: AudioChunks,
    on_event: impl Fn(DictationEvent),
    segments: Segments,
) -> Result<Vec<DictatedText>, RuntimeError> {
    let rate = f64::from(ASR_SAMPLE_RATE);
    // Room past the target for the delay and the end's silence.
    let request_seconds = segments.target_s + segments.stale_s + 10.0;
    let mut live = model
        .start_live(request_seconds)
        .await
        .map_err(engine_error)?;
    let mut state = State {
        segment: Segment::default(),
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
                    state.segment.audio.extend_from_slice(&chunk);
                    live.push(chunk).await.map_err(engine_error)?;
                    if let Some(cut) = state.cut(model, segments, rate) {
                        if cut.flush {
                            state.show(model, true, &on_event);
                        }
                        live = state.next_segment(model, cut.at, request_seconds).await?;
                    }
                }
                None => {
                    audio_open = false;
                    live.finish().await.map_err(engine_error)?;
                }
            },
            output = live.next() => {
                let Some(output) = output else { break };
                state.segment.tokens.extend(&output.tokens);
                if let Some(done) = output.finished {
                    if let izwi_core::engine::FinishReason::Failed(message) = done.finish_reason {
                        return Err(RuntimeError::InvalidRequest(format!(
                            "the model failed: {message}"
                        )));
                    }
                    state.segment.logprobs = done.logprobs;
                    state.show(model, true, &on_event);
                    break;
                }
                state.show(model, false, &on_event);
            }
        }
    }
    Ok(state.confirmed)
}

/// Where a segment ends, in samples into it; `flush`: its words so far are all final.
#[derive(Debug, PartialEq)]
struct Cut {
    at: usize,
    flush: bool,
}

/// What the current engine request has heard and written.
#[derive(Default)]
struct Segment {
    /// Where it starts in the recording, in samples.
    offset: usize,
    /// Its audio so far, kept to be heard again by the next segment from its cut.
    audio: Vec<f32>,
    tokens: Vec<u32>,
    /// Known at the end; word probabilities are not shown while dictating.
    logprobs: Vec<f32>,
    /// Where its words not yet final begin, in tokens: only those are read again as
    /// the text grows (a segment runs to thousands of tokens).
    tail_from: usize,
    /// Where its last final word ends, in samples into the segment.
    final_end: usize,
}

struct State {
    segment: Segment,
    confirmed: Vec<DictatedText>,
    first_audio: Option<Instant>,
    /// Samples recorded so far.
    recorded: usize,
}

impl State {
    /// The segment's words not yet final, timed in the recording, each with the index
    /// of its first token in the segment.
    fn tail_words(&self, model: &VoxtralTranscriber) -> Vec<(usize, Word)> {
        let rate = f64::from(ASR_SAMPLE_RATE);
        let heard = self.recorded as f64 / rate;
        let from = self.segment.tail_from;
        let step = model.format().seconds_per_token();
        let offset = self.segment.offset as f64 / rate + from as f64 * step;
        let tokens = &self.segment.tokens[from.min(self.segment.tokens.len())..];
        let logprobs = self.segment.logprobs.get(from..).unwrap_or_default();
        indexed_words_of(model.format(), tokens, logprobs, offset, heard)
            .into_iter()
            .map(|(first, word)| (from + first, word))
            .collect()
    }

    /// Where the segment ends once it has run long enough: at the end of its last final
    /// word, or, when no word has ended for a while, one delay behind the audio with
    /// every word written so far made final.
    fn cut(&self, model: &VoxtralTranscriber, segments: Segments, rate: f64) -> Option<Cut> {
        let heard = self.segment.audio.len();
        if (heard as f64) < segments.target_s * rate {
            return None;
        }
        let since_final = (heard - self.segment.final_end) as f64 / rate;
        if self.segment.final_end > 0 && since_final <= segments.stale_s {
            return Some(Cut {
                at: self.segment.final_end,
                flush: false,
            });
        }
        // What the model has heard it has written: one delay behind the audio.
        let delay = (model.format().delay_ms() / 1000.0 * rate) as usize;
        let written = heard.saturating_sub(delay);
        let last_word_end =
            self.tail_words(model)
                .last()
                .map_or(self.segment.final_end, |(_, w)| {
                    let end = w.end - self.segment.offset as f64 / rate;
                    ((end * rate) as usize).min(heard)
                });
        Some(Cut {
            at: written.max(last_word_end).max(1),
            flush: true,
        })
    }

    /// Ends the segment `cut` samples in (its request aborted: nothing after its last
    /// final word is kept) and starts the next one on the audio from there.
    async fn next_segment(
        &mut self,
        model: &VoxtralTranscriber,
        cut: usize,
        request_seconds: f64,
    ) -> Result<LiveTranscription, RuntimeError> {
        let tail = self.segment.audio.split_off(cut);
        tracing::debug!(
            at_s = (self.segment.offset + cut) as f64 / f64::from(ASR_SAMPLE_RATE),
            "streaming dictation: next segment"
        );
        self.segment = Segment {
            offset: self.segment.offset + cut,
            audio: tail.clone(),
            ..Segment::default()
        };
        let mut live = model
            .start_live(request_seconds)
            .await
            .map_err(engine_error)?;
        live.push(tail).await.map_err(engine_error)?;
        Ok(live)
    }

    /// Words no longer being written become final; the last one is partial until the
    /// next begins or the text ends.
    fn show(
        &mut self,
        model: &VoxtralTranscriber,
        ended: bool,
        on_event: &impl Fn(DictationEvent),
    ) {
        let (firsts, words): (Vec<usize>, Vec<Word>) = self.tail_words(model).into_iter().unzip();
        let complete = if ended {
            words.len()
        } else {
            words.len().saturating_sub(1)
        };
        if complete > 0 {
            let text = self.text_of(&words[..complete]);
            self.segment.tail_from = firsts
                .get(complete)
                .copied()
                .unwrap_or(self.segment.tokens.len());
            let rate = f64::from(ASR_SAMPLE_RATE);
            let end = words[complete - 1].end - self.segment.offset as f64 / rate;
            self.segment.final_end = ((end * rate) as usize).min(self.segment.audio.len());
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use izwi_core::engine::{Engine, EngineCoreConfig};
    use izwi_core::models::voxtral_realtime::VoxtralRealtime;

    use super::*;

    /// The tiny random-weight checkpoint of izwi-core's parity tests on its engine.
    fn model() -> VoxtralTranscriber {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../izwi-core/tests/fixtures/voxtral-realtime-tiny");
        let model =
            VoxtralRealtime::from_dir(&dir, None, izwi_core::DType::F32, &izwi_core::Device::Cpu)
                .expect("the fixture loads");
        let format = model.format().clone();
        let engine = Engine::new(EngineCoreConfig::default(), Box::new(model)).expect("engine");
        VoxtralTranscriber::new(Arc::new(engine), format)
    }

    /// Dictates the first 6 s of jfk.wav, fed in 100 ms chunks, in `segments`.
    async fn finals(model: &VoxtralTranscriber, segments: Segments) -> Vec<DictatedText> {
        let jfk = izwi_audio::load_for_asr(izwi_test_support::asset("speech/jfk.wav")).unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for chunk in jfk[..6 * 16_000].chunks(1600) {
            tx.send(Ok(chunk.to_vec())).unwrap();
        }
        drop(tx);
        let events = Mutex::new(Vec::new());
        let confirmed =
            dictate_in_segments(model, rx, |e| events.lock().unwrap().push(e), segments)
                .await
                .expect("dictated");
        let finals: Vec<DictatedText> = events
            .into_inner()
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                DictationEvent::Final(t) => Some(t),
                DictationEvent::Partial(_) => None,
            })
            .collect();
        assert_eq!(finals, confirmed);
        finals
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dictation_longer_than_a_segment_goes_on_in_the_next() {
        let model = model();
        let whole = finals(
            &model,
            Segments {
                target_s: 60.0,
                stale_s: 10.0,
            },
        )
        .await;
        let cut = finals(
            &model,
            Segments {
                target_s: 1.0,
                stale_s: 0.5,
            },
        )
        .await;
        for finals in [&whole, &cut] {
            assert!(!finals.is_empty());
            for pair in finals.windows(2) {
                assert!(pair[0].end_s <= pair[1].start_s + 1e-9, "{finals:?}");
            }
            assert!(
                finals.iter().all(|f| 0.0 <= f.start_s && f.end_s <= 6.0),
                "{finals:?}"
            );
        }
        // Text goes on past the first segment, to the end of the audio, as it
        // does when the whole dictation is one request.
        let last_end = |finals: &[DictatedText]| finals.last().map_or(0.0, |f| f.end_s);
        assert!(last_end(&cut) > 4.0, "{cut:?}");
        assert!(
            (last_end(&cut) - last_end(&whole)).abs() < 1.0,
            "{cut:?} {whole:?}"
        );
    }

    #[test]
    fn a_segment_ends_at_its_last_final_word_or_after_a_pause_one_delay_back() {
        let model = model();
        let segments = Segments {
            target_s: 1.0,
            stale_s: 0.5,
        };
        let state = |heard: usize, final_end: usize| State {
            segment: Segment {
                audio: vec![0.0; heard],
                final_end,
                ..Segment::default()
            },
            confirmed: Vec::new(),
            first_audio: None,
            recorded: heard,
        };
        let cut = |s: State| s.cut(&model, segments, 16_000.0);
        assert_eq!(cut(state(15_999, 8_000)), None, "before the target");
        let at_word = Cut {
            at: 8_000,
            flush: false,
        };
        assert_eq!(
            cut(state(16_000, 8_000)),
            Some(at_word),
            "at the last final word"
        );
        // The fixture's delay is 480 ms: 7680 samples.
        let after_pause = Cut {
            at: 24_000 - 7_680,
            flush: true,
        };
        assert_eq!(
            cut(state(24_000, 8_000)),
            Some(after_pause),
            "a word long ago"
        );
        let no_word = Cut {
            at: 20_000 - 7_680,
            flush: true,
        };
        assert_eq!(cut(state(20_000, 0)), Some(no_word), "no word yet");
    }
}
