//! The test that proves the engine: whatever the batching, chunking, preemption and
//! prefix reuse, greedy outputs of the paged engine equal a plain sequential
//! dense-cache run of the same model, and every block comes back.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use izwi_core::engine::{
    BatchStrategy, Engine, EngineCore, EngineCoreConfig, EngineCoreRequest, FinishReason, RequestId,
};

const LOGITS_TOLERANCE: f32 = 1e-4;

fn check_against_reference(
    prompt: &[u32],
    max_tokens: usize,
    tokens: &[u32],
    logits: &[Vec<f32>],
    label: &str,
) {
    let model = tiny_model();
    let (want_tokens, want_logits) = reference_decode(&model, prompt, &greedy(max_tokens));
    assert_eq!(
        tokens,
        want_tokens.as_slice(),
        "{label}: tokens differ from the dense reference"
    );
    assert_eq!(
        logits.len(),
        want_logits.len(),
        "{label}: one logits row per token"
    );
    for (i, (got, want)) in logits.iter().zip(&want_logits).enumerate() {
        let diff = max_abs_diff(got, want);
        assert!(
            diff <= LOGITS_TOLERANCE,
            "{label}: token {i} logits differ by {diff}"
        );
    }
}

#[test]
fn paged_batched_engine_equals_sequential_dense_decoding() {
    for strategy in BatchStrategy::ALL {
        equals_sequential_dense_decoding(strategy);
    }
}

fn equals_sequential_dense_decoding(strategy: BatchStrategy) {
    let w = workload(40, 7);
    let config = EngineCoreConfig {
        batch_strategy: strategy,
        ..tight_config()
    };
    let mut core = EngineCore::new(config, Box::new(tiny_model())).expect("engine core");
    let total_blocks = core.kv_cache_stats().total_blocks;

    let mut order: Vec<usize> = (0..w.prompts.len()).collect();
    order.sort_by_key(|&i| w.arrivals[i]);
    let mut next = 0;
    let mut ids: HashMap<RequestId, usize> = HashMap::new();
    let mut done = HashMap::new();
    let mut step = 0u64;
    while done.len() < w.prompts.len() {
        while next < order.len() && (w.arrivals[order[next]] <= step || !core.has_unfinished()) {
            let i = order[next];
            let request =
                EngineCoreRequest::new(w.prompts[i].clone()).with_params(greedy(w.max_tokens[i]));
            ids.insert(core.add_request(request).expect("request accepted"), i);
            next += 1;
        }
        for output in core.step() {
            if let Some(out) = output.finished {
                done.insert(ids[&out.request_id], out);
            }
        }
        step += 1;
        assert!(step < 10_000, "the engine stopped making progress");
    }

    for (i, out) in &done {
        assert!(matches!(
            out.finish_reason,
            FinishReason::Stop | FinishReason::Length
        ));
        check_against_reference(
            &w.prompts[*i],
            w.max_tokens[*i],
            &out.tokens,
            &out.logits,
            &format!("{strategy:?} request {i}"),
        );
    }
    let stats = core.kv_cache_stats();
    assert_eq!(
        stats.free_blocks, total_blocks,
        "every block is back on the free list"
    );
    let metrics = core.metrics().snapshot();
    assert!(
        metrics.chunked_prefills > 0,
        "the workload must exercise chunked prefill"
    );
    assert!(
        metrics.preemptions > 0,
        "the workload must exercise preemption"
    );
    assert!(
        metrics.prefix_hit_tokens > 0,
        "the workload must exercise prefix reuse"
    );
    assert!(
        metrics.avg_batch_size > 1.5,
        "sequences must actually be batched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threaded_engine_with_requests_at_random_times_equals_reference() {
    let w = workload(24, 99);
    let engine = Arc::new(Engine::new(tight_config(), Box::new(tiny_model())).expect("engine"));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..w.prompts.len() {
        let engine = engine.clone();
        let (prompt, max_tokens, delay) = (w.prompts[i].clone(), w.max_tokens[i], w.arrivals[i]);
        tasks.spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let request = EngineCoreRequest::new(prompt).with_params(greedy(max_tokens));
            (i, engine.generate(request).await)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, result) = joined.expect("task");
        let out = result.expect("generation succeeds");
        check_against_reference(
            &w.prompts[i],
            w.max_tokens[i],
            &out.tokens,
            &out.logits,
            &format!("request {i}"),
        );
    }
    let stats = engine.kv_cache_stats().await.expect("status");
    assert_eq!(
        stats.free_blocks, stats.total_blocks,
        "every block is back on the free list"
    );
}
