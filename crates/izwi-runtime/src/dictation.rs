//! Live dictation with Whisper: words appear while the user speaks. Whisper reads 30 s
//! windows, not a stream, so the speech heard so far is transcribed again every
//! [`DictationOptions::step_seconds`] of new audio, with word timestamps, and text is
//! confirmed by local agreement (as whisper_streaming does): the words two successive
//! passes agree on, from the last confirmed word on, are final; the rest of the latest
//! pass is shown as partial text and may still change. The voice activity detector
//! says when the user pauses: a pass then reads up to the pause and revises the partial
//! text (it hears nearly what the pass before it heard, so agreeing with it would prove
//! little), and if the pause lasts (or the audio ends) what is still partial becomes
//! final. A pass also hears the speech
//! of the last few seconds before the current stretch, so the words before a short
//! pause are decided with what follows them (alone, tiny.en heard "and so my fellow
//! Americans" as "and so am I fellow Americans"); words already confirmed are not
//! taken again.
//! Long speech moves the window past the confirmed words, which become the prompt.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use izwi_audio::{Microphone, ASR_SAMPLE_RATE};
use izwi_core::models::vad::{VadEvent, VadOptions, VadStream};
use izwi_core::models::whisper::TranscribeOptions;
use izwi_core::transcript::Word;
use izwi_hub::Family;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::transcribe::{check_delay_ms, check_voxtral_request, refuse_delay};
use crate::{Runtime, RuntimeError};

/// Audio kept before the detector's start of speech, which fires a little late.
const PRE_ROLL_SECONDS: f64 = 0.3;
/// The most audio one pass reads: a window moves on past confirmed words before this.
const MAX_PASS_SECONDS: f64 = 20.0;
/// Earlier speech that began at most this long before new speech is heard again with it.
const CONTEXT_SECONDS: f64 = 10.0;
/// A pause this long after speech makes its partial text final.
const FINAL_PAUSE_SECONDS: f64 = 1.5;
/// The prompt carried over a window's move: the last confirmed characters.
const PROMPT_CHARS: usize = 200;
/// A word of a new pass may be new when it ends after the last confirmed word ends,
/// less this much (word times move a little between passes).
const OVERLAP_SECONDS: f64 = 0.1;
/// The longest run of confirmed words a new pass may repeat at its start.
const MAX_REPEATED_WORDS: usize = 5;
/// Agreed words are confirmed only when they end at least this long before the
/// window does: passes that heard little after a word can agree on it wrongly (base,
/// on a LibriVox clip: "Howdy, Mary, to more" up to 2.5 s of audio, "Had he married a
/// more" from 3 s on).
const SETTLE_SECONDS: f64 = 2.0;
/// Chunks a file is fed in when played at real-time pace.
const FEED_SECONDS: f64 = 0.1;

#[derive(Debug, Clone)]
pub struct DictationOptions {
    pub model_id: String,
    /// ISO code; None detects it on each pass.
    pub language: Option<String>,
    /// New audio between two passes over what is not yet confirmed.
    pub step_seconds: f64,
    /// The pause that ends what was said and makes it final.
    pub end_silence_ms: u32,
    /// Voxtral Realtime only: how far its text runs behind the audio, in milliseconds;
    /// None takes the checkpoint's default.
    pub delay_ms: Option<u32>,
}

impl DictationOptions {
    pub fn new(model_id: impl Into<String>) -> Self {
        Self {
            model_id: model_id.into(),
            language: None,
            step_seconds: 1.0,
            end_silence_ms: 600,
            delay_ms: None,
        }
    }
}

/// Text as dictation shows it: `start_s`, `end_s` are seconds into the audio, and
/// `emitted_at_s` seconds from the first audio fed to when the text was known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DictatedText {
    pub text: String,
    pub start_s: f64,
    pub end_s: f64,
    pub emitted_at_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum DictationEvent {
    /// What the latest pass heard after the confirmed text; replaces the previous
    /// partial text.
    Partial(DictatedText),
    /// Confirmed text, in order; it never changes.
    Final(DictatedText),
}

/// Audio for [`Runtime::dictate`]: 16 kHz mono chunks as they arrive; the stream ends
/// when the sender is dropped, and an error ends dictation with it.
pub type AudioChunks = mpsc::UnboundedReceiver<Result<Vec<f32>, RuntimeError>>;

/// The microphone's audio, read on a blocking thread, until `stop` is cancelled.
pub fn microphone_chunks(microphone: Microphone, stop: CancellationToken) -> AudioChunks {
    crate::live_chat::read_microphone(microphone, stop)
}

/// A file's audio at the pace it plays (for scripts and tests: as if it were a
/// microphone), until its end or until `stop` is cancelled.
pub fn file_chunks_in_real_time(
    path: &std::path::Path,
    stop: CancellationToken,
) -> Result<AudioChunks, RuntimeError> {
    let samples = izwi_audio::load_for_asr(path).map_err(|source| RuntimeError::Audio {
        path: path.to_path_buf(),
        source,
    })?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let chunk = (FEED_SECONDS * f64::from(ASR_SAMPLE_RATE)) as usize;
        let started = tokio::time::Instant::now();
        for (i, piece) in samples.chunks(chunk).enumerate() {
            let due = started + Duration::from_secs_f64(i as f64 * FEED_SECONDS);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(due) => {}
            }
            if tx.send(Ok(piece.to_vec())).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

impl Runtime {
    /// Dictates from `audio` until it ends: partial and final text through `on_event`
    /// as it is heard. Returns the final texts in order.
    pub async fn dictate(
        &self,
        options: &DictationOptions,
        mut audio: AudioChunks,
        on_event: impl Fn(DictationEvent),
    ) -> Result<Vec<DictatedText>, RuntimeError> {
        let inner = &self.inner;
        let info = inner.hub.info(&options.model_id)?;
        if info.family == Family::VoxtralRealtime {
            check_voxtral_request(&info.name, false, options.language.is_some(), false)?;
            check_delay_ms(options.delay_ms)?;
            let model = inner
                .models
                .voxtral(&options.model_id, options.delay_ms)
                .await?;
            return crate::streaming_dictation::dictate(&model, audio, on_event).await;
        }
        refuse_delay(&info.name, options.delay_ms)?;
        let vad = inner.vad.get(self.data_dir()).await.ok_or_else(no_vad)?;
        let whisper = inner.models.whisper(&options.model_id).await?;
        let mut detector = VadStream::new(
            &vad,
            VadOptions {
                min_silence_ms: options.end_silence_ms,
                speech_pad_ms: 200,
                ..VadOptions::default()
            },
        );
        let mut state = Dictation::new(f64::from(ASR_SAMPLE_RATE));
        let transcribe = |samples: Vec<f32>, prompt: Option<String>| {
            let whisper = whisper.clone();
            let options = TranscribeOptions {
                language: options.language.clone(),
                word_timestamps: true,
                initial_prompt: prompt,
                ..TranscribeOptions::default()
            };
            async move {
                let samples = Arc::new(samples);
                // One window: the whole pass.
                let window: Range<usize> = 0..samples.len();
                whisper
                    .transcriber
                    .transcribe(&samples, std::slice::from_ref(&window), &options, |_| {})
                    .await
            }
        };
        let step = (options.step_seconds.max(0.1) * state.rate) as usize;
        loop {
            let Some(chunk) = audio.recv().await else {
                break;
            };
            let mut chunk = chunk?;
            // Audio that arrived during a pass is taken at once, so a slow machine
            // runs fewer, longer steps instead of falling further behind.
            while let Ok(more) = audio.try_recv() {
                chunk.extend_from_slice(&more?);
            }
            state.first_audio.get_or_insert_with(Instant::now);
            state.heard += chunk.len();
            state.buffer.extend_from_slice(&chunk);
            let events = detector.push(&chunk).map_err(|e| {
                RuntimeError::InvalidRequest(format!("voice activity detection failed: {e}"))
            })?;
            for event in events {
                match event {
                    VadEvent::SpeechStart { at } => {
                        let pre_roll = (PRE_ROLL_SECONDS * state.rate) as usize;
                        let start = at.saturating_sub(pre_roll).max(state.buffer_start);
                        if state.context_from.is_none() {
                            // No pass will hear the words still partial again.
                            state.confirm_hypothesis(&on_event);
                        }
                        state.speech_from = Some(state.context_from.unwrap_or(start).min(start));
                        state.paused_at = None;
                        state.last_pass_at = state.heard;
                    }
                    VadEvent::SpeechEnd { speech } => {
                        let pad = (state.rate / 5.0) as usize;
                        let to = (speech.end + pad).min(state.heard);
                        if let Some(range) = state.pass_range(to, &on_event) {
                            let prompt = state.prompt();
                            let words = transcribe(state.audio(&range), prompt).await?;
                            state.revise(&range, words_of(&words), &on_event);
                        }
                        state.context_from = state.speech_from;
                        state.speech_from = None;
                        state.paused_at = Some(speech.end);
                    }
                }
            }
            if state.speech_from.is_some() && state.heard - state.last_pass_at >= step {
                state.last_pass_at = state.heard;
                if let Some(range) = state.pass_range(state.heard, &on_event) {
                    let prompt = state.prompt();
                    let words = transcribe(state.audio(&range), prompt).await?;
                    state.agree(&range, words_of(&words), &on_event);
                }
            }
            let pause = (FINAL_PAUSE_SECONDS * state.rate) as usize;
            if state.paused_at.is_some_and(|p| state.heard - p >= pause) {
                state.paused_at = None;
                state.confirm_hypothesis(&on_event);
            }
            if state.speech_from.is_none() && state.paused_at.is_none() {
                // Speech older than the context is no longer heard again (kept while
                // a pause may still be short, for the words still partial).
                let context = (CONTEXT_SECONDS * state.rate) as usize;
                if state
                    .context_from
                    .is_some_and(|c| state.heard - c > context)
                {
                    state.context_from = None;
                }
                let keep = (PRE_ROLL_SECONDS * state.rate) as usize;
                state.forget_before(state.heard.saturating_sub(keep));
            }
        }
        let events = detector.finish().map_err(|e| {
            RuntimeError::InvalidRequest(format!("voice activity detection failed: {e}"))
        })?;
        // Speech still going on when the audio ended ends with it.
        if state.speech_from.is_some() {
            let end = events.iter().find_map(|e| match e {
                VadEvent::SpeechEnd { speech } => Some(speech.end),
                VadEvent::SpeechStart { .. } => None,
            });
            let to = end.unwrap_or(state.heard).min(state.heard);
            if let Some(range) = state.pass_range(to, &on_event) {
                let prompt = state.prompt();
                let words = transcribe(state.audio(&range), prompt).await?;
                state.agree(&range, words_of(&words), &on_event);
            }
        }
        state.confirm_hypothesis(&on_event);
        Ok(state.confirmed)
    }
}

pub(crate) fn no_vad() -> RuntimeError {
    RuntimeError::InvalidRequest(
        "dictation needs the voice activity detector: install it with \
         `izwi models vad silero_vad_16k_op15.onnx`"
            .into(),
    )
}

fn words_of(transcript: &izwi_core::transcript::Transcript) -> Vec<Word> {
    transcript
        .segments
        .iter()
        .flat_map(|s| s.words.iter().cloned())
        .collect()
}

/// Dictation's state between chunks. Positions are samples since the first one fed.
struct Dictation {
    rate: f64,
    /// Audio from `buffer_start` to `heard`.
    buffer: Vec<f32>,
    buffer_start: usize,
    heard: usize,
    /// Where the window of the speech being dictated starts, while the user speaks.
    speech_from: Option<usize>,
    /// Where the last window started, while it is recent enough to be heard again.
    context_from: Option<usize>,
    /// Where the user paused, until the pause is long enough to confirm the partial text.
    paused_at: Option<usize>,
    /// `heard` at the last pass.
    last_pass_at: usize,
    confirmed: Vec<DictatedText>,
    /// The last few confirmed words.
    confirmed_tail: Vec<Word>,
    /// Seconds: where the last confirmed word ends.
    confirmed_until: f64,
    /// The latest pass's words after the confirmed ones.
    hypothesis: Vec<Word>,
    first_audio: Option<Instant>,
}

impl Dictation {
    fn new(rate: f64) -> Self {
        Self {
            rate,
            buffer: Vec::new(),
            buffer_start: 0,
            heard: 0,
            speech_from: None,
            context_from: None,
            paused_at: None,
            last_pass_at: 0,
            confirmed: Vec::new(),
            confirmed_tail: Vec::new(),
            confirmed_until: 0.0,
            hypothesis: Vec::new(),
            first_audio: None,
        }
    }

    /// The samples a pass ending at `to` reads: from the speech's start, or from the
    /// last confirmed word once the speech is longer than a pass may be (or later
    /// still, when nothing was confirmed for that long: partial words the window
    /// leaves behind are confirmed, as no pass will hear them again).
    fn pass_range(
        &mut self,
        to: usize,
        on_event: &impl Fn(DictationEvent),
    ) -> Option<Range<usize>> {
        let from = self.speech_from?;
        let longest = (MAX_PASS_SECONDS * self.rate) as usize;
        if to.saturating_sub(from) > longest {
            let confirmed = (self.confirmed_until * self.rate) as usize;
            let moved = confirmed.clamp(from, to).max(to.saturating_sub(longest));
            let moved_s = moved as f64 / self.rate;
            let left = self
                .hypothesis
                .iter()
                .take_while(|w| w.start < moved_s)
                .count();
            let left_behind: Vec<Word> = self.hypothesis.drain(..left).collect();
            self.confirm(&left_behind, on_event);
            self.speech_from = Some(moved);
            // No pass hears what the window left behind again: speech with no pause in
            // it (a meeting, a television) keeps a window's audio, not all of it.
            if self.context_from.is_some_and(|c| c < moved) {
                self.context_from = None;
            }
            self.forget_before(moved);
        }
        let from = self.speech_from?;
        (to > from).then_some(from..to)
    }

    fn audio(&self, range: &Range<usize>) -> Vec<f32> {
        self.buffer[range.start - self.buffer_start..range.end - self.buffer_start].to_vec()
    }

    /// Confirmed text said before the window, which primes a pass: once the window has
    /// moved past the start of the speech, Whisper no longer hears those words.
    fn prompt(&self) -> Option<String> {
        let from = self.speech_from? as f64 / self.rate;
        let before: String = self
            .confirmed
            .iter()
            .filter(|t| t.end_s <= from + OVERLAP_SECONDS)
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let chars: Vec<char> = before.chars().collect();
        let kept: String = chars[chars.len().saturating_sub(PROMPT_CHARS)..]
            .iter()
            .collect();
        (!kept.trim().is_empty()).then_some(kept)
    }

    /// The new words of a pass over `range`, in stream time: those that end after the
    /// last confirmed word, less any run at their start that repeats the last
    /// confirmed words (a word's time moves a little from one pass to the next).
    fn new_words(&self, range: &Range<usize>, words: Vec<Word>) -> Vec<Word> {
        let offset = range.start as f64 / self.rate;
        let words: Vec<Word> = words
            .into_iter()
            .map(|w| Word {
                start: w.start + offset,
                end: w.end + offset,
                ..w
            })
            .filter(|w| w.end > self.confirmed_until + OVERLAP_SECONDS)
            .collect();
        let tail = &self.confirmed_tail;
        let repeated = (1..=MAX_REPEATED_WORDS.min(words.len()).min(tail.len()))
            .rev()
            .find(|&n| {
                tail[tail.len() - n..]
                    .iter()
                    .zip(&words[..n])
                    .all(|(a, b)| same_word(&a.word, &b.word))
            })
            .unwrap_or(0);
        words[repeated..].to_vec()
    }

    /// Local agreement: the words this pass and the previous one begin with alike are
    /// final once settled (ended `SETTLE_SECONDS` before the window); what follows is
    /// the partial text.
    fn agree(
        &mut self,
        range: &Range<usize>,
        words: Vec<Word>,
        on_event: &impl Fn(DictationEvent),
    ) {
        let words = self.new_words(range, words);
        let agreed = words
            .iter()
            .zip(&self.hypothesis)
            .take_while(|(a, b)| same_word(&a.word, &b.word))
            .count();
        let settled_until = range.end as f64 / self.rate - SETTLE_SECONDS;
        let agreed = words[..agreed]
            .iter()
            .take_while(|w| w.end <= settled_until)
            .count();
        self.confirm(&words[..agreed], on_event);
        self.hypothesis = words[agreed..].to_vec();
        if let Some(text) = self.text_of(&self.hypothesis) {
            on_event(DictationEvent::Partial(text));
        }
    }

    /// A pass that revises the partial text without confirming any of it.
    fn revise(
        &mut self,
        range: &Range<usize>,
        words: Vec<Word>,
        on_event: &impl Fn(DictationEvent),
    ) {
        self.hypothesis = self.new_words(range, words);
        if let Some(text) = self.text_of(&self.hypothesis) {
            on_event(DictationEvent::Partial(text));
        }
    }

    /// The user stopped: what is still partial is final.
    fn confirm_hypothesis(&mut self, on_event: &impl Fn(DictationEvent)) {
        let words = std::mem::take(&mut self.hypothesis);
        self.confirm(&words, on_event);
    }

    fn confirm(&mut self, words: &[Word], on_event: &impl Fn(DictationEvent)) {
        self.confirmed_tail.extend_from_slice(words);
        let excess = self.confirmed_tail.len().saturating_sub(MAX_REPEATED_WORDS);
        self.confirmed_tail.drain(..excess);
        if let Some(text) = self.text_of(words) {
            self.confirmed_until = text.end_s;
            self.confirmed.push(text.clone());
            on_event(DictationEvent::Final(text));
        }
    }

    fn text_of(&self, words: &[Word]) -> Option<DictatedText> {
        let (first, last) = (words.first()?, words.last()?);
        let text: String = words.iter().map(|w| w.word.as_str()).collect();
        Some(DictatedText {
            text: text.trim().to_owned(),
            start_s: first.start,
            end_s: last.end,
            emitted_at_s: self.first_audio.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        })
    }

    /// Lets go of audio before `position` that no pass will read again.
    fn forget_before(&mut self, position: usize) {
        let keep_from = [self.speech_from, self.context_from]
            .into_iter()
            .flatten()
            .fold(position, usize::min);
        if keep_from > self.buffer_start {
            let drop = (keep_from - self.buffer_start).min(self.buffer.len());
            self.buffer.drain(..drop);
            self.buffer_start += drop;
        }
    }
}

/// Words agree when their letters and digits do, whatever the case and punctuation
/// ("country" and "country." are the same word before the sentence is known to end).
fn same_word(a: &str, b: &str) -> bool {
    let letters = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    letters(a) == letters(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(w: &str, start: f64, end: f64) -> Word {
        Word {
            word: w.into(),
            start,
            end,
            probability: 0.9,
        }
    }

    /// 40 s heard, all of it speech.
    fn state() -> Dictation {
        Dictation {
            buffer: vec![0.0; 16_000 * 40],
            heard: 16_000 * 40,
            speech_from: Some(0),
            ..Dictation::new(16_000.0)
        }
    }

    #[test]
    fn two_passes_that_agree_confirm_their_common_start() {
        let mut s = state();
        let events = std::cell::RefCell::new(Vec::new());
        let on_event = |e: DictationEvent| events.borrow_mut().push(e);
        let range = 0..16_000 * 3;
        s.agree(
            &range,
            vec![word(" ask", 0.2, 0.5), word(" not", 0.5, 0.8)],
            &on_event,
        );
        // Nothing to agree with yet: all partial.
        assert!(matches!(&events.borrow()[0], DictationEvent::Partial(t) if t.text == "ask not"));
        s.agree(
            &range,
            vec![
                word(" ask", 0.2, 0.5),
                word(" not.", 0.5, 0.8),
                word(" what", 0.9, 1.2),
            ],
            &on_event,
        );
        let events = events.borrow();
        assert!(
            matches!(&events[1], DictationEvent::Final(t) if t.text == "ask not." && t.end_s == 0.8)
        );
        assert!(matches!(&events[2], DictationEvent::Partial(t) if t.text == "what"));
        assert_eq!(s.confirmed_until, 0.8);
        // Confirmed words are not offered again by the next pass, even when their
        // times moved: by time, or as a repeat of the last confirmed words.
        let again = s.new_words(
            &range,
            vec![
                word(" ask", 0.2, 0.5),
                word(" not", 0.55, 0.95),
                word(" what", 0.95, 1.2),
            ],
        );
        assert_eq!(
            again.iter().map(|w| w.word.as_str()).collect::<Vec<_>>(),
            [" what"]
        );
        // A new word that began before the last confirmed one ended is kept.
        let overlapping = s.new_words(&range, vec![word(" my", 0.7, 1.1)]);
        assert_eq!(overlapping.len(), 1);
    }

    #[test]
    fn a_long_pause_makes_the_partial_text_final_and_a_long_window_moves_past_confirmed_words() {
        let mut s = state();
        let events = std::cell::RefCell::new(Vec::new());
        let on_event = |e: DictationEvent| events.borrow_mut().push(e);
        s.agree(
            &(16_000..16_000 * 3),
            vec![word(" Hello", 0.1, 0.6)],
            &on_event,
        );
        s.confirm_hypothesis(&on_event);
        assert!(
            matches!(&events.borrow()[1], DictationEvent::Final(t) if t.start_s == 1.1 && t.end_s == 1.6)
        );
        assert!(s.hypothesis.is_empty());
        // 30 s of speech: the pass starts at the last confirmed word, at most 20 s back.
        s.speech_from = Some(0);
        s.confirmed_until = 12.0;
        assert_eq!(
            s.pass_range(16_000 * 30, &on_event),
            Some(16_000 * 12..16_000 * 30)
        );
        assert_eq!(s.prompt().as_deref(), Some("Hello"));
        // Nothing confirmed for 28 s: the window moves 20 s back from the end, and a
        // partial word it leaves behind is confirmed rather than lost.
        s.confirmed_until = 2.0;
        s.speech_from = Some(0);
        s.hypothesis = vec![word(" left", 3.0, 3.5), word(" kept", 11.0, 11.5)];
        assert_eq!(
            s.pass_range(16_000 * 30, &on_event),
            Some(16_000 * 10..16_000 * 30)
        );
        assert!(
            matches!(events.borrow().last(), Some(DictationEvent::Final(t)) if t.text == "left")
        );
        assert_eq!(s.hypothesis.len(), 1);
    }

    #[test]
    fn agreed_words_the_window_has_barely_heard_stay_partial() {
        let mut s = state();
        let events = std::cell::RefCell::new(Vec::new());
        let on_event = |e: DictationEvent| events.borrow_mut().push(e);
        let range = 0..16_000 * 3;
        let heard = || vec![word(" Howdy,", 0.3, 0.9), word(" Mary,", 0.9, 1.4)];
        s.agree(&range, heard(), &on_event);
        s.agree(&range, heard(), &on_event);
        // "Howdy," ends 2.1 s before the window does and is final; "Mary," does not.
        let events = events.borrow();
        assert!(matches!(&events[1], DictationEvent::Final(t) if t.text == "Howdy,"));
        assert!(matches!(&events[2], DictationEvent::Partial(t) if t.text == "Mary,"));
        assert_eq!(s.hypothesis.len(), 1);
    }

    #[test]
    fn words_agree_whatever_their_case_and_punctuation() {
        assert!(same_word(" Country.", "country"));
        assert!(!same_word(" count", " country"));
    }
}
