//! Transcription with a Voxtral Realtime engine: recordings cut into windows and
//! decoded together, and live audio streamed in as it is recorded.
//!
//! The model writes one token per position of audio, a fixed delay behind it, so the
//! `i`-th generated token stands for the speech `i` positions into the recording: the
//! words get their times from where their tokens fall, with no alignment pass.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use tokio::sync::mpsc;

use super::format::StreamingFormat;
use crate::engine::{Engine, EngineError, RequestId, StreamingOutput};
use crate::models::whisper::mel::SAMPLE_RATE;
use crate::models::whisper::WindowDone;
use crate::transcript::{Segment, Transcript, Word};

/// Windows decoded at once: each is a sequence of the engine's batch.
const WINDOWS_IN_FLIGHT: usize = 8;

#[derive(Clone)]
pub struct VoxtralTranscriber {
    engine: Arc<Engine>,
    format: Arc<StreamingFormat>,
}

impl VoxtralTranscriber {
    pub fn new(engine: Arc<Engine>, format: Arc<StreamingFormat>) -> Self {
        Self { engine, format }
    }

    pub fn format(&self) -> &StreamingFormat {
        &self.format
    }

    /// Transcribes the `windows` of `samples` (16 kHz mono), all through the engine at
    /// once; `on_window` hears each as it is done (they finish out of order).
    pub async fn transcribe(
        &self,
        samples: &[f32],
        windows: &[Range<usize>],
        on_window: impl Fn(WindowDone) + Send + Sync,
    ) -> Result<Transcript, EngineError> {
        let started = Instant::now();
        let duration = samples.len() as f64 / SAMPLE_RATE as f64;
        let done = std::sync::atomic::AtomicUsize::new(0);
        let tasks: Vec<_> = windows
            .iter()
            .enumerate()
            .map(|(index, window)| {
                let (done, on_window) = (&done, &on_window);
                let request = self.format.recording_request(&samples[window.clone()]);
                let offset = window.start as f64 / SAMPLE_RATE as f64;
                let until = window.end as f64 / SAMPLE_RATE as f64;
                async move {
                    let output = self.engine.generate(request).await?;
                    let words = words_of(
                        &self.format,
                        &output.tokens,
                        &output.logprobs,
                        offset,
                        until,
                    );
                    let segments = segments_of(words);
                    on_window(WindowDone {
                        index,
                        done: done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                        total: windows.len(),
                        segments: segments.clone(),
                    });
                    Ok::<_, EngineError>(segments)
                }
            })
            .collect();
        let segments: Vec<Vec<Segment>> = futures::stream::iter(tasks)
            .buffered(WINDOWS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(Transcript {
            // The model does not say which language it heard.
            language: None,
            duration,
            segments: segments.into_iter().flatten().collect(),
            rtf: if duration > 0.0 {
                started.elapsed().as_secs_f64() / duration
            } else {
                0.0
            },
        })
    }

    /// Starts transcribing audio as it is recorded, for at most `max_seconds` of it.
    pub async fn start_live(&self, max_seconds: f64) -> Result<LiveTranscription, EngineError> {
        let (id, outputs) = self
            .engine
            .generate_streaming(self.format.live_request(max_seconds))
            .await?;
        let live = LiveTranscription {
            engine: self.engine.clone(),
            format: self.format.clone(),
            id,
            outputs,
            recorded: 0,
        };
        live.engine
            .append_audio(&live.id, vec![0.0; self.format.leading_silence()], false)
            .await?;
        Ok(live)
    }
}

/// A transcription of audio still being recorded. Dropping it aborts the request.
pub struct LiveTranscription {
    engine: Arc<Engine>,
    format: Arc<StreamingFormat>,
    id: RequestId,
    outputs: mpsc::UnboundedReceiver<StreamingOutput>,
    recorded: usize,
}

impl LiveTranscription {
    /// More of the recording (16 kHz mono). Audio after the request has ended (it
    /// reached its length) is dropped: [`next`](Self::next) gives its end.
    pub async fn push(&mut self, samples: Vec<f32>) -> Result<(), EngineError> {
        self.recorded += samples.len();
        ended_is_fine(self.engine.append_audio(&self.id, samples, false).await)
    }

    /// The recording has ended: the text of its last words follows.
    pub async fn finish(&mut self) -> Result<(), EngineError> {
        let silence = vec![0.0; self.format.trailing_silence(self.recorded)];
        ended_is_fine(self.engine.append_audio(&self.id, silence, true).await)
    }

    /// The next tokens the model wrote; the last output carries the request's end.
    /// None once the request has ended.
    pub async fn next(&mut self) -> Option<StreamingOutput> {
        self.outputs.recv().await
    }
}

impl Drop for LiveTranscription {
    fn drop(&mut self) {
        // The engine would notice the closed output only at its next step, and a
        // request waiting for audio gives it none.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (engine, id) = (self.engine.clone(), self.id.clone());
            handle.spawn(async move {
                let _ = engine.abort_request(&id).await;
            });
        }
    }
}

fn ended_is_fine(result: Result<(), EngineError>) -> Result<(), EngineError> {
    match result {
        Err(EngineError::UnknownRequest(_)) => Ok(()),
        other => other,
    }
}

/// The words of a window's tokens, `offset` seconds into the recording and ending by
/// `until`: a word begins at a token whose text begins with a space. Its time runs from
/// its first token's position to the end of its last's (within the window); its
/// probability is the mean of its tokens'.
pub fn words_of(
    format: &StreamingFormat,
    tokens: &[u32],
    logprobs: &[f32],
    offset: f64,
    until: f64,
) -> Vec<Word> {
    indexed_words_of(format, tokens, logprobs, offset, until)
        .into_iter()
        .map(|(_, word)| word)
        .collect()
}

/// [`words_of`], each word with the index of its first token: where to decode again
/// from, to read only the words after it.
pub fn indexed_words_of(
    format: &StreamingFormat,
    tokens: &[u32],
    logprobs: &[f32],
    offset: f64,
    until: f64,
) -> Vec<(usize, Word)> {
    /// A word as its tokens come.
    struct Growing {
        first: usize,
        text: Vec<u8>,
        start: f64,
        end: f64,
        logprobs: Vec<f32>,
    }
    let step = format.seconds_per_token();
    let mut words: Vec<Growing> = Vec::new();
    for (i, &token) in tokens.iter().enumerate() {
        let bytes = format.tokenizer().decode_bytes(&[token]);
        if bytes.is_empty() {
            continue;
        }
        let at = (offset + i as f64 * step).min(until);
        let logprob = logprobs.get(i).copied().unwrap_or(0.0);
        match words.last_mut() {
            Some(word) if !bytes[0].is_ascii_whitespace() => {
                word.text.extend_from_slice(&bytes);
                word.end = (at + step).min(until);
                word.logprobs.push(logprob);
            }
            _ => words.push(Growing {
                first: i,
                text: bytes,
                start: at,
                end: (at + step).min(until),
                logprobs: vec![logprob],
            }),
        }
    }
    words
        .into_iter()
        .map(|w| {
            let word = Word {
                word: String::from_utf8_lossy(&w.text).into_owned(),
                start: w.start,
                end: w.end,
                probability: w.logprobs.iter().map(|&l| f64::from(l).exp()).sum::<f64>()
                    / w.logprobs.len() as f64,
            };
            (w.first, word)
        })
        .collect()
}

/// Words grouped into segments that end with a sentence.
pub fn segments_of(words: Vec<Word>) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    for word in words {
        let ends_sentence = word.word.trim_end().ends_with(['.', '?', '!']);
        current.push(word);
        if ends_sentence {
            segments.push(segment(std::mem::take(&mut current)));
        }
    }
    if !current.is_empty() {
        segments.push(segment(current));
    }
    segments
}

fn segment(words: Vec<Word>) -> Segment {
    Segment {
        start: words.first().map_or(0.0, |w| w.start),
        end: words.last().map_or(0.0, |w| w.end),
        text: words.iter().map(|w| w.word.as_str()).collect(),
        words,
    }
}
