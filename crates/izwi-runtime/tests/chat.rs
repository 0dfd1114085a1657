//! Conversations with the real SmolLM2-135M-Instruct (scripts/fetch-assets.sh): each
//! message is in the store as it is said and is there after the runtime is reopened;
//! the reply streamed to the caller is the reply stored; a reply dropped while it is
//! being written (what barge-in does) leaves the engine with nothing running and every
//! KV block free.

mod common;

use common::{config, open_recording};
use std::time::{Duration, Instant};

use izwi_runtime::{ChatMessage, ChatParams, Conversation, MessageRole, DEFAULT_SYSTEM_PROMPT};
use izwi_test_support::asset;

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_is_kept_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let chat_id;
    let mut streamed = Vec::new();
    {
        let (runtime, _) = open_recording(config(dir.path())).await;
        let model = runtime
            .open_chat_model(path.to_str().unwrap())
            .await
            .unwrap();
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

/// A runtime on `dir` with SmolLM2-135M-Instruct opened.
async fn smollm2(dir: &std::path::Path) -> (izwi_runtime::Runtime, izwi_runtime::ChatModel) {
    let path = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    let (runtime, _) = open_recording(config(dir)).await;
    let model = runtime
        .open_chat_model(path.to_str().unwrap())
        .await
        .unwrap();
    (runtime, model)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_dropped_mid_stream_frees_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (_runtime, model) = smollm2(dir.path()).await;
    let messages = [ChatMessage::new(
        "user",
        "Write a long story about a lighthouse keeper.",
    )];
    let params = ChatParams {
        max_tokens: 400,
        ..ChatParams::default()
    };
    let (first, mut got_first) = tokio::sync::mpsc::unbounded_channel();
    let reply = model.reply(&messages, &params, |delta| {
        let _ = first.send(delta.to_string());
    });
    tokio::select! {
        result = reply => panic!("the reply ended before it was dropped: {result:?}"),
        _ = got_first.recv() => {}
    }
    // The engine learns of the drop at its next step and aborts the request there.
    let dropped = Instant::now();
    loop {
        let status = model.engine_status().await.unwrap();
        if status.running == 0 && status.waiting == 0 && status.kv_cache.used_blocks() == 0 {
            break;
        }
        // A guard against hanging, not a speed check: the bound is in tokens, below.
        assert!(dropped.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let metrics = model.engine_metrics();
    assert_eq!(metrics.aborted_requests, 1, "{metrics:?}");
    // Aborted within a step or two of the first token, not run on to max_tokens.
    let generated = metrics.total_tokens_generated;
    assert!((1..=8).contains(&generated), "{metrics:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_longer_than_the_context_forgets_its_beginning_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_runtime, model) = smollm2(dir.path()).await;
    // About 8000 tokens of earlier turns: twice SmolLM2's engine context of 4096.
    let filler = "The weather was mild and the sea was calm that day. ".repeat(20);
    let mut messages = vec![ChatMessage::new("system", DEFAULT_SYSTEM_PROMPT)];
    for _ in 0..30 {
        messages.push(ChatMessage::new("user", filler.clone()));
        messages.push(ChatMessage::new("assistant", "I see."));
    }
    messages.push(ChatMessage::new("user", "What is the capital of France?"));
    let params = ChatParams {
        max_tokens: 24,
        ..ChatParams::default()
    };
    let reply = model.reply(&messages, &params, |_| {}).await.unwrap();
    assert!(reply.text.contains("Paris"), "{}", reply.text);
}
