//! Voice chat as the Chat screen runs it, through a real audio path: a PulseAudio server
//! of the test's own (izwi-test-support's `pulse`) is the system's microphone and
//! speaker, with real weights (Whisper tiny.en, SmolLM2-135M-Instruct, the joe voice).
//! Hands-free, a question played into the microphone comes back as `ChatEvent`s and a
//! stored turn; stopping ends the chat with `Stopped`. Push-to-talk, speech without the
//! key is not heard, and speech with it is a turn of the same chat. One test in this
//! file: it points the process's audio at its PulseAudio.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use izwi_desktop::events::ChatEvent;
use izwi_desktop::state::AppState;
use izwi_runtime::{ChatSettings, MessageRole, NoEvents, Runtime, RuntimeConfig};
use izwi_test_support::pulse::{PulseAudio, MIC_SINK};
use izwi_test_support::{asset, install_vad, spoken, wait_for};

#[tokio::test(flavor = "multi_thread")]
async fn a_question_spoken_into_the_microphone_is_answered_and_kept() {
    let pulse = PulseAudio::start();
    for (key, value) in pulse.env() {
        std::env::set_var(key, value);
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    install_vad(&izwi_runtime::vad_path(&data));
    let question = spoken(&dir.path().join("q.wav"), "What is the capital of France?");

    let mut config = RuntimeConfig::new(data);
    config.hf_cache_dir = Some(dir.path().join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    let state = AppState::new(runtime, Arc::default(), vec![], Box::new(|_| {}));
    // Installed, as the Chat screen offers them.
    let install = |p: &str| state.runtime.import_model(&asset(p), None).unwrap().id;
    let settings = ChatSettings {
        llm: Some(install(
            "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf",
        )),
        asr: Some(install("models/whisper-tiny.en")),
        voice: Some(install("voices/en_US-joe-medium/en_US-joe-medium.onnx")),
        ..ChatSettings::default()
    };
    state.set_chat_settings(settings).await.unwrap();

    let seen: Arc<Mutex<Vec<ChatEvent>>> = Arc::default();
    let into = seen.clone();
    state
        .start_voice_chat(None, false, Arc::new(move |e| into.lock().unwrap().push(e)))
        .await
        .unwrap();
    let minute = Duration::from_secs(60);
    wait_for(&seen, minute, |e| matches!(e, ChatEvent::Listening { .. })).await;
    let busy = state
        .send_chat_message(None, "Hello".into(), Arc::new(|_| {}))
        .await;
    assert!(busy.is_err(), "one chat activity at a time");
    let played = question.clone();
    let mic = tokio::task::spawn_blocking(move || {
        pulse.play(MIC_SINK, &played);
        pulse
    });
    let done = wait_for(&seen, 2 * minute, |e| {
        matches!(e, ChatEvent::TurnDone { .. })
    })
    .await;
    let pulse = mic.await.unwrap();
    assert!(state.stop_chat());
    let stopped = wait_for(&seen, minute, |e| matches!(e, ChatEvent::Stopped { .. })).await;
    assert_eq!(stopped, ChatEvent::Stopped { error: None });

    let ChatEvent::TurnDone {
        chat_id,
        user_text,
        reply_text,
        metrics,
    } = done
    else {
        unreachable!()
    };
    assert!(
        user_text.to_lowercase().contains("capital of france"),
        "{user_text}"
    );
    assert!(reply_text.contains("Paris"), "{reply_text}");
    assert!(
        metrics.first_audio_ms.is_some() && !metrics.interrupted,
        "{metrics:?}"
    );
    let events = seen.lock().unwrap().clone();
    let loud = events
        .iter()
        .any(|e| matches!(e, ChatEvent::Level { rms } if *rms > 0.01));
    assert!(loud, "the level meter heard the question");
    for kind in ["speech_started", "speech_ended", "heard", "reply_text"] {
        let found = events
            .iter()
            .any(|e| serde_json::to_value(e).unwrap()["type"] == kind);
        assert!(found, "no {kind} in {events:?}");
    }
    let messages = state.get_chat_messages(chat_id).await.unwrap();
    let said: Vec<_> = messages
        .iter()
        .filter(|m| m.role != MessageRole::System)
        .collect();
    assert_eq!(said.len(), 2);
    for message in said {
        let audio = message.audio_path.as_deref().expect("a recording");
        assert!(state.runtime.data_dir().join(audio).is_file());
    }

    // Push-to-talk, going on with the same chat.
    assert!(state.set_talking(true).is_err(), "no push-to-talk chat yet");
    seen.lock().unwrap().clear();
    let into = seen.clone();
    state
        .start_voice_chat(
            Some(chat_id),
            true,
            Arc::new(move |e| into.lock().unwrap().push(e)),
        )
        .await
        .unwrap();
    wait_for(&seen, minute, |e| matches!(e, ChatEvent::Listening { .. })).await;
    pulse.play(MIC_SINK, &question);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let heard = seen
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, ChatEvent::SpeechStarted | ChatEvent::Heard { .. }));
    assert!(!heard, "speech without the key was taken for a turn");
    let second = spoken(&dir.path().join("q2.wav"), "What is the capital of Italy?");
    state.set_talking(true).unwrap();
    pulse.play(MIC_SINK, &second);
    // paplay returns once it has sent the audio; the capture side hears its end a
    // little later. Let go as a person would, after the last word.
    tokio::time::sleep(Duration::from_millis(700)).await;
    state.set_talking(false).unwrap();
    let done = wait_for(&seen, 2 * minute, |e| {
        matches!(e, ChatEvent::TurnDone { .. })
    })
    .await;
    assert!(state.stop_chat());
    wait_for(&seen, minute, |e| matches!(e, ChatEvent::Stopped { .. })).await;
    let ChatEvent::TurnDone {
        chat_id: same,
        user_text,
        reply_text,
        ..
    } = done
    else {
        unreachable!()
    };
    assert_eq!(same, chat_id);
    assert!(
        user_text.to_lowercase().contains("capital of italy"),
        "{user_text}"
    );
    assert!(reply_text.contains("Rome"), "{reply_text}");
}
