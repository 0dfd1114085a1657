//! Spoken turns with real weights (scripts/fetch-assets.sh): Whisper tiny.en hears a
//! question synthesised by espeak-ng, SmolLM2-135M-Instruct answers, the joe voice
//! speaks. Barge-in: the user speaking over the reply stops its audio at once, aborts
//! the engine request (every KV block free) and keeps in the history the part of the
//! reply that had begun to play.

mod common;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{config, open_recording};
use izwi_runtime::{
    CancellationToken, ChatParams, Conversation, MessageRole, ReplyOutput, Runtime, RuntimeError,
    TurnEvent, VoiceChatSetup,
};
use izwi_test_support::{asset, spoken};

fn question(dir: &Path, text: &str) -> Vec<f32> {
    let path = spoken(&dir.join("question.wav"), text);
    izwi_runtime::load_for_asr(&path).expect("the question decodes")
}

async fn runtime(dir: &Path) -> Runtime {
    let (runtime, _) = open_recording(config(dir)).await;
    runtime
        .install_vad(&asset("models/silero-vad/silero_vad_16k_op15.onnx"))
        .await
        .expect("VAD installed");
    runtime
}

/// A speaker that plays in real time, as a device does (the device itself is tested
/// through PulseAudio in the CLI's live chat test).
#[derive(Default)]
struct RealTimeSpeaker {
    state: Mutex<(Option<Instant>, f64)>,
}

impl ReplyOutput for RealTimeSpeaker {
    fn play(&self, samples: &[f32], sample_rate: u32) -> Result<(), RuntimeError> {
        let mut state = self.state.lock().unwrap();
        state.0.get_or_insert_with(Instant::now);
        state.1 += samples.len() as f64 / f64::from(sample_rate);
        Ok(())
    }

    fn played_seconds(&self) -> f64 {
        let state = self.state.lock().unwrap();
        state
            .0
            .map_or(0.0, |t| t.elapsed().as_secs_f64().min(state.1))
    }

    fn is_drained(&self) -> bool {
        self.played_seconds() >= self.state.lock().unwrap().1
    }

    fn stop(&self) {
        *self.state.lock().unwrap() = (None, 0.0);
    }
}

fn setup() -> VoiceChatSetup {
    VoiceChatSetup {
        asr: asset("models/whisper-tiny.en").display().to_string(),
        voice: asset("voices/en_US-joe-medium/en_US-joe-medium.onnx")
            .display()
            .to_string(),
        language: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn speaking_over_the_reply_stops_it_and_keeps_what_was_said() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(dir.path()).await;
    let model = runtime
        .open_chat_model(
            asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf")
                .to_str()
                .unwrap(),
        )
        .await
        .unwrap();
    let setup = setup();
    runtime.prepare_voice_chat(&setup).await.unwrap();
    let speech = question(
        dir.path(),
        "Tell me a long story about a lighthouse keeper.",
    );
    let mut conversation = Conversation::new("You are a storyteller. Tell long stories.");
    let params = ChatParams {
        max_tokens: 400,
        ..ChatParams::default()
    };
    let interrupt = CancellationToken::new();
    let speaker = RealTimeSpeaker::default();
    // Pieces of text streamed (one per token at most) when the user spoke.
    let at_interrupt: Mutex<Option<u64>> = Mutex::new(None);
    let texts = Mutex::new(0u64);
    let audio_after = Mutex::new(0usize);
    let turn = runtime
        .voice_turn(
            &setup,
            &model,
            &mut conversation,
            &params,
            speech,
            Instant::now(),
            &speaker,
            &interrupt,
            |event| match event {
                TurnEvent::ReplyText(_) => *texts.lock().unwrap() += 1,
                TurnEvent::ReplySpoken(_) => {
                    let mut at = at_interrupt.lock().unwrap();
                    match *at {
                        // The user speaks as the first sentence begins to play.
                        None => {
                            *at = Some(*texts.lock().unwrap());
                            interrupt.cancel();
                        }
                        Some(_) => *audio_after.lock().unwrap() += 1,
                    }
                }
                TurnEvent::Heard(_) => {}
            },
        )
        .await
        .unwrap()
        .expect("the question was heard");

    assert!(turn.metrics.interrupted, "{turn:?}");
    assert_eq!(*audio_after.lock().unwrap(), 0, "audio came after barge-in");
    // Playback was stopped: nothing left queued.
    assert!(speaker.is_drained() && speaker.played_seconds() == 0.0);
    // Only the first sentence had begun to play.
    assert!(!turn.reply_text.is_empty());
    let first_sentences = izwi_core_sentences(&turn.reply_text);
    assert_eq!(first_sentences, 1, "{:?}", turn.reply_text);

    // The engine request is aborted: nothing running, every block free, and no more
    // than a step or two of tokens generated after the interrupt.
    let aborted = Instant::now();
    loop {
        let status = model.engine_status().await.unwrap();
        if status.running == 0 && status.waiting == 0 && status.kv_cache.used_blocks() == 0 {
            break;
        }
        // A guard against hanging, not a speed check: the bound is in tokens, below.
        assert!(aborted.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let metrics = model.engine_metrics();
    assert_eq!(metrics.aborted_requests, 1, "{metrics:?}");
    // Tokens generated, less those streamed before the interrupt: an upper bound on
    // what the engine made after it (a token can stream no text).
    let streamed = at_interrupt.lock().unwrap().expect("interrupted");
    let after = metrics.total_tokens_generated - streamed;
    assert!(
        after <= 8,
        "{after} tokens after the interrupt: {metrics:?}"
    );

    // The history holds what was said, marked interrupted, with both recordings.
    let messages = runtime.chat_messages(turn.chat_id).await.unwrap();
    let reply = messages.last().unwrap();
    assert_eq!(reply.role, MessageRole::Assistant);
    assert_eq!(reply.content, turn.reply_text);
    assert!(reply.metrics.as_ref().unwrap().interrupted);
    let user = &messages[messages.len() - 2];
    assert_eq!(user.role, MessageRole::User);
    for message in [user, reply] {
        let audio = runtime
            .data_dir()
            .join(message.audio_path.as_ref().unwrap());
        assert!(audio.is_file(), "{}", audio.display());
    }
    assert_eq!(
        conversation.messages().last().unwrap().content,
        turn.reply_text
    );
}

/// Sentences in `text`, as the voice splits them.
fn izwi_core_sentences(text: &str) -> usize {
    text.split_inclusive(['.', '!', '?'])
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .count()
}
