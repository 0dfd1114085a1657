//! Conversations with the real SmolLM2-135M-Instruct (scripts/fetch-assets.sh): each
//! message is in the store as it is said and is there after the runtime is reopened;
//! the reply streamed to the caller is the reply stored.

mod common;

use common::{config, open_recording};
use izwi_runtime::{ChatParams, Conversation, MessageRole, DEFAULT_SYSTEM_PROMPT};
use izwi_test_support::asset;

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_is_kept_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let chat_id;
    let mut streamed = Vec::new();
    {
        let (runtime, _) = open_recording(config(dir.path())).await;
        let model = runtime.open_chat_model(&path).await.unwrap();
        let mut conversation = Conversation::new(DEFAULT_SYSTEM_PROMPT);
        for question in ["What is the capital of France?", "And of Italy?"] {
            let mut text = String::new();
            let reply = runtime
                .say(
                    &model,
                    &mut conversation,
                    question,
                    &ChatParams::default(),
                    |delta| text.push_str(delta),
                )
                .await
                .unwrap();
            assert_eq!(text.trim(), reply.text);
            streamed.push(reply.text);
        }
        chat_id = conversation.chat_id().expect("stored");
        assert_eq!(conversation.messages().len(), 5);
        runtime.shutdown().await;
    }
    let (runtime, _) = open_recording(config(dir.path())).await;
    let messages = runtime.chat_messages(chat_id).await.unwrap();
    let said: Vec<(MessageRole, &str)> = messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (MessageRole::System, DEFAULT_SYSTEM_PROMPT),
            (MessageRole::User, "What is the capital of France?"),
            (MessageRole::Assistant, streamed[0].as_str()),
            (MessageRole::User, "And of Italy?"),
            (MessageRole::Assistant, streamed[1].as_str()),
        ]
    );
    assert!(streamed[0].contains("Paris"), "{}", streamed[0]);
}
