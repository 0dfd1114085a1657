//! An LFM2 Hugging Face folder opens as a chat model: the tiny random checkpoint of
//! crates/izwi-core/tests/fixtures/lfm2 (its tokenizer and chat template made by
//! make_fixtures.py) answers a conversation through the runtime with the tokens
//! transformers generates for the same prompt.

mod common;

use std::path::PathBuf;

use common::{config, open_recording};
use izwi_core::text::{ChatFormat, ChatMessage};
use izwi_runtime::ChatParams;
use serde::Deserialize;

#[derive(Deserialize)]
struct ChatReference {
    messages: Vec<ChatMessage>,
    reply: Vec<u32>,
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../izwi-core/tests/fixtures/lfm2/tiny")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_lfm2_folder_answers_as_transformers_does() {
    let text =
        std::fs::read_to_string(fixture().join("chat_reference.json")).expect("chat reference");
    let reference: ChatReference = serde_json::from_str(&text).expect("valid");
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    let model = runtime
        .open_chat_model(fixture().to_str().unwrap())
        .await
        .unwrap();
    assert_eq!(model.name(), "tiny");
    let params = ChatParams {
        max_tokens: reference.reply.len(),
        ..ChatParams::default()
    };
    let mut streamed = String::new();
    let reply = model
        .reply(&reference.messages, &params, |delta| {
            streamed.push_str(delta)
        })
        .await
        .unwrap();
    let format = ChatFormat::from_dir(&fixture()).unwrap();
    let want = format.reply_decoder().push(&reference.reply).unwrap();
    assert_eq!(reply.tokens, reference.reply.len());
    assert_eq!(reply.text, want.trim());
    assert_eq!(streamed.trim(), reply.text);
    let status = model.engine_status().await.unwrap();
    assert_eq!(status.kv_cache.free_blocks, status.kv_cache.total_blocks);
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_folder_of_another_family_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("other");
    std::fs::create_dir_all(&model_dir).unwrap();
    std::fs::write(model_dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    let err = runtime
        .open_chat_model(model_dir.to_str().unwrap())
        .await
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("a llama model folder cannot be used"),
        "{err}"
    );
    runtime.shutdown().await;
}
