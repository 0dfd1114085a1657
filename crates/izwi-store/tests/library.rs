//! Voices, chats and settings.

use izwi_store::{
    MessageMetrics, MessageRole, NewMessage, NewVoice, Store, StoreError, VoiceSettings,
    VoiceSource,
};

async fn open() -> (tempfile::TempDir, Store) {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    (temp, store)
}

fn new_voice(name: &str) -> NewVoice {
    NewVoice {
        name: name.into(),
        source: VoiceSource::Cloned,
        model_id: "kokoro".into(),
        reference_audio: Some("audio/voices/ref.wav".into()),
        reference_text: Some("The rainbow is a division of white light.".into()),
        settings: VoiceSettings {
            speed: 0.9,
            noise_scale: Some(0.667),
            noise_w: None,
            pitch: -2.0,
            speaker: Some(4),
            ..VoiceSettings::default()
        },
    }
}

#[tokio::test]
async fn voices_are_created_listed_renamed_and_deleted() {
    let (_temp, store) = open().await;
    let new = new_voice("  zoe ");
    let zoe = store.create_voice(new.clone()).await.unwrap();
    assert_eq!(zoe.name, "zoe", "stored trimmed");
    assert_eq!(zoe.source, VoiceSource::Cloned);
    assert_eq!(zoe.model_id, new.model_id);
    assert_eq!(zoe.reference_audio, new.reference_audio);
    assert_eq!(zoe.reference_text, new.reference_text);
    assert_eq!(zoe.settings, new.settings);
    assert_eq!(zoe.created_at, zoe.updated_at);
    assert_eq!(store.voice(zoe.id).await.unwrap(), Some(zoe.clone()));

    let adam = store
        .create_voice(NewVoice {
            source: VoiceSource::Preset,
            reference_audio: None,
            reference_text: None,
            settings: VoiceSettings::default(),
            ..new_voice("Adam")
        })
        .await
        .unwrap();
    let names: Vec<String> = store
        .list_voices()
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["Adam", "zoe"], "by name, ignoring case");

    store.rename_voice(zoe.id, "Bea").await.unwrap();
    let settings = VoiceSettings {
        speed: 1.5,
        ..VoiceSettings::default()
    };
    store
        .update_voice_settings(zoe.id, &settings)
        .await
        .unwrap();
    let bea = store.voice(zoe.id).await.unwrap().unwrap();
    assert_eq!(bea.name, "Bea");
    assert_eq!(bea.settings, settings);
    assert!(bea.updated_at >= zoe.updated_at);

    store.delete_voice(adam.id).await.unwrap();
    assert_eq!(store.voice(adam.id).await.unwrap(), None);
    assert_eq!(store.list_voices().await.unwrap(), [bea]);
    store.close().await;
}

#[tokio::test]
async fn bad_voices_are_refused() {
    let (_temp, store) = open().await;
    for name in ["", "   ", "\n\t"] {
        assert!(matches!(
            store.create_voice(new_voice(name)).await,
            Err(StoreError::InvalidInput(_))
        ));
    }
    assert!(matches!(
        store
            .create_voice(NewVoice {
                reference_audio: Some("../../secret.wav".into()),
                ..new_voice("x")
            })
            .await,
        Err(StoreError::PathOutsideDataDir(_))
    ));
    let nan = VoiceSettings {
        pitch: f32::NAN,
        ..VoiceSettings::default()
    };
    assert!(matches!(
        store
            .create_voice(NewVoice {
                settings: nan.clone(),
                ..new_voice("x")
            })
            .await,
        Err(StoreError::InvalidInput(_))
    ));
    assert!(store.list_voices().await.unwrap().is_empty());

    let voice = store.create_voice(new_voice("ok")).await.unwrap();
    assert!(matches!(
        store.rename_voice(voice.id, " ").await,
        Err(StoreError::InvalidInput(_))
    ));
    assert!(matches!(
        store.update_voice_settings(voice.id, &nan).await,
        Err(StoreError::InvalidInput(_))
    ));
    assert_eq!(store.voice(voice.id).await.unwrap(), Some(voice));

    let missing = |r: Result<(), StoreError>| {
        matches!(
            r,
            Err(StoreError::NotFound {
                what: "voice",
                id: 77
            })
        )
    };
    assert!(missing(store.rename_voice(77, "x").await));
    assert!(missing(
        store
            .update_voice_settings(77, &VoiceSettings::default())
            .await
    ));
    assert!(missing(store.delete_voice(77).await));
    store.close().await;
}

#[tokio::test]
async fn chats_keep_messages_in_order_and_sort_by_activity() {
    let (_temp, store) = open().await;
    let first = store.create_chat("First", Some("qwen")).await.unwrap();
    assert_eq!(first.title, "First");
    assert_eq!(first.model_id.as_deref(), Some("qwen"));
    assert_eq!(first.created_at, first.updated_at);
    let second = store.create_chat("Second", None).await.unwrap();
    assert_eq!(
        store.list_chats().await.unwrap(),
        [second.clone(), first.clone()]
    );

    // Let the clock move so the bump is visible.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let system = store
        .add_message(first.id, NewMessage::text(MessageRole::System, "Be brief."))
        .await
        .unwrap();
    let user = store
        .add_message(
            first.id,
            NewMessage {
                audio_path: Some("audio/chats/1/user-1.wav"),
                ..NewMessage::text(MessageRole::User, "Hi")
            },
        )
        .await
        .unwrap();
    let metrics = MessageMetrics {
        asr_ms: Some(120.5),
        first_audio_ms: Some(640.0),
        interrupted: true,
        ..MessageMetrics::default()
    };
    let reply = store
        .add_message(
            first.id,
            NewMessage {
                metrics: Some(&metrics),
                ..NewMessage::text(MessageRole::Assistant, "Hello!")
            },
        )
        .await
        .unwrap();
    assert_eq!(user.chat_id, first.id);
    assert_eq!(user.role, MessageRole::User);
    assert_eq!(user.audio_path.as_deref(), Some("audio/chats/1/user-1.wav"));
    assert_eq!(user.metrics, None);
    assert_eq!(reply.metrics.as_ref(), Some(&metrics));
    assert_eq!(
        store.messages(first.id).await.unwrap(),
        [system, user, reply.clone()]
    );

    let bumped = store.chat(first.id).await.unwrap().unwrap();
    assert_eq!(bumped.updated_at, reply.created_at);
    assert!(bumped.updated_at > first.updated_at);
    let order: Vec<i64> = store
        .list_chats()
        .await
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(order, [first.id, second.id]);

    let found = |text: &'static str| {
        let store = &store;
        async move {
            let chats = store.search_chats(text).await.unwrap();
            chats.iter().map(|c| c.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        found("hello").await,
        [first.id],
        "a message's words, any case"
    );
    assert_eq!(found("SEC").await, [second.id], "a title's");
    assert_eq!(found("  ").await, [first.id, second.id], "blank finds all");
    assert!(found("%").await.is_empty(), "taken literally");

    store.delete_chat(first.id).await.unwrap();
    assert_eq!(store.chat(first.id).await.unwrap(), None);
    assert!(store.messages(first.id).await.unwrap().is_empty());
    let message_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM messages")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(message_rows, 0, "messages cascade with their chat");
    assert_eq!(store.list_chats().await.unwrap(), [second]);
    store.close().await;
}

#[tokio::test]
async fn messages_need_a_chat_and_a_safe_audio_path() {
    let (_temp, store) = open().await;
    assert!(matches!(
        store
            .add_message(5, NewMessage::text(MessageRole::User, "hi"))
            .await,
        Err(StoreError::NotFound {
            what: "chat",
            id: 5
        })
    ));
    assert!(matches!(
        store.delete_chat(5).await,
        Err(StoreError::NotFound {
            what: "chat",
            id: 5
        })
    ));
    let chat = store.create_chat("c", None).await.unwrap();
    assert!(matches!(
        store
            .add_message(
                chat.id,
                NewMessage {
                    audio_path: Some("/tmp/x.wav"),
                    ..NewMessage::text(MessageRole::User, "hi")
                }
            )
            .await,
        Err(StoreError::PathOutsideDataDir(_))
    ));
    assert!(store.messages(chat.id).await.unwrap().is_empty());
    store.close().await;
}

#[tokio::test]
async fn settings_round_trip_any_json() {
    let (_temp, store) = open().await;
    assert_eq!(store.get_setting::<String>("theme").await.unwrap(), None);

    store.set_setting("theme", "dark").await.unwrap();
    store.set_setting("volume", &0.75).await.unwrap();
    store
        .set_setting("recent", &vec!["a.wav", "b.wav"])
        .await
        .unwrap();
    store.set_setting("theme", "light").await.unwrap();

    assert_eq!(
        store
            .get_setting::<String>("theme")
            .await
            .unwrap()
            .as_deref(),
        Some("light")
    );
    assert_eq!(
        store.get_setting::<f64>("volume").await.unwrap(),
        Some(0.75)
    );
    assert_eq!(
        store.get_setting::<Vec<String>>("recent").await.unwrap(),
        Some(vec!["a.wav".to_string(), "b.wav".to_string()])
    );
    assert!(matches!(
        store.get_setting::<u32>("theme").await,
        Err(StoreError::Json(_))
    ));

    let all = store.all_settings().await.unwrap();
    assert_eq!(
        all.into_iter().collect::<Vec<_>>(),
        [
            ("recent".to_string(), serde_json::json!(["a.wav", "b.wav"])),
            ("theme".to_string(), serde_json::json!("light")),
            ("volume".to_string(), serde_json::json!(0.75)),
        ]
    );

    assert!(store.delete_setting("theme").await.unwrap());
    assert!(!store.delete_setting("theme").await.unwrap());
    assert_eq!(store.get_setting::<String>("theme").await.unwrap(), None);
    store.close().await;
}
