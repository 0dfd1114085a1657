//! The async Engine handle as callers use it: generate, stream, abort, stop, errors.

mod common;

use std::sync::Arc;
use std::time::Duration;

use candle_core::Tensor;
use common::*;
use izwi_core::engine::{
    Engine, EngineCoreConfig, EngineCoreRequest, EngineError, FinishReason, ForwardBatch,
    GenerationParams, LayerKvCache, ModelExecutor, ModelSpec, Priority,
};
use izwi_core::models::llama::Llama;

fn engine() -> Engine {
    Engine::new(EngineCoreConfig::default(), Box::new(tiny_model())).expect("engine")
}

fn endless() -> GenerationParams {
    GenerationParams {
        max_tokens: 800,
        ignore_eos: true,
        ..GenerationParams::default()
    }
}

/// Waits (bounded) until the engine holds no request.
async fn until_idle(engine: &Engine) {
    for _ in 0..500 {
        let status = engine.status().await.expect("status");
        if status.running == 0 && status.waiting == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the engine never went idle");
}

#[tokio::test]
async fn generate_returns_the_reference_tokens_and_stats() {
    let engine = engine();
    let prompt = vec![5, 17, 99, 3, 42];
    let out = engine
        .generate(EngineCoreRequest::new(prompt.clone()).with_params(greedy(12)))
        .await
        .expect("generate");
    let (want, _) = reference_decode(&tiny_model(), &prompt, &greedy(12));
    assert_eq!(out.tokens, want);
    assert_eq!(out.prompt_len, prompt.len());
    let reason = if want.len() == 12 {
        FinishReason::Length
    } else {
        FinishReason::Stop
    };
    assert_eq!(out.finish_reason, reason);
    assert!(out.stats.time_to_first_token.is_some());
    assert_eq!(out.stats.rtf, None, "a text model has no real-time factor");
    let metrics = engine.metrics();
    assert_eq!(metrics.total_requests, 1);
    assert_eq!(metrics.total_tokens_generated, want.len() as u64);
    assert!(metrics.p50_latency_ms > 0.0);
}

#[tokio::test]
async fn streaming_sends_every_token_in_order_then_the_output() {
    let engine = engine();
    let request = EngineCoreRequest::new(vec![1, 2, 3]).with_params(GenerationParams {
        max_tokens: 20,
        ignore_eos: true,
        ..GenerationParams::default()
    });
    let (id, mut rx) = engine.generate_streaming(request).await.expect("stream");
    let mut streamed = Vec::new();
    let mut index = 0;
    let output = loop {
        let chunk = rx.recv().await.expect("stream ends with a final chunk");
        assert_eq!(chunk.request_id, id);
        assert_eq!(chunk.sequence, index, "chunks are numbered in order");
        index += 1;
        streamed.extend(chunk.tokens);
        if let Some(output) = chunk.finished {
            break output;
        }
    };
    assert_eq!(streamed.len(), 20);
    assert_eq!(
        streamed, output.tokens,
        "the stream carries exactly the output"
    );
    assert_eq!(output.finish_reason, FinishReason::Length);
    assert!(rx.recv().await.is_none(), "nothing after the final chunk");
}

#[tokio::test]
async fn abort_frees_the_blocks_before_returning() {
    let engine = engine();
    let (id, mut rx) = engine
        .generate_streaming(EngineCoreRequest::new(vec![7; 100]).with_params(endless()))
        .await
        .expect("stream");
    rx.recv().await.expect("first token");
    assert!(engine.kv_cache_stats().await.expect("stats").used_blocks() > 0);
    assert!(engine.abort_request(&id).await.expect("abort"));
    let stats = engine.kv_cache_stats().await.expect("stats");
    assert_eq!(stats.used_blocks(), 0, "abort frees at once");
    let last = loop {
        let chunk = rx.recv().await.expect("a final chunk after abort");
        if let Some(out) = chunk.finished {
            break out;
        }
    };
    assert_eq!(last.finish_reason, FinishReason::Aborted);
    assert!(
        !engine.abort_request(&id).await.expect("abort"),
        "already gone"
    );
    assert_eq!(engine.metrics().aborted_requests, 1);
}

#[tokio::test]
async fn dropping_the_receiver_aborts_the_request() {
    let engine = engine();
    let (_, rx) = engine
        .generate_streaming(EngineCoreRequest::new(vec![9; 10]).with_params(endless()))
        .await
        .expect("stream");
    drop(rx);
    until_idle(&engine).await;
    assert_eq!(
        engine.kv_cache_stats().await.expect("stats").used_blocks(),
        0
    );
    let pending = engine
        .add_request(EngineCoreRequest::new(vec![9; 10]).with_params(endless()))
        .await
        .expect("add");
    drop(pending);
    until_idle(&engine).await;
    assert_eq!(engine.metrics().aborted_requests, 2);
}

#[tokio::test]
async fn bad_requests_fail_at_once_with_the_reason_and_the_engine_goes_on() {
    let config = EngineCoreConfig {
        num_blocks: Some(4),
        block_size: 16,
        ..EngineCoreConfig::default()
    };
    let engine = Engine::new(config, Box::new(tiny_model())).expect("engine");
    let too_large = EngineCoreRequest::new(vec![1; 60]).with_params(GenerationParams {
        max_tokens: 10,
        ..GenerationParams::default()
    });
    let err = engine
        .generate(too_large)
        .await
        .expect_err("cannot fit the cache");
    assert!(
        matches!(
            err,
            EngineError::RequestTooLarge {
                tokens: 70,
                needed_blocks: 5,
                total_blocks: 4
            }
        ),
        "{err}"
    );
    let err = engine
        .generate(EngineCoreRequest::new(vec![]))
        .await
        .expect_err("empty prompt");
    assert!(err.to_string().contains("prompt is empty"), "{err}");
    let err = engine
        .generate(EngineCoreRequest::new(vec![1, 9999]))
        .await
        .expect_err("bad token");
    assert!(err.to_string().contains("outside the vocabulary"), "{err}");
    let ok = engine
        .generate(EngineCoreRequest::new(vec![1; 10]).with_params(greedy(5)))
        .await
        .expect("a fitting request still runs");
    assert!(!ok.tokens.is_empty());
    let request = EngineCoreRequest::new(vec![1])
        .with_id("same")
        .with_params(GenerationParams {
            max_tokens: 40,
            ignore_eos: true,
            ..GenerationParams::default()
        });
    let first = engine.add_request(request.clone()).await.expect("first");
    let err = engine
        .add_request(request)
        .await
        .err()
        .expect("duplicate id refused");
    assert!(matches!(err, EngineError::DuplicateRequest(_)), "{err}");
    drop(first);
}

#[tokio::test]
async fn stop_ends_pending_requests_as_aborted_and_refuses_new_ones() {
    let engine = Arc::new(engine());
    let pending = engine
        .add_request(
            EngineCoreRequest::new(vec![3; 8])
                .with_params(endless())
                .with_priority(Priority::High),
        )
        .await
        .expect("add");
    engine.stop();
    engine.run().await; // resolves once stopped
    let out = pending.wait().await.expect("final output");
    assert_eq!(out.finish_reason, FinishReason::Aborted);
    let err = engine
        .generate(EngineCoreRequest::new(vec![1]))
        .await
        .expect_err("stopped");
    assert!(matches!(err, EngineError::Stopped));
}

/// The tiny model, except that any sequence containing the poison token fails: with
/// an error, or with a panic in model code.
struct Poisoned {
    model: Llama,
    error_token: u32,
    panic_token: u32,
}

impl ModelExecutor for Poisoned {
    fn spec(&self) -> &ModelSpec {
        self.model.spec()
    }

    fn execute(
        &mut self,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
    ) -> candle_core::Result<Tensor> {
        let has = |t: u32| batch.sequences.iter().any(|s| s.tokens.contains(&t));
        if has(self.panic_token) {
            panic!("poisoned by token {}", self.panic_token);
        }
        if has(self.error_token) {
            candle_core::bail!("poisoned by token {}", self.error_token);
        }
        self.model.execute(batch, kv_cache)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_request_fails_alone() {
    let executor = Poisoned {
        model: tiny_model(),
        error_token: 250,
        panic_token: 251,
    };
    let engine =
        Arc::new(Engine::new(EngineCoreConfig::default(), Box::new(executor)).expect("engine"));
    let prompts: Vec<Vec<u32>> = vec![
        vec![4, 5, 6],
        vec![4, 250, 6],
        vec![8, 9],
        vec![251, 1],
        vec![10, 11, 12, 13],
    ];
    let mut tasks = tokio::task::JoinSet::new();
    for (i, prompt) in prompts.iter().enumerate() {
        let (engine, prompt) = (engine.clone(), prompt.clone());
        tasks.spawn(async move {
            (
                i,
                engine
                    .generate(EngineCoreRequest::new(prompt).with_params(greedy(6)))
                    .await,
            )
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, result) = joined.expect("task");
        match i {
            1 => {
                let err = result.expect_err("the poisoned request fails");
                assert!(err.to_string().contains("poisoned by token 250"), "{err}");
            }
            3 => {
                let err = result.expect_err("the panicking request fails");
                assert!(
                    err.to_string()
                        .contains("model panicked: poisoned by token 251"),
                    "{err}"
                );
            }
            _ => {
                let out = result.expect("healthy requests succeed");
                let (want, _) = reference_decode(&tiny_model(), &prompts[i], &greedy(6));
                assert_eq!(out.tokens, want, "request {i}");
            }
        }
    }
    let stats = engine.kv_cache_stats().await.expect("stats");
    assert_eq!(stats.used_blocks(), 0);
    assert_eq!(engine.metrics().failed_requests, 2);
}

#[tokio::test]
async fn first_logits_returns_what_the_prompt_predicts_and_only_that() {
    let engine = engine();
    let prompt = vec![5, 17, 99, 3, 42];
    let every = engine
        .generate(
            EngineCoreRequest::new(prompt.clone()).with_params(GenerationParams {
                return_logits: true,
                ..greedy(6)
            }),
        )
        .await
        .expect("generate");
    let first = engine
        .generate(
            EngineCoreRequest::new(prompt).with_params(GenerationParams {
                return_logits: false,
                first_logits: true,
                ..greedy(6)
            }),
        )
        .await
        .expect("generate");
    assert_eq!(first.tokens, every.tokens);
    assert!(every.logits.len() > 1, "{} rows", every.logits.len());
    assert_eq!(first.logits, every.logits[..1]);
}
