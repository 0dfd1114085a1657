//! Speech-to-speech voice chat on the tiny random-weight LFM2-Audio checkpoint (its
//! words are noise: the tests check structure and determinism): turns are kept in the
//! chat history with both recordings and their metrics; a later turn's prompt holds the
//! earlier ones (greedy, it is what the model answers given that whole history);
//! barge-in stops a reply and the next turn goes on; what cannot chat is refused.

mod common;

use std::sync::Mutex;
use std::time::Instant;

use common::{config, open_recording};
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::lfm2_audio::mimi::MIMI_FILE;
use izwi_core::models::lfm2_audio::{
    AudioSampling, Lfm2Audio, Message, Part, ReplyPiece, SpokenTurn, CHAT_PROMPT,
};
use izwi_runtime::{
    load_for_asr, CancellationToken, Conversation, MessageRole, NoPlayback, ReplyOutput, Runtime,
    RuntimeError, SpeechChat, TurnEvent,
};
use izwi_test_support::asset;
use izwi_test_support::fixtures::{lfm2_audio_reference_speech, lfm2_audio_tiny};

const STEPS: usize = 24;

async fn turn(
    runtime: &Runtime,
    chat: &SpeechChat,
    conversation: &mut Conversation,
    speech: &[f32],
    output: &dyn ReplyOutput,
    interrupt: &CancellationToken,
) -> (izwi_runtime::VoiceTurn, String) {
    let text = Mutex::new(String::new());
    let turn = runtime
        .speech_turn(
            chat,
            conversation,
            speech.to_vec(),
            Instant::now(),
            output,
            interrupt,
            |event| {
                if let TurnEvent::ReplyText(delta) = event {
                    text.lock().unwrap().push_str(delta);
                }
            },
        )
        .await
        .expect("the turn runs");
    (turn, text.into_inner().unwrap())
}

/// The model's own greedy reply after `messages`: its turn and its audio.
async fn direct(model: &Lfm2Audio, messages: &[Message]) -> (SpokenTurn, Vec<f32>) {
    let mut audio = Vec::new();
    let turn = model
        .reply(messages, &AudioSampling::greedy(), STEPS, |piece| {
            if let ReplyPiece::Audio(a) = piece {
                audio.extend(a);
            }
        })
        .await
        .expect("the direct reply runs");
    (turn, audio)
}

fn message(role: &str, parts: Vec<Part>) -> Message {
    Message {
        role: role.into(),
        parts,
    }
}

/// A speaker that the user talks over as soon as the reply's first audio plays.
struct TalkedOver {
    played: Mutex<usize>,
    interrupt: CancellationToken,
}

impl ReplyOutput for TalkedOver {
    fn play(&self, samples: &[f32], _: u32) -> Result<(), RuntimeError> {
        *self.played.lock().unwrap() += samples.len();
        self.interrupt.cancel();
        Ok(())
    }

    fn played_seconds(&self) -> f64 {
        *self.played.lock().unwrap() as f64 / 24_000.0
    }

    fn is_drained(&self) -> bool {
        false
    }

    fn stop(&self) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_are_kept_heard_again_and_cut_off_by_barge_in() {
    let dir = tempfile::tempdir().unwrap();
    let wav = lfm2_audio_reference_speech(&dir.path().join("speech.wav"));
    let speech = load_for_asr(&wav).unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    let model = runtime
        .import_model(&lfm2_audio_tiny(), Some("lfm2-audio"))
        .unwrap();
    let mut chat = runtime.open_speech_chat(&model.id).await.unwrap();
    chat.sampling = AudioSampling::greedy();
    chat.max_steps = STEPS;

    let mut conversation = Conversation::new(CHAT_PROMPT);
    let never = CancellationToken::new();
    let output = NoPlayback::default();
    let (first, first_text) =
        turn(&runtime, &chat, &mut conversation, &speech, &output, &never).await;
    let (second, second_text) =
        turn(&runtime, &chat, &mut conversation, &speech, &output, &never).await;
    assert_eq!(first.chat_id, second.chat_id, "one chat");
    for (turn, text) in [(&first, &first_text), (&second, &second_text)] {
        assert!(turn.reply_frames > 0, "the reply spoke");
        assert_eq!(turn.reply_audio.len(), turn.reply_frames * 1920);
        assert_eq!(
            turn.reply_text,
            text.trim(),
            "the streamed text is the reply's"
        );
        assert!(!turn.metrics.interrupted);
        assert!(turn.metrics.first_audio_ms.is_some());
        assert_eq!(turn.metrics.frames, Some(turn.reply_frames as u64));
        assert_eq!(turn.metrics.tokens, Some(turn.reply_tokens as u64));
        assert_eq!(turn.sample_rate, 24_000);
        let saved = load_for_asr(&turn.user_audio_path).unwrap();
        assert_eq!(saved.len(), speech.len(), "the user's recording is kept");
        assert!(
            turn.reply_audio_path.is_file(),
            "the reply's recording is kept"
        );
    }
    if !first_text.is_empty() {
        assert!(first.metrics.first_token_ms.is_some());
    }

    // The same speech, answered greedily by the model itself: the first turn is the
    // model's reply to it alone, the second its reply with the first turn before it.
    let own = Lfm2Audio::from_dir(
        &lfm2_audio_tiny(),
        &izwi_core::Device::Cpu,
        EngineCoreConfig::default(),
    )
    .unwrap();
    let heard = || Part::Audio(speech.clone().into());
    let mut messages = vec![
        message("system", vec![Part::Text(CHAT_PROMPT.into())]),
        message("user", vec![heard()]),
    ];
    let (direct_first, audio) = direct(&own, &messages).await;
    assert_eq!(direct_first.text, first.reply_text);
    assert_eq!(audio, first.reply_audio);
    messages.push(message("assistant", direct_first.parts.clone()));
    messages.push(message("user", vec![heard()]));
    let (direct_second, audio) = direct(&own, &messages).await;
    assert_eq!(direct_second.text, second.reply_text);
    assert_eq!(audio, second.reply_audio, "the second turn heard the first");
    let (alone, _) = direct(&own, &messages[..2]).await;
    assert_ne!(
        (alone.text, alone.frames),
        (direct_second.text.clone(), direct_second.frames),
        "with random weights, the history still changes the answer"
    );

    // Barge-in as the reply's first audio plays: it stops and keeps the text written
    // before that audio.
    let interrupt = CancellationToken::new();
    let talked_over = TalkedOver {
        played: Mutex::new(0),
        interrupt: interrupt.clone(),
    };
    chat.max_steps = 400;
    let written_before_audio = Mutex::new((String::new(), false));
    let cut = runtime
        .speech_turn(
            &chat,
            &mut conversation,
            speech.clone(),
            Instant::now(),
            &talked_over,
            &interrupt,
            |event| {
                if let TurnEvent::ReplyText(delta) = event {
                    let mut written = written_before_audio.lock().unwrap();
                    if !interrupt.is_cancelled() {
                        written.0.push_str(delta);
                    }
                }
            },
        )
        .await
        .expect("the interrupted turn is kept");
    assert!(cut.metrics.interrupted);
    assert_eq!(cut.metrics.frames, None, "no whole reply to count");
    assert_eq!(
        cut.reply_text,
        written_before_audio.into_inner().unwrap().0.trim()
    );
    chat.max_steps = STEPS;
    let (after, _) = turn(&runtime, &chat, &mut conversation, &speech, &output, &never).await;
    assert!(!after.metrics.interrupted);
    assert!(after.reply_frames > 0, "the next turn runs");

    let stored = runtime.chat_messages(first.chat_id).await.unwrap();
    let roles: Vec<MessageRole> = stored.iter().map(|m| m.role).collect();
    use MessageRole::{Assistant, System, User};
    assert_eq!(
        roles,
        [System, User, Assistant, User, Assistant, User, Assistant, User, Assistant]
    );
    assert_eq!(stored[0].content, CHAT_PROMPT);
    for m in &stored[1..] {
        assert!(m.audio_path.is_some(), "{:?} has its recording", m.role);
    }
    assert_eq!(stored[2].content, first.reply_text);
    assert_eq!(stored[4].content, second.reply_text);
    let metrics = stored[4].metrics.as_ref().expect("the reply's metrics");
    assert_eq!(metrics.frames, Some(second.reply_frames as u64));
    assert!(stored[6].metrics.as_ref().unwrap().interrupted);

    // Reopened, the chat goes on from its recordings and its replies' text.
    let mut reopened = runtime
        .open_conversation(Some(first.chat_id), CHAT_PROMPT)
        .await
        .unwrap();
    let (again, _) = turn(&runtime, &chat, &mut reopened, &speech, &output, &never).await;
    assert_eq!(again.chat_id, first.chat_id);
    assert!(again.reply_frames > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_chat_speech_to_speech_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    // Imports refuse a folder that cannot speak; one whose codec went missing since
    // is refused when it is opened.
    let mute = runtime
        .import_model(&lfm2_audio_tiny(), Some("mute"))
        .unwrap();
    let folder = runtime.model(&mute.id).unwrap().path.unwrap();
    std::fs::remove_file(folder.join(MIMI_FILE)).unwrap();
    let error = runtime.open_speech_chat(&mute.id).await.err().unwrap();
    assert!(error.to_string().contains("cannot speak"), "{error}");
    let whisper = runtime
        .import_model(&asset("models/whisper-tiny.en"), Some("tiny"))
        .unwrap();
    let error = runtime.open_speech_chat(&whisper.id).await.err().unwrap();
    assert!(error.to_string().contains("whisper model"), "{error}");
    assert!(error.to_string().contains("LFM2-Audio"), "{error}");

    let mut settings = runtime.chat_settings().await;
    settings.s2s = Some(whisper.id.clone());
    let error = runtime.set_chat_settings(&settings).await.unwrap_err();
    assert!(
        error.to_string().contains("not an LFM2-Audio model"),
        "{error}"
    );
}
