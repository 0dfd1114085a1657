//! A spoken turn of a conversation: the user's speech → Whisper → the chat model,
//! streamed → each sentence of the reply spoken by a voice as soon as the model has
//! finished writing it, so the first sentence plays while the rest is being written.
//!
//! The turn's clock starts at the end of the user's speech (the caller says when that
//! was): the metrics it records are from there to the transcript, to the reply's first
//! token and to its first sample of audio. Both sides of the turn are kept: the user's
//! words and recording are stored before the model runs, the reply (its text and audio)
//! when it is done or interrupted.
//!
//! The turn lasts until its reply has played to the end. Barge-in: the caller cancels
//! the turn's token when the user speaks over the reply. The turn stops at once
//! (playback stops, the engine request is aborted, synthesis stops) and keeps in the
//! history the sentences that had begun to play.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use izwi_core::models::whisper::TranscribeOptions;
use izwi_core::text::{split_sentences, ChatMessage, Clause, Sentence};
use izwi_store::{MessageMetrics, MessageRole, NewMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatModel, ChatParams, Conversation};
use crate::speak::{Speaker, SENTENCE_GAP_SECONDS};
use crate::transcribe::windows;
use crate::{Runtime, RuntimeError};

/// The models of a spoken conversation.
#[derive(Debug, Clone)]
pub struct VoiceChatSetup {
    /// A Whisper model: an id, `local/NAME` or a model folder, as `transcribe` takes.
    pub asr: String,
    /// A voice: a library voice's name or id, a voice model, or a Piper `.onnx` file.
    pub voice: String,
    /// The language the user speaks (ISO code); None detects it each turn.
    pub language: Option<String>,
}

/// Something a turn has to show, as it happens.
#[derive(Debug)]
pub enum TurnEvent<'a> {
    /// The user's words, recognised.
    Heard(&'a str),
    /// The next piece of the reply's text.
    ReplyText(&'a str),
    /// The next sentence of the reply was queued to play.
    ReplySpoken(&'a str),
}

/// Where a turn's reply is played: a speaker ([`izwi_audio::Playback`]), or nowhere
/// but the stored recording ([`NoPlayback`]).
pub trait ReplyOutput: Sync {
    /// Queues the next piece of the reply (mono, `sample_rate` Hz).
    fn play(&self, samples: &[f32], sample_rate: u32) -> Result<(), RuntimeError>;
    /// Seconds played since the last [`ReplyOutput::stop`] (a turn's start stops it).
    fn played_seconds(&self) -> f64;
    /// Whether all that was queued has been played.
    fn is_drained(&self) -> bool;
    /// Drops what is queued and not yet played, and restarts the played count.
    fn stop(&self);
    /// An error once the device has failed (unplugged mid-reply): what is queued will
    /// never drain.
    fn check(&self) -> Result<(), RuntimeError> {
        Ok(())
    }
    /// The reply is whole: what is held to join its pieces (a resampler's last
    /// milliseconds) is queued too.
    fn end(&self) -> Result<(), RuntimeError> {
        Ok(())
    }
}

/// A reply that is only recorded: counted as heard as soon as it is made.
#[derive(Debug, Default)]
pub struct NoPlayback {
    seconds: Mutex<f64>,
}

impl ReplyOutput for NoPlayback {
    fn play(&self, samples: &[f32], sample_rate: u32) -> Result<(), RuntimeError> {
        if let Ok(mut seconds) = self.seconds.lock() {
            *seconds += samples.len() as f64 / f64::from(sample_rate.max(1));
        }
        Ok(())
    }

    fn played_seconds(&self) -> f64 {
        self.seconds.lock().map_or(0.0, |s| *s)
    }

    fn is_drained(&self) -> bool {
        true
    }

    fn stop(&self) {
        if let Ok(mut seconds) = self.seconds.lock() {
            *seconds = 0.0;
        }
    }
}

impl ReplyOutput for izwi_audio::Playback {
    fn play(&self, samples: &[f32], sample_rate: u32) -> Result<(), RuntimeError> {
        izwi_audio::Playback::play(self, samples, sample_rate)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))
    }

    fn played_seconds(&self) -> f64 {
        izwi_audio::Playback::played_seconds(self)
    }

    fn is_drained(&self) -> bool {
        izwi_audio::Playback::is_drained(self)
    }

    fn stop(&self) {
        izwi_audio::Playback::stop(self)
    }

    fn check(&self) -> Result<(), RuntimeError> {
        izwi_audio::Playback::check(self).map_err(|e| RuntimeError::InvalidRequest(e.to_string()))
    }

    fn end(&self) -> Result<(), RuntimeError> {
        izwi_audio::Playback::end(self).map_err(|e| RuntimeError::InvalidRequest(e.to_string()))
    }
}

/// How often a turn looks whether its reply has finished playing.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A spoken turn as it went. Times are milliseconds from the end of the user's speech.
#[derive(Debug, Clone)]
pub struct VoiceTurn {
    pub chat_id: i64,
    pub user_text: String,
    /// What the reply said: all of it, or what had begun to play when interrupted.
    pub reply_text: String,
    pub reply_tokens: usize,
    /// Frames of speech the reply's model generated (speech-to-speech; 0 otherwise).
    pub reply_frames: usize,
    /// The reply's audio at `sample_rate` (all that was made, also when interrupted).
    pub reply_audio: Vec<f32>,
    pub sample_rate: u32,
    /// The stored recordings of the user's words and the reply (WAV, in the data folder).
    pub user_audio_path: PathBuf,
    pub reply_audio_path: PathBuf,
    pub metrics: MessageMetrics,
    /// Until the reply's first piece to speak (its first sentence, or its opening
    /// clause) was written out by the model.
    pub first_sentence_ms: Option<f64>,
}

/// One sentence of the reply as it was spoken.
struct SpokenSentence {
    text: String,
    /// Where it starts in the reply's audio.
    start_sample: usize,
}

/// What the speaking half of a turn has done; shared so that an interrupted turn
/// still knows it.
#[derive(Default)]
struct Spoken {
    audio: Vec<f32>,
    sentences: Vec<SpokenSentence>,
    first_audio: Option<Instant>,
}

impl Runtime {
    /// Loads the turn's models ahead of the first turn, so it is not the one that waits.
    pub async fn prepare_voice_chat(&self, setup: &VoiceChatSetup) -> Result<(), RuntimeError> {
        self.inner
            .models
            .whisper(&self.inner.hub.info(&setup.asr)?.id)
            .await?;
        let choice = self.inner.choose_voice(&setup.voice).await?;
        Speaker::load(&self.inner, &choice, None).await?;
        Ok(())
    }

    /// One spoken turn: `speech` (16 kHz mono, the user's words, which ended at
    /// `speech_ended`) is recognised, answered by `model` in `conversation`, and the
    /// answer spoken sentence by sentence to `output`, starting from an output with
    /// nothing queued. None when no words were heard in `speech` (nothing is stored
    /// then). Cancelling `interrupt` is barge-in.
    #[allow(clippy::too_many_arguments)]
    pub async fn voice_turn(
        &self,
        setup: &VoiceChatSetup,
        model: &ChatModel,
        conversation: &mut Conversation,
        params: &ChatParams,
        speech: Vec<f32>,
        speech_ended: Instant,
        output: &dyn ReplyOutput,
        interrupt: &CancellationToken,
        on_event: impl Fn(TurnEvent<'_>) + Sync,
    ) -> Result<Option<VoiceTurn>, RuntimeError> {
        let ms = |at: Instant| at.duration_since(speech_ended).as_secs_f64() * 1e3;
        let inner = &self.inner;
        let asr_id = inner.hub.info(&setup.asr)?.id;
        let whisper = inner.models.whisper(&asr_id).await?;
        let choice = inner.choose_voice(&setup.voice).await?;
        let speaker = Speaker::load(inner, &choice, None).await?;

        let speech = Arc::new(speech);
        let windows = windows(inner, &speech).await?;
        let options = TranscribeOptions {
            language: setup.language.clone(),
            ..TranscribeOptions::default()
        };
        tracing::debug!(ms = ms(Instant::now()), "turn: speech cut into windows");
        let transcript = whisper
            .transcriber
            .transcribe(&speech, &windows, &options, |_| {})
            .await?;
        let user_text = transcript.text().trim().to_string();
        let asr_ms = ms(Instant::now());
        if !user_text.chars().any(char::is_alphanumeric) {
            return Ok(None);
        }
        on_event(TurnEvent::Heard(&user_text));

        let chat_id = self
            .chat_for(model.name(), conversation, &user_text)
            .await?;
        let turn = conversation.messages().len();
        let metrics = MessageMetrics {
            asr_ms: Some(asr_ms),
            ..MessageMetrics::default()
        };
        let user_audio_path = self
            .save_spoken(
                chat_id,
                turn,
                &speech,
                izwi_audio::ASR_SAMPLE_RATE,
                MessageRole::User,
                &user_text,
                Some(&metrics),
            )
            .await?;
        conversation.push(ChatMessage::new("user", user_text.clone()));
        tracing::debug!(
            ms = ms(Instant::now()),
            asr_ms,
            "turn: the user's words stored"
        );

        // The model writes; each sentence it completes goes to the voice at once.
        let (sentence_tx, mut sentence_rx) = mpsc::unbounded_channel::<Sentence>();
        let first_sentence: Mutex<Option<Instant>> = Mutex::new(None);
        let first_text: Mutex<Option<Instant>> = Mutex::new(None);
        let write = async {
            let mut text = String::new();
            let mut sent = Sent::default();
            let send = |sentences: Vec<Sentence>| {
                if let Ok(mut first) = first_sentence.lock() {
                    first.get_or_insert_with(Instant::now);
                }
                for sentence in sentences {
                    let _ = sentence_tx.send(sentence);
                }
            };
            let reply = model
                .reply(conversation.messages(), params, |delta| {
                    if let Ok(mut first) = first_text.lock() {
                        first.get_or_insert_with(Instant::now);
                    }
                    on_event(TurnEvent::ReplyText(delta));
                    text.push_str(delta);
                    let ready = ready_pieces(&text, false, &mut sent);
                    if !ready.is_empty() {
                        send(ready);
                    }
                })
                .await;
            // The last sentence is complete when the reply is.
            let rest = ready_pieces(&text, true, &mut sent);
            if !rest.is_empty() {
                send(rest);
            }
            drop(sentence_tx);
            reply
        };
        let spoken = Mutex::new(Spoken::default());
        let rate = speaker.sample_rate();
        let speak = async {
            let gap = vec![0f32; (SENTENCE_GAP_SECONDS * rate as f32) as usize];
            let mut index = 0u64;
            let mut after_clause = false;
            while let Some(sentence) = sentence_rx.recv().await {
                let text = sentence.text();
                // A sentence's opening clause, spoken early, runs on into the rest of
                // it with the clause's own pause, not a sentence's.
                let lead = if index > 0 && !after_clause {
                    gap.len()
                } else {
                    0
                };
                after_clause = ends_mid_sentence(&sentence);
                let Some(phonemized) = speaker.phonemize(vec![sentence]).await?.pop() else {
                    continue;
                };
                let mut audio = speaker.sentence(phonemized.ids, index).await?;
                audio.splice(0..0, gap[..lead].iter().copied());
                index += 1;
                let start_sample = {
                    let mut spoken = spoken.lock().map_err(poisoned)?;
                    spoken.first_audio.get_or_insert_with(Instant::now);
                    let start = spoken.audio.len() + lead;
                    spoken.audio.extend_from_slice(&audio);
                    start
                };
                spoken
                    .lock()
                    .map_err(poisoned)?
                    .sentences
                    .push(SpokenSentence { text, start_sample });
                if interrupt.is_cancelled() {
                    break;
                }
                output.play(&audio, rate)?;
                on_event(TurnEvent::ReplySpoken(&text_of_last(&spoken)?));
            }
            // The turn is over when the user has heard it all.
            output.end()?;
            while !output.is_drained() {
                output.check()?;
                tokio::time::sleep(DRAIN_POLL).await;
            }
            Ok::<_, RuntimeError>(())
        };
        let (reply, interrupted) = tokio::select! {
            // Either half failing stops the other: no reply written on for a voice
            // that cannot speak it.
            done = async { tokio::try_join!(write, speak) } => (Some(done?.0), false),
            () = interrupt.cancelled() => (None, true),
        };
        let heard_seconds = output.played_seconds();
        if interrupted {
            output.stop();
        }
        let finished = Instant::now();

        let spoken = spoken.into_inner().map_err(poisoned)?;
        let reply_text = match &reply {
            Some(reply) => reply.text.clone(),
            None => {
                let heard = (heard_seconds * f64::from(rate)) as usize;
                let said: Vec<&str> = spoken
                    .sentences
                    .iter()
                    .filter(|s| s.start_sample <= heard)
                    .map(|s| s.text.as_str())
                    .collect();
                said.join(" ")
            }
        };
        let metrics = MessageMetrics {
            asr_ms: Some(asr_ms),
            first_token_ms: first_text.into_inner().ok().flatten().map(ms),
            first_audio_ms: spoken.first_audio.map(ms),
            total_ms: Some(ms(finished)),
            interrupted,
            tokens: reply.as_ref().map(|r| r.tokens as u64),
            frames: None,
        };
        let reply_audio_path = self
            .save_spoken(
                chat_id,
                turn + 1,
                &spoken.audio,
                rate,
                MessageRole::Assistant,
                &reply_text,
                Some(&metrics),
            )
            .await?;
        conversation.push(ChatMessage::new("assistant", reply_text.clone()));
        let first_sentence_ms = first_sentence.into_inner().ok().flatten().map(ms);
        Ok(Some(VoiceTurn {
            chat_id,
            user_text,
            reply_text,
            reply_tokens: reply.as_ref().map_or(0, |r| r.tokens),
            reply_frames: 0,
            reply_audio: spoken.audio,
            sample_rate: rate,
            user_audio_path,
            reply_audio_path,
            metrics,
            first_sentence_ms,
        }))
    }

    /// Saves a spoken message of a voice chat, message `index` of the chat: its audio
    /// (a WAV at `rate`) as `chat-ID/NNN-ROLE.wav` in the audio folder, then the message
    /// naming it. Gives the WAV's path.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn save_spoken(
        &self,
        chat_id: i64,
        index: usize,
        samples: &[f32],
        rate: u32,
        role: MessageRole,
        text: &str,
        metrics: Option<&MessageMetrics>,
    ) -> Result<PathBuf, RuntimeError> {
        let inner = &self.inner;
        let path = inner
            .store
            .audio_dir()
            .join(format!("chat-{chat_id}"))
            .join(format!("{index:03}-{}.wav", role.as_str()));
        let (file, audio) = (path.clone(), samples.to_vec());
        tokio::task::spawn_blocking(move || {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            izwi_audio::write_wav(&file, &audio, rate)
                .map_err(|source| RuntimeError::Audio { path: file, source })
        })
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("saving audio stopped: {e}")))??;
        let relative = inner.store.relative(&path)?;
        inner
            .store
            .add_message(
                chat_id,
                NewMessage {
                    audio_path: Some(&relative),
                    metrics,
                    ..NewMessage::text(role, text)
                },
            )
            .await?;
        Ok(path)
    }
}

/// The reply's opening clause is spoken on its own once it has this many words and the
/// next clause has begun, so the first audio waits for a clause rather than for a long
/// first sentence; later sentences are spoken whole (a clause alone is phrased a little
/// less naturally, worth it only where the wait is felt).
const EARLY_CLAUSE_WORDS: usize = 3;

/// A first sentence that runs on this many words with no clause mark to stop at (a
/// small model can write hundreds) is spoken up to there while the rest is written.
const OPENING_WORDS: usize = 16;

/// What of the reply has gone to the voice: whole sentences, then words of the next.
#[derive(Debug, Default)]
struct Sent {
    sentences: usize,
    words: usize,
}

/// The pieces of `text` ready to be spoken and not sent yet: sentences that are complete
/// (another has begun after them, or the reply is `whole`), and the opening of the first
/// early (see [`opening_piece`]). A sentence is only known to be over when the next
/// begins: its end mark alone could be an abbreviation's or a number's.
fn ready_pieces(text: &str, whole: bool, sent: &mut Sent) -> Vec<Sentence> {
    let mut sentences = split_sentences(&spoken_form(text));
    let open = if whole { None } else { sentences.pop() };
    let mut ready = Vec::new();
    for sentence in sentences.into_iter().skip(sent.sentences) {
        let rest = without_first_words(sentence, sent.words);
        sent.sentences += 1;
        sent.words = 0;
        if !rest.clauses.is_empty() {
            ready.push(rest);
        }
    }
    if let (Some(open), 0, 0) = (open, sent.sentences, sent.words) {
        if let Some(piece) = opening_piece(&open) {
            sent.words = word_count(&piece);
            ready.push(piece);
        }
    }
    ready
}

/// What of the reply's first sentence, still being written, can be spoken already: its
/// first clause once the next has begun and it has [`EARLY_CLAUSE_WORDS`], or, in a
/// sentence running on past [`OPENING_WORDS`], that many words.
fn opening_piece(open: &Sentence) -> Option<Sentence> {
    let first = &open.clauses[0];
    if open.clauses.len() > 1 && first.text.split_whitespace().count() >= EARLY_CLAUSE_WORDS {
        return Some(Sentence {
            clauses: vec![first.clone()],
        });
    }
    // The last word may still be growing: only words with another after them count.
    (word_count(open) > OPENING_WORDS).then(|| first_words(open, OPENING_WORDS))
}

fn word_count(sentence: &Sentence) -> usize {
    sentence
        .clauses
        .iter()
        .map(|c| c.text.split_whitespace().count())
        .sum()
}

/// The first `n` words of `sentence`, a clause cut short left without its mark.
fn first_words(sentence: &Sentence, mut n: usize) -> Sentence {
    let mut clauses = Vec::new();
    for clause in &sentence.clauses {
        let words: Vec<&str> = clause.text.split_whitespace().collect();
        if n == 0 {
            break;
        }
        if words.len() <= n {
            clauses.push(clause.clone());
            n -= words.len();
        } else {
            clauses.push(Clause {
                text: words[..n].join(" "),
                terminator: None,
            });
            n = 0;
        }
    }
    Sentence { clauses }
}

/// `sentence` without its first `n` words (those already spoken).
fn without_first_words(sentence: Sentence, mut n: usize) -> Sentence {
    let mut clauses = Vec::new();
    for clause in sentence.clauses {
        let words: Vec<&str> = clause.text.split_whitespace().collect();
        if words.len() <= n {
            n -= words.len();
            continue;
        }
        let text = words[n..].join(" ");
        n = 0;
        clauses.push(Clause { text, ..clause });
    }
    Sentence { clauses }
}

/// Whether `piece` ends at a clause mark (`,` `;` `:`), the rest of its sentence to come.
fn ends_mid_sentence(piece: &Sentence) -> bool {
    matches!(
        piece.clauses.last().and_then(|c| c.terminator),
        Some(',' | ';' | ':')
    )
}

/// The reply as a voice should read it: chat models write Markdown, whose marks a
/// voice would otherwise read out or stumble on.
fn spoken_form(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '*' | '#' | '`' | '_'))
        .collect()
}

fn text_of_last(spoken: &Mutex<Spoken>) -> Result<String, RuntimeError> {
    let spoken = spoken.lock().map_err(poisoned)?;
    Ok(spoken
        .sentences
        .last()
        .map(|s| s.text.clone())
        .unwrap_or_default())
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> RuntimeError {
    RuntimeError::InvalidRequest("a spoken turn's state was left half-written".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pieces: &[Sentence]) -> Vec<String> {
        pieces.iter().map(Sentence::text).collect()
    }

    #[test]
    fn sentences_are_sent_once_when_the_next_begins() {
        let mut sent = Sent::default();
        let mut ready = |text: &str| texts(&ready_pieces(text, false, &mut sent));
        assert!(ready("The capital is Paris").is_empty());
        assert!(ready("The capital is Paris.").is_empty());
        assert_eq!(
            ready("The capital is Paris. It is"),
            ["The capital is Paris."]
        );
        // Only the reply's opening clause is spoken early.
        assert!(ready("The capital is Paris. It is big, old and").is_empty());
        // An abbreviation's period does not end the sentence.
        let second = ready("The capital is Paris. It is big, old and e.g. bigger than Lyon. So");
        assert_eq!(second, ["It is big, old and e.g. bigger than Lyon."]);
        assert_eq!((sent.sentences, sent.words), (2, 0));
        let last = texts(&ready_pieces(
            "It is. So there.",
            true,
            &mut Sent {
                sentences: 1,
                words: 0,
            },
        ));
        assert_eq!(last, ["So there."]);
    }

    #[test]
    fn a_long_opening_clause_is_spoken_before_its_sentence_ends() {
        let mut sent = Sent::default();
        let mut ready = |text: &str| texts(&ready_pieces(text, false, &mut sent));
        // Too short alone, and a clause is done only when the next begins.
        assert!(ready("Yes, it").is_empty());
        let mut sent = Sent::default();
        let mut ready = |text: &str| texts(&ready_pieces(text, false, &mut sent));
        assert!(ready("The capital of France is Paris,").is_empty());
        assert_eq!(
            ready("The capital of France is Paris, a"),
            ["The capital of France is Paris,"]
        );
        assert!(ready("The capital of France is Paris, a city of art").is_empty());
        // The rest of the sentence follows once it is over; the clause is not said twice.
        assert_eq!(
            ready("The capital of France is Paris, a city of art. It"),
            ["a city of art."]
        );
        let mut sent = Sent::default();
        let whole = ready_pieces("The capital of France is Paris, a city.", true, &mut sent);
        assert_eq!(texts(&whole), ["The capital of France is Paris, a city."]);
        assert!(ends_mid_sentence(
            &ready_pieces("One two three, four", false, &mut Sent::default())[0]
        ));
        assert!(!ends_mid_sentence(&whole[0]));
    }

    #[test]
    fn a_first_sentence_that_runs_on_is_spoken_in_parts() {
        let mut sent = Sent::default();
        let mut ready = |text: &str| texts(&ready_pieces(text, false, &mut sent));
        let words = |n: usize| vec!["side of the"; n].join(" ");
        // Sixteen words and one still being written: not yet.
        let text = format!("Yes, the opposite {} of", words(4));
        assert!(ready(&text).is_empty(), "{text}");
        let text = format!("Yes, the opposite {} of the", words(4));
        assert_eq!(ready(&text), [format!("Yes, the opposite {} of", words(4))]);
        // Then the rest of that sentence once it ends, without the words said.
        let text = format!("Yes, the opposite {} of the end. And", words(4));
        assert_eq!(ready(&text), ["the end."]);
    }

    #[test]
    fn markdown_marks_are_not_read_out() {
        assert_eq!(spoken_form("**Paris** is `the` #1"), "Paris is the 1");
    }
}
