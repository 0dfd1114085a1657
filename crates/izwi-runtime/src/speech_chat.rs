//! Speech-to-speech voice chat: one LFM2-Audio model hears the user's speech and
//! answers with text and speech interleaved, in place of Whisper → chat model → voice.
//!
//! The model's prompt is the conversation as it heard and said it: the system message
//! [`CHAT_PROMPT`], each earlier user turn as its recording, each earlier reply as the
//! tokens and frames the model generated. A conversation reopened from the store has
//! no frames: its replies go back in as their text, its user turns as their stored
//! recordings.
//!
//! The turn's clock starts at the end of the user's speech. The reply's audio plays as
//! it is decoded; the turn lasts until it has played. Barge-in: cancelling the turn's
//! token drops the reply, which aborts it on the engine; the history keeps the reply's
//! text that had begun to be heard (each piece of text is written just before the
//! audio that says it) and all the audio that was made.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use izwi_core::models::lfm2_audio::{
    AudioSampling, Lfm2Audio, Message, Part, ReplyPiece, CHAT_PROMPT,
};
use izwi_core::text::ChatMessage;
use izwi_hub::Family;
use izwi_store::{MessageMetrics, MessageRole};
use tokio_util::sync::CancellationToken;

use crate::chat::Conversation;
use crate::voice_chat::{ReplyOutput, TurnEvent, VoiceTurn};
use crate::{Runtime, RuntimeError};

/// The title of a stored speech-to-speech chat: no words of the user's are written
/// down to name it by.
const CHAT_TITLE: &str = "Speech-to-speech chat";

/// How often a turn looks whether its reply has finished playing.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// An LFM2-Audio model that can speak, ready for speech-to-speech turns.
#[derive(Clone)]
pub struct SpeechChat {
    id: String,
    model: Arc<Lfm2Audio>,
    /// How the reply's frames are sampled (its text is greedy).
    pub sampling: AudioSampling,
    /// The most steps (text tokens and frames) one reply takes.
    pub max_steps: usize,
}

impl SpeechChat {
    /// The model's id, recorded on its chats.
    pub fn name(&self) -> &str {
        &self.id
    }

    pub fn sample_rate(&self) -> u32 {
        self.model.output_sample_rate()
    }
}

/// A reply's text piece and how much of the reply's audio came before it.
struct Written {
    after_sample: usize,
    text: String,
}

/// What a reply has made so far; shared so that an interrupted turn still knows it.
#[derive(Default)]
struct Made {
    audio: Vec<f32>,
    written: Vec<Written>,
    first_text: Option<Instant>,
    first_audio: Option<Instant>,
    failed: Option<RuntimeError>,
}

impl Runtime {
    /// Loads LFM2-Audio model `id` for speech-to-speech chat; refuses a model of
    /// another family and an LFM2-Audio folder that cannot speak.
    pub async fn open_speech_chat(&self, id: &str) -> Result<SpeechChat, RuntimeError> {
        let info = self.model(id)?;
        if info.family != Family::Lfm2Audio {
            return Err(RuntimeError::WrongModel {
                id: id.to_string(),
                family: format!("{:?}", info.family).to_lowercase(),
                task: "chat speech to speech (that takes an LFM2-Audio model)",
            });
        }
        let model = self.inner.models.lfm2_audio(&info.id).await?;
        if !model.can_speak() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{id} cannot speak (its folder has neither Mimi's weights nor an \
                 audio_detokenizer/ folder), so it cannot chat speech to speech"
            )));
        }
        Ok(SpeechChat {
            id: info.id,
            model,
            sampling: AudioSampling::chat(),
            max_steps: 1024,
        })
    }

    /// One speech-to-speech turn: `speech` (16 kHz mono, the user's words, which ended
    /// at `speech_ended`) is answered by `chat` after `conversation`, the reply's text
    /// streamed to `on_event` and its audio to `output` as it is decoded. Cancelling
    /// `interrupt` is barge-in.
    #[allow(clippy::too_many_arguments)]
    pub async fn speech_turn(
        &self,
        chat: &SpeechChat,
        conversation: &mut Conversation,
        speech: Vec<f32>,
        speech_ended: Instant,
        output: &dyn ReplyOutput,
        interrupt: &CancellationToken,
        on_event: impl Fn(TurnEvent<'_>) + Sync,
    ) -> Result<VoiceTurn, RuntimeError> {
        let ms = |at: Instant| at.duration_since(speech_ended).as_secs_f64() * 1e3;
        if speech.is_empty() {
            return Err(RuntimeError::InvalidRequest("no speech to answer".into()));
        }
        let mut history = self.spoken_history(conversation).await?;

        let chat_id = self.chat_for(&chat.id, conversation, CHAT_TITLE).await?;
        let turn = conversation.messages().len();
        let user_audio_path = self
            .save_spoken(
                chat_id,
                turn,
                &speech,
                izwi_audio::ASR_SAMPLE_RATE,
                MessageRole::User,
                "",
                None,
            )
            .await?;
        let speech: Arc<[f32]> = speech.into();
        history.push(Message {
            role: "user".into(),
            parts: vec![Part::Audio(speech)],
        });
        conversation.push(ChatMessage::new("user", ""));
        conversation.set_spoken(history.clone());

        let rate = chat.sample_rate();
        let made = Mutex::new(Made::default());
        // A speaker that fails stops the reply: nobody would hear the rest.
        let playback_failed = CancellationToken::new();
        let answer = async {
            let reply = chat
                .model
                .reply(&history, &chat.sampling, chat.max_steps, |piece| {
                    let Ok(mut made) = made.lock() else { return };
                    match piece {
                        ReplyPiece::Text(text) => {
                            made.first_text.get_or_insert_with(Instant::now);
                            on_event(TurnEvent::ReplyText(&text));
                            let after_sample = made.audio.len();
                            made.written.push(Written { after_sample, text });
                        }
                        ReplyPiece::Audio(audio) => {
                            made.first_audio.get_or_insert_with(Instant::now);
                            if made.failed.is_none() && !interrupt.is_cancelled() {
                                if let Err(e) = output.play(&audio, rate) {
                                    made.failed = Some(e);
                                    playback_failed.cancel();
                                }
                            }
                            made.audio.extend(audio);
                        }
                    }
                });
            let reply = tokio::select! {
                reply = reply => Some(reply.map_err(|e| RuntimeError::Speech(e.to_string()))?),
                () = playback_failed.cancelled() => None,
            };
            if let Some(failed) = made.lock().map_err(poisoned)?.failed.take() {
                return Err(failed);
            }
            let reply = reply.ok_or_else(|| RuntimeError::Speech("the speaker failed".into()))?;
            // The turn is over when the user has heard it all.
            output.end()?;
            while !output.is_drained() {
                output.check()?;
                tokio::time::sleep(DRAIN_POLL).await;
            }
            Ok(reply)
        };
        let (reply, interrupted) = tokio::select! {
            reply = answer => (Some(reply?), false),
            () = interrupt.cancelled() => (None, true),
        };
        let heard_seconds = output.played_seconds();
        if interrupted {
            output.stop();
        }
        let finished = Instant::now();

        let made = made.into_inner().map_err(poisoned)?;
        let (reply_text, parts) = match reply.as_ref() {
            Some(reply) => (reply.text.clone(), reply.parts.clone()),
            None => {
                let heard = (heard_seconds * f64::from(rate)) as usize;
                let said: String = made
                    .written
                    .iter()
                    .filter(|w| w.after_sample < heard)
                    .map(|w| w.text.as_str())
                    .collect();
                let said = said.trim().to_string();
                (said.clone(), vec![Part::Text(said)])
            }
        };
        let reply_tokens = reply.as_ref().map_or(0, |r| {
            r.parts
                .iter()
                .map(|p| match p {
                    Part::Tokens(t) => t.len(),
                    _ => 0,
                })
                .sum()
        });
        let reply_frames = reply.as_ref().map_or(0, |r| r.frames);
        let metrics = MessageMetrics {
            first_token_ms: made.first_text.map(ms),
            first_audio_ms: made.first_audio.map(ms),
            total_ms: Some(ms(finished)),
            interrupted,
            tokens: reply.as_ref().map(|_| reply_tokens as u64),
            frames: reply.as_ref().map(|_| reply_frames as u64),
            ..MessageMetrics::default()
        };
        let reply_audio_path = self
            .save_spoken(
                chat_id,
                turn + 1,
                &made.audio,
                rate,
                MessageRole::Assistant,
                &reply_text,
                Some(&metrics),
            )
            .await?;
        history.push(Message {
            role: "assistant".into(),
            parts,
        });
        conversation.push(ChatMessage::new("assistant", reply_text.clone()));
        conversation.set_spoken(history);
        Ok(VoiceTurn {
            chat_id,
            user_text: String::new(),
            reply_text,
            reply_tokens,
            reply_frames,
            reply_audio: made.audio,
            sample_rate: rate,
            user_audio_path,
            reply_audio_path,
            metrics,
            first_sentence_ms: None,
        })
    }

    /// The conversation as LFM2-Audio's prompt: kept from this session's turns, or
    /// rebuilt from the store (recordings read back, replies as their text) when the
    /// conversation has had turns of another kind or was reopened.
    async fn spoken_history(
        &self,
        conversation: &Conversation,
    ) -> Result<Vec<Message>, RuntimeError> {
        if let Some(spoken) = conversation.spoken() {
            return Ok(spoken.to_vec());
        }
        let system = Message {
            role: "system".into(),
            parts: vec![Part::Text(CHAT_PROMPT.into())],
        };
        let Some(chat_id) = conversation.chat_id() else {
            return Ok(vec![system]);
        };
        let mut history = vec![system];
        for stored in self.inner.store.messages(chat_id).await? {
            let part = match (stored.role, &stored.audio_path) {
                (MessageRole::System, _) => continue,
                (MessageRole::User, Some(path)) => {
                    let path = self.data_dir().join(path);
                    let samples =
                        tokio::task::spawn_blocking(move || izwi_audio::load_for_asr(&path))
                            .await
                            .map_err(|e| {
                                RuntimeError::InvalidRequest(format!("reading a recording: {e}"))
                            })?
                            .map_err(|e| {
                                RuntimeError::InvalidRequest(format!(
                                    "chat {chat_id}'s recording cannot be read back: {e}"
                                ))
                            })?;
                    Part::Audio(samples.into())
                }
                _ => Part::Text(stored.content.clone()),
            };
            history.push(Message {
                role: stored.role.as_str().into(),
                parts: vec![part],
            });
        }
        Ok(history)
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> RuntimeError {
    RuntimeError::InvalidRequest("a spoken turn's state was left half-written".into())
}
