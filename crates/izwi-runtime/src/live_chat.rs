//! Voice chat from a microphone: the voice activity detector hears when the user starts
//! and stops talking; each stretch of speech ended by a pause becomes a spoken turn
//! ([`Runtime::voice_turn`]) whose reply plays on a speaker. While the reply is being
//! written or played the microphone keeps listening: speech over it for
//! [`LiveChatOptions::barge_in_ms`] interrupts it (barge-in), and what the user says then
//! is the next turn.
//!
//! A turn's clock starts where the detector placed the end of speech, so its first-audio
//! time includes the pause the detector waits for ([`LiveChatOptions::end_silence_ms`]).

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use izwi_audio::{Microphone, Playback, ASR_SAMPLE_RATE};
use izwi_core::models::vad::{VadEvent, VadOptions, VadStream};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatModel, ChatParams, Conversation};
use crate::speech_chat::SpeechChat;
use crate::voice_chat::{TurnEvent, VoiceChatSetup, VoiceTurn};
use crate::{Runtime, RuntimeError};

/// What answers a spoken conversation.
#[derive(Clone, Copy)]
pub enum VoiceChat<'a> {
    /// Whisper hears the user, a chat model writes the reply, a voice speaks it.
    Cascade {
        setup: &'a VoiceChatSetup,
        model: &'a ChatModel,
        params: &'a ChatParams,
    },
    /// One LFM2-Audio model hears the user and answers aloud.
    SpeechToSpeech(&'a SpeechChat),
}

#[derive(Debug, Clone)]
pub struct LiveChatOptions {
    /// The pause that ends what the user says.
    pub end_silence_ms: u32,
    /// Speech over the reply this long interrupts it; None lets the reply finish
    /// (for speakers the microphone hears: the reply would interrupt itself).
    pub barge_in_ms: Option<u32>,
    /// Stop after this many turns (None: until stopped).
    pub max_turns: Option<usize>,
    /// Push-to-talk: the user speaks while this holds `true`, and letting go ends the
    /// turn at once (no pause to wait for); pressing while a reply plays interrupts it.
    /// None: hands-free, the voice activity detector decides.
    pub talk: Option<watch::Receiver<bool>>,
}

impl Default for LiveChatOptions {
    fn default() -> Self {
        Self {
            end_silence_ms: 500,
            barge_in_ms: Some(300),
            max_turns: None,
            talk: None,
        }
    }
}

/// What a live chat has to show, as it happens.
#[derive(Debug)]
pub enum LiveEvent<'a> {
    /// The user began to speak.
    SpeechStarted,
    /// The user stopped; a turn begins.
    SpeechEnded,
    /// The user spoke over the reply, which stopped.
    BargeIn,
    Turn(TurnEvent<'a>),
    /// A turn is over (its reply played, or interrupted).
    TurnDone(&'a VoiceTurn),
    /// What the user said held no words: no turn was taken.
    NothingHeard,
    /// How loud the microphone was over the last [`LEVEL_SECONDS`]: the root mean
    /// square of its samples (0 silence, 1 full scale), for a level meter.
    Level(f32),
}

/// How often [`LiveEvent::Level`] comes.
pub const LEVEL_SECONDS: f64 = 0.1;

/// Audio kept before speech starts: the detector fires a little after the first sound
/// (and a key is pressed a little after the user starts).
const PRE_ROLL_SECONDS: f64 = 0.3;
/// Push-to-talk shorter than this is taken for a slip of the finger, not a turn.
const MIN_TALK_SECONDS: f64 = 0.25;
/// How long the microphone reader waits for audio before looking whether to stop.
const MIC_POLL: Duration = Duration::from_millis(50);

type TurnFuture<'a> =
    Pin<Box<dyn Future<Output = (Conversation, Result<Option<VoiceTurn>, RuntimeError>)> + 'a>>;

impl Runtime {
    /// Talks with the user through `microphone` and `playback` until `stop` is
    /// cancelled (or `options.max_turns` turns are done); returns the conversation.
    #[allow(clippy::too_many_arguments)]
    pub async fn live_chat(
        &self,
        chat: VoiceChat<'_>,
        mut conversation: Conversation,
        microphone: Microphone,
        playback: &Playback,
        options: &LiveChatOptions,
        stop: &CancellationToken,
        on_event: impl Fn(LiveEvent<'_>) + Sync,
    ) -> Result<Conversation, RuntimeError> {
        // Read from the start: the device's blocks wait in this channel while the models
        // load, not in the device's own bounded queue.
        let mut audio = read_microphone(microphone, stop.clone());
        let vad = self.inner.vad.get(self.data_dir()).await.ok_or_else(|| {
            RuntimeError::InvalidRequest(
                "voice chat needs the voice activity detector: install it with \
                 `izwi models vad silero_vad_16k_op15.onnx`"
                    .into(),
            )
        })?;
        if let VoiceChat::Cascade { setup, .. } = chat {
            self.prepare_voice_chat(setup).await?;
        }
        let mut detector = VadStream::new(
            &vad,
            VadOptions {
                min_silence_ms: options.end_silence_ms,
                speech_pad_ms: 200,
                max_speech_seconds: 29.0,
                ..VadOptions::default()
            },
        );
        let rate = ASR_SAMPLE_RATE as usize;
        // Samples since `buffer_start` (a position in the whole stream).
        let (mut buffer, mut buffer_start, mut heard) = (Vec::<f32>::new(), 0usize, 0usize);
        let mut waiting: Vec<(Vec<f32>, Instant)> = Vec::new();
        let mut turn: Option<(TurnFuture<'_>, CancellationToken)> = None;
        let mut barge_from: Option<usize> = None;
        // The sum of squares and count of the samples since the last level event.
        let mut level = (0.0f64, 0usize);
        let mut talk = options.talk.clone();
        // Where the key went down, while it is held.
        let mut talking_from: Option<usize> = None;
        // Where the last stretch of speech the detector ended was taken up to.
        let mut taken_until = 0usize;
        let mut turns = 0;
        let on_event = &on_event;
        loop {
            if turn.is_none() && !waiting.is_empty() {
                let (speech, ended) = waiting.remove(0);
                let token = CancellationToken::new();
                let cancel = token.clone();
                let mut taken = std::mem::replace(&mut conversation, Conversation::new(""));
                playback.stop();
                let future: TurnFuture<'_> = Box::pin(async move {
                    let on_turn = |event: TurnEvent<'_>| on_event(LiveEvent::Turn(event));
                    let result = match chat {
                        VoiceChat::Cascade {
                            setup,
                            model,
                            params,
                        } => {
                            self.voice_turn(
                                setup, model, &mut taken, params, speech, ended, playback, &cancel,
                                on_turn,
                            )
                            .await
                        }
                        VoiceChat::SpeechToSpeech(speech_chat) => self
                            .speech_turn(
                                speech_chat,
                                &mut taken,
                                speech,
                                ended,
                                playback,
                                &cancel,
                                on_turn,
                            )
                            .await
                            .map(Some),
                    };
                    (taken, result)
                });
                turn = Some((future, token));
            }
            tokio::select! {
                () = stop.cancelled() => break,
                changed = async { talk.as_mut().expect("push-to-talk").changed().await },
                    if talk.is_some() =>
                {
                    let Some(receiver) = talk.as_mut() else { break };
                    if changed.is_err() {
                        // Whoever held the key is gone: nobody can talk any more.
                        break;
                    }
                    let down = *receiver.borrow_and_update();
                    match (down, talking_from) {
                        (true, None) => {
                            on_event(LiveEvent::SpeechStarted);
                            // The turn stops its playback once it has read how much
                            // of the reply was heard (stopping resets that count).
                            if let Some((_, token)) = turn.as_ref() {
                                if !token.is_cancelled() {
                                    token.cancel();
                                    on_event(LiveEvent::BargeIn);
                                }
                            }
                            let pre_roll = (PRE_ROLL_SECONDS * rate as f64) as usize;
                            talking_from = Some(heard.saturating_sub(pre_roll).max(buffer_start));
                        }
                        (false, Some(from)) => {
                            on_event(LiveEvent::SpeechEnded);
                            talking_from = None;
                            let said = buffer[from - buffer_start..].to_vec();
                            if said.len() as f64 >= MIN_TALK_SECONDS * rate as f64 {
                                waiting.push((said, Instant::now()));
                            }
                        }
                        _ => {}
                    }
                }
                (back, result) = async { turn.as_mut().expect("a turn").0.as_mut().await },
                    if turn.is_some() =>
                {
                    turn = None;
                    barge_from = None;
                    conversation = back;
                    match result? {
                        Some(done) => {
                            on_event(LiveEvent::TurnDone(&done));
                            turns += 1;
                            if options.max_turns.is_some_and(|max| turns >= max) {
                                break;
                            }
                        }
                        None => on_event(LiveEvent::NothingHeard),
                    }
                }
                chunk = audio.recv() => {
                    let chunk = chunk.ok_or_else(|| {
                        RuntimeError::InvalidRequest("the microphone stopped".into())
                    })??;
                    heard += chunk.len();
                    buffer.extend_from_slice(&chunk);
                    level.0 += chunk.iter().map(|x| f64::from(x * x)).sum::<f64>();
                    level.1 += chunk.len();
                    if level.1 as f64 >= LEVEL_SECONDS * rate as f64 {
                        on_event(LiveEvent::Level((level.0 / level.1 as f64).sqrt() as f32));
                        level = (0.0, 0);
                    }
                    // With push-to-talk the key, not the detector, says who speaks.
                    let events = if talk.is_some() {
                        Vec::new()
                    } else {
                        detector
                            .push(&chunk)
                            .map_err(|e| RuntimeError::InvalidRequest(format!("voice activity detection failed: {e}")))?
                    };
                    for event in events {
                        match event {
                            VadEvent::SpeechStart { at } => {
                                on_event(LiveEvent::SpeechStarted);
                                let replying = turn.is_some() || !playback.is_drained();
                                if replying && options.barge_in_ms.is_some() {
                                    barge_from = Some(at);
                                }
                            }
                            VadEvent::SpeechEnd { speech } => {
                                on_event(LiveEvent::SpeechEnded);
                                let pad = rate / 5;
                                let from = speech.start.saturating_sub(pad).max(buffer_start);
                                let to = (speech.end + pad).min(heard);
                                let said = buffer[from - buffer_start..to - buffer_start].to_vec();
                                taken_until = speech.end;
                                let ago = (heard - speech.end) as f64 / rate as f64;
                                let ended = Instant::now() - Duration::from_secs_f64(ago);
                                waiting.push((said, ended));
                                barge_from = None;
                            }
                        }
                    }
                    if let (Some(from), Some(ms), Some((_, token))) =
                        (barge_from, options.barge_in_ms, turn.as_ref())
                    {
                        let long_enough = heard - from >= rate * ms as usize / 1000;
                        if long_enough && detector.in_speech() && !token.is_cancelled() {
                            // The turn stops its playback (see above).
                            token.cancel();
                            on_event(LiveEvent::BargeIn);
                        }
                    }
                    // Keep only what speech may still need: the last moments, or in speech
                    // what came after the last stretch taken (the detector ends one at
                    // its longest and goes on, so speech without a pause is not all kept).
                    if talking_from.is_none() {
                        let keep = (PRE_ROLL_SECONDS * rate as f64) as usize + rate / 5;
                        let needed = if detector.in_speech() { taken_until } else { heard };
                        let keep_from = needed.saturating_sub(keep).max(buffer_start);
                        let drop = (keep_from - buffer_start).min(buffer.len());
                        buffer.drain(..drop);
                        buffer_start += drop;
                    }
                }
            }
        }
        drop(turn);
        playback.stop();
        Ok(conversation)
    }
}

/// Reads the microphone on a blocking thread into a channel, until the channel's
/// receiver is dropped, `stop` is cancelled or the device fails (sent last).
pub(crate) fn read_microphone(
    mut microphone: Microphone,
    stop: CancellationToken,
) -> mpsc::UnboundedReceiver<Result<Vec<f32>, RuntimeError>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::task::spawn_blocking(move || {
        while !stop.is_cancelled() && !tx.is_closed() {
            match microphone.recv(MIC_POLL) {
                Ok(chunk) if chunk.is_empty() => {}
                Ok(chunk) => {
                    if tx.send(Ok(chunk)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(RuntimeError::InvalidRequest(e.to_string())));
                    return;
                }
            }
        }
    });
    rx
}
