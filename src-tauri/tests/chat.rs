//! The Chat screen's commands with the real SmolLM2-135M-Instruct (scripts/fetch-assets.sh)
//! imported as a chat model: typed messages streamed as `ChatEvent`s and stored, chats
//! searched and deleted, a reply stopped, and what is refused before any model runs.

use std::path::Path;
use std::sync::{Arc, Mutex};

use izwi_desktop::commands::chat::ChatEvents;
use izwi_desktop::error::ErrorKind;
use izwi_desktop::events::ChatEvent;
use izwi_desktop::state::AppState;
use izwi_runtime::{ChatSettings, MessageRole, NoEvents, Runtime, RuntimeConfig};
use izwi_test_support::asset;

async fn state(dir: &Path) -> AppState {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    AppState::new(runtime, Arc::default(), vec![], Box::new(|_| {}))
}

fn recorder() -> (ChatEvents, Arc<Mutex<Vec<ChatEvent>>>) {
    let seen: Arc<Mutex<Vec<ChatEvent>>> = Arc::default();
    let into = seen.clone();
    (Arc::new(move |e| into.lock().unwrap().push(e)), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typed_chat_streams_its_reply_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    let (events, seen) = recorder();

    let refused = state
        .send_chat_message(None, "Hello".into(), events.clone())
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Model);
    assert!(refused.message.contains("chat model"), "{refused:?}");
    let voice = state.start_voice_chat(None, false, events.clone()).await;
    assert_eq!(voice.unwrap_err().kind, ErrorKind::Model);

    let gguf = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = state.runtime.import_model(&gguf, Some("smol")).unwrap();
    let whisper = asset("models/whisper-tiny.en");
    let tiny = state.runtime.import_model(&whisper, Some("tiny")).unwrap();
    let not_chat = ChatSettings {
        llm: Some(tiny.id.clone()),
        ..ChatSettings::default()
    };
    let refused = state.set_chat_settings(not_chat).await.unwrap_err();
    assert!(refused.message.contains("not a chat model"), "{refused:?}");
    // The page names models, never files.
    for path in [gguf.display().to_string(), whisper.display().to_string()] {
        let as_path = ChatSettings {
            llm: Some(path.clone()),
            ..ChatSettings::default()
        };
        let refused = state.set_chat_settings(as_path).await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::Invalid);
        assert!(
            refused.message.contains("not an installed model"),
            "{refused:?}"
        );
    }
    let unknown_voice = ChatSettings {
        voice: Some("/tmp/voice.onnx".into()),
        ..ChatSettings::default()
    };
    assert!(state.set_chat_settings(unknown_voice).await.is_err());
    let settings = ChatSettings {
        llm: Some(model.id.clone()),
        asr: Some(tiny.id.clone()),
        input_device: Some("a microphone".into()),
        end_silence_ms: 700,
        ..ChatSettings::default()
    };
    state.set_chat_settings(settings.clone()).await.unwrap();
    assert_eq!(state.get_chat_settings().await.unwrap(), settings);
    // A voice chat that cannot open its microphone fails to start and leaves nothing
    // running: the typed messages below still go.
    let joe = asset("voices/en_US-joe-medium/en_US-joe-medium.onnx");
    let voice = state.runtime.import_model(&joe, None).unwrap();
    let with_voice = ChatSettings {
        voice: Some(voice.id),
        ..settings.clone()
    };
    state.set_chat_settings(with_voice).await.unwrap();
    let no_microphone = state.start_voice_chat(None, false, events.clone()).await;
    assert_eq!(no_microphone.unwrap_err().kind, ErrorKind::Audio);
    state.set_chat_settings(settings.clone()).await.unwrap();
    let too_short = ChatSettings {
        end_silence_ms: 10,
        ..settings.clone()
    };
    assert!(state.set_chat_settings(too_short).await.is_err());
    assert!(state
        .send_chat_message(None, "  ".into(), events.clone())
        .await
        .is_err());

    let sent = state
        .send_chat_message(
            None,
            "What is the capital of France?".into(),
            events.clone(),
        )
        .await
        .unwrap();
    assert!(!sent.stopped);
    assert!(sent.reply.contains("Paris"), "{}", sent.reply);
    let streamed: String = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ReplyText { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.trim(), sent.reply.trim());
    assert_eq!(seen.lock().unwrap().first(), Some(&ChatEvent::Thinking));

    let again = state
        .send_chat_message(Some(sent.chat_id), "And of Italy?".into(), events.clone())
        .await
        .unwrap();
    assert_eq!(again.chat_id, sent.chat_id);
    assert!(again.reply.contains("Rome"), "{}", again.reply);
    let messages = state.get_chat_messages(sent.chat_id).await.unwrap();
    let said: Vec<_> = messages
        .iter()
        .filter(|m| m.role != MessageRole::System)
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(said[2], (MessageRole::User, "And of Italy?"));

    let ids = |chats: Vec<izwi_runtime::ChatRecord>| chats.iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(
        ids(state.list_chats(String::new()).await.unwrap()),
        [sent.chat_id]
    );
    assert_eq!(
        ids(state.list_chats("rome".into()).await.unwrap()),
        [sent.chat_id]
    );
    assert!(state.list_chats("zebra".into()).await.unwrap().is_empty());

    state.delete_chat(sent.chat_id).await.unwrap();
    assert!(state.list_chats(String::new()).await.unwrap().is_empty());
    let gone = state.get_chat_messages(sent.chat_id).await.unwrap();
    assert!(gone.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_is_stopped_and_a_second_one_waits_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(state(dir.path()).await);
    let gguf = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = state.runtime.import_model(&gguf, None).unwrap();
    let settings = ChatSettings {
        llm: Some(model.id),
        ..ChatSettings::default()
    };
    state.set_chat_settings(settings).await.unwrap();
    assert!(!state.stop_chat(), "nothing to stop yet");

    let (events, seen) = recorder();
    let writing = {
        let state = state.clone();
        let events = events.clone();
        tokio::spawn(async move {
            state
                .send_chat_message(
                    None,
                    "Tell me a very long story about a lighthouse keeper.".into(),
                    events,
                )
                .await
        })
    };
    // Stop once the reply has begun.
    loop {
        let begun = seen
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, ChatEvent::ReplyText { .. }));
        if begun {
            break;
        }
        assert!(!writing.is_finished(), "the reply ended before it began");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let busy = state
        .send_chat_message(None, "Hello".into(), events.clone())
        .await
        .unwrap_err();
    assert_eq!(busy.kind, ErrorKind::Invalid);
    assert!(state.stop_chat());
    let sent = writing.await.unwrap().unwrap();
    assert!(sent.stopped);
    assert!(!sent.reply.is_empty());
    // The question is kept; the reply cut short is not.
    let messages = state.get_chat_messages(sent.chat_id).await.unwrap();
    assert_eq!(messages.last().map(|m| m.role), Some(MessageRole::User));

    // Free again.
    let next = state
        .send_chat_message(Some(sent.chat_id), "What is 2 + 2?".into(), events)
        .await
        .unwrap();
    assert!(!next.stopped);
}

#[tokio::test(flavor = "multi_thread")]
async fn speech_to_speech_is_chosen_by_an_installed_lfm2_audio_model() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    let (events, _) = recorder();
    let refused = state
        .set_chat_settings(ChatSettings {
            s2s: Some("local/none".into()),
            ..ChatSettings::default()
        })
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("speech-to-speech model"),
        "{refused:?}"
    );
    let tiny = state
        .runtime
        .import_model(&asset("models/whisper-tiny.en"), Some("tiny"))
        .unwrap();
    let refused = state
        .set_chat_settings(ChatSettings {
            s2s: Some(tiny.id),
            ..ChatSettings::default()
        })
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("not an LFM2-Audio model"),
        "{refused:?}"
    );

    let lfm2_audio = state
        .runtime
        .import_model(
            &izwi_test_support::fixtures::lfm2_audio_tiny(),
            Some("lfm2-audio"),
        )
        .unwrap();
    // No chat model and no voice: speech to speech needs neither, so the start gets
    // as far as the microphone.
    let settings = ChatSettings {
        s2s: Some(lfm2_audio.id),
        input_device: Some("a microphone".into()),
        ..ChatSettings::default()
    };
    state.set_chat_settings(settings.clone()).await.unwrap();
    assert_eq!(state.get_chat_settings().await.unwrap(), settings);
    let no_microphone = state.start_voice_chat(None, false, events).await;
    assert_eq!(no_microphone.unwrap_err().kind, ErrorKind::Audio);
}
