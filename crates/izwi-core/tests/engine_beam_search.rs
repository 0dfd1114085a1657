//! Beam search in the engine equals a plain beam search over the dense path, however
//! the beams are batched with other requests, split into blocks (copied when a fork
//! shares a half-full one), preempted or aborted; every block comes back.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use izwi_core::engine::{
    BatchStrategy, Engine, EngineCore, EngineCoreConfig, EngineCoreRequest, EngineOutput,
    FinishReason, GenerationParams, RequestId,
};
use izwi_core::models::llama::{DenseKvCache, Llama};
use izwi_core::models::shared::sampling::top_logprobs;

const LOGPROB_TOLERANCE: f32 = 1e-4;

struct Case {
    prompt: Vec<u32>,
    params: GenerationParams,
}

fn logprobs_after(model: &Llama, tokens: &[u32]) -> Vec<f32> {
    let mut cache = DenseKvCache::default();
    let logits = model
        .forward_dense(tokens, &mut cache)
        .expect("dense forward");
    logits.to_vec1::<f32>().expect("logits row")
}

/// Beam search as OpenAI's decoder describes it, each beam recomputed from scratch on
/// the dense path: rank every beam's `width + 1` likeliest continuations together by
/// summed log-probability; keep `width` that do not end, set aside those that end while
/// fewer than `width` have; stop when `width` have ended or the length runs out; the
/// best by log-probability per token (the end token excluded) wins.
fn reference_beam_search(model: &Llama, case: &Case) -> (Vec<u32>, Vec<f32>, FinishReason) {
    let p = &case.params;
    let width = p.beam_width;
    let ends = |t: u32| t == 0 || p.stop_token_ids.contains(&t);
    let mut beams: Vec<(Vec<u32>, Vec<f32>)> = vec![(Vec::new(), Vec::new())];
    let mut finished: Vec<(Vec<u32>, Vec<f32>, bool)> = Vec::new();
    let sum = |l: &[f32]| l.iter().map(|&x| f64::from(x)).sum::<f64>();
    for step in 1..=p.max_tokens {
        let mut ranked = Vec::new();
        for (tokens, logprobs) in &beams {
            let mut context = case.prompt.clone();
            context.extend_from_slice(tokens);
            let row = logprobs_after(model, &context);
            for (token, logprob) in top_logprobs(&row, width + 1) {
                let mut t = tokens.clone();
                t.push(token);
                let mut l = logprobs.clone();
                l.push(logprob);
                ranked.push((sum(&l), t, l));
            }
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        beams.clear();
        for (_, tokens, logprobs) in ranked {
            if beams.len() == width {
                break;
            }
            let last = *tokens.last().expect("one token at least");
            if !ends(last) {
                beams.push((tokens, logprobs));
            } else if finished.len() < width {
                finished.push((tokens, logprobs, true));
            }
        }
        if finished.len() >= width || beams.is_empty() || step == p.max_tokens {
            break;
        }
    }
    if finished.is_empty() {
        finished = beams.into_iter().map(|(t, l)| (t, l, false)).collect();
    }
    let rank = |(t, l, ended): &(Vec<u32>, Vec<f32>, bool)| {
        sum(l) / (t.len() - usize::from(*ended)).max(1) as f64
    };
    let best = finished
        .into_iter()
        .max_by(|a, b| rank(a).total_cmp(&rank(b)))
        .expect("a hypothesis");
    let reason = if best.2 {
        FinishReason::Stop
    } else {
        FinishReason::Length
    };
    (best.0, best.1, reason)
}

fn check(model: &Llama, case: &Case, out: &EngineOutput, label: &str) {
    let (tokens, logprobs, reason) = reference_beam_search(model, case);
    assert_eq!(
        out.tokens, tokens,
        "{label}: tokens differ from the reference"
    );
    assert_eq!(out.finish_reason, reason, "{label}: finish reason");
    let diff = max_abs_diff(&out.logprobs, &logprobs);
    assert!(
        diff <= LOGPROB_TOLERANCE,
        "{label}: logprobs differ by {diff}"
    );
}

/// Beam requests of widths 2 to 5, some with a stop token that the search meets early
/// (the second likeliest first token), mixed with greedy requests.
fn cases(model: &Llama) -> Vec<Case> {
    let w = workload(14, 31);
    w.prompts
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            let prompt = prompt[..prompt.len().min(40)].to_vec();
            let beam_width = if i % 3 == 2 { 1 } else { 2 + i % 4 };
            let stop_token_ids = if i % 2 == 0 {
                let first = top_logprobs(&logprobs_after(model, &prompt), 2);
                vec![first[1].0]
            } else {
                Vec::new()
            };
            Case {
                prompt,
                params: GenerationParams {
                    max_tokens: 6 + i % 7,
                    beam_width,
                    stop_token_ids,
                    ..GenerationParams::default()
                },
            }
        })
        .collect()
}

#[test]
fn beams_in_the_engine_equal_a_dense_beam_search() {
    let model = tiny_model();
    let cases = cases(&model);
    for strategy in BatchStrategy::ALL {
        beams_equal_the_reference(&model, &cases, strategy);
    }
}

fn beams_equal_the_reference(model: &Llama, cases: &[Case], strategy: BatchStrategy) {
    let config = EngineCoreConfig {
        num_blocks: Some(20),
        batch_strategy: strategy,
        ..tight_config()
    };
    let mut core = EngineCore::new(config, Box::new(tiny_model())).expect("engine core");
    let total_blocks = core.kv_cache_stats().total_blocks;
    let mut ids: HashMap<RequestId, usize> = HashMap::new();
    let mut done: HashMap<usize, EngineOutput> = HashMap::new();
    let mut next = 0;
    let mut step = 0;
    while done.len() < cases.len() {
        // Two arrivals every other step, so searches start at different points and
        // crowd the cache.
        if step % 2 == 0 {
            for case in cases.iter().skip(next).take(2) {
                let request =
                    EngineCoreRequest::new(case.prompt.clone()).with_params(case.params.clone());
                ids.insert(core.add_request(request).expect("accepted"), next);
                next += 1;
            }
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            done.insert(ids[&out.request_id], out);
        }
        step += 1;
        assert!(step < 10_000, "the engine stopped making progress");
    }
    for (i, case) in cases.iter().enumerate() {
        let out = &done[&i];
        if case.params.beam_width == 1 {
            let (tokens, _) = reference_decode(model, &case.prompt, &case.params);
            let cut = tokens
                .iter()
                .position(|t| case.params.stop_token_ids.contains(t))
                .map_or(tokens.len(), |p| p + 1);
            assert_eq!(out.tokens, tokens[..cut], "{strategy:?} greedy request {i}");
        } else {
            check(model, case, out, &format!("{strategy:?} request {i}"));
        }
    }
    assert_eq!(
        core.kv_cache_stats().free_blocks,
        total_blocks,
        "every block is back"
    );
    let metrics = core.metrics().snapshot();
    assert!(metrics.preemptions > 0, "the workload must preempt beams");
    assert!(metrics.avg_batch_size > 2.0, "beams must run batched");
}

#[test]
fn an_aborted_search_ends_once_and_frees_every_beam() {
    let model = tiny_model();
    let case = &cases(&model)[1];
    let mut core = EngineCore::new(tight_config(), Box::new(tiny_model())).expect("engine core");
    let total_blocks = core.kv_cache_stats().total_blocks;
    let id = core
        .add_request(EngineCoreRequest::new(case.prompt.clone()).with_params(case.params.clone()))
        .expect("accepted");
    for _ in 0..8 {
        assert!(
            core.step().is_empty(),
            "a search says nothing until it ends"
        );
    }
    assert!(core.num_running() > 1, "the search has forked beams");
    let out = core
        .abort_request(&id)
        .expect("the search is in the engine");
    let out = out.finished.expect("the abort ends the request");
    assert_eq!(out.request_id, id);
    assert_eq!(out.finish_reason, FinishReason::Aborted);
    assert!(!core.has_unfinished(), "no beam is left behind");
    assert_eq!(core.kv_cache_stats().free_blocks, total_blocks);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_through_the_threaded_engine_equal_the_reference() {
    let model = tiny_model();
    let cases = Arc::new(cases(&model));
    let engine = Arc::new(Engine::new(tight_config(), Box::new(tiny_model())).expect("engine"));
    let mut tasks = tokio::task::JoinSet::new();
    for i in (0..cases.len()).filter(|&i| cases[i].params.beam_width > 1) {
        let (engine, cases) = (engine.clone(), cases.clone());
        tasks.spawn(async move {
            let request = EngineCoreRequest::new(cases[i].prompt.clone())
                .with_params(cases[i].params.clone());
            (i, engine.generate(request).await)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (i, result) = joined.expect("task");
        let out = result.expect("the search succeeds");
        check(&model, &cases[i], &out, &format!("request {i}"));
    }
    let stats = engine.kv_cache_stats().await.expect("status");
    assert_eq!(stats.free_blocks, stats.total_blocks);
}

#[test]
fn beam_requests_the_engine_cannot_serve_are_refused_with_the_reason() {
    let mut core = EngineCore::new(tight_config(), Box::new(tiny_model())).expect("engine core");
    let refused = |core: &mut EngineCore, params: GenerationParams, streaming: bool| {
        let request = EngineCoreRequest::new(vec![1, 2, 3])
            .with_params(params)
            .with_streaming(streaming);
        core.add_request(request).expect_err("refused").to_string()
    };
    let beams = |beam_width| GenerationParams {
        max_tokens: 4,
        beam_width,
        ..GenerationParams::default()
    };
    let too_wide = refused(&mut core, beams(7), false);
    assert!(
        too_wide.contains("more beams than the engine's batch holds"),
        "{too_wide}"
    );
    let hot = GenerationParams {
        temperature: 0.7,
        ..beams(3)
    };
    assert!(refused(&mut core, hot, false).contains("temperature"));
    assert!(refused(&mut core, beams(3), true).contains("streaming"));
    assert!(refused(&mut core, beams(0), false).contains("at least 1"));
}

#[test]
fn searches_on_the_smallest_cache_they_are_accepted_into_end_and_give_every_block_back() {
    // No prefix cache, and just the blocks the request's bound asks for: the search
    // either equals the reference or, should its beams not fit at once, fails with the
    // reason (`ScheduleResult::stuck`; the scheduler's unit test forces that case).
    // It never waits forever, and every block comes back.
    let model = tiny_model();
    for (width, num_blocks) in [(5, 18), (4, 15), (3, 12)] {
        let config = EngineCoreConfig {
            num_blocks: Some(num_blocks),
            enable_prefix_caching: false,
            ..tight_config()
        };
        let mut core = EngineCore::new(config, Box::new(tiny_model())).expect("engine core");
        let case = Case {
            prompt: (1..31).collect(),
            params: GenerationParams {
                max_tokens: 12,
                beam_width: width,
                ..GenerationParams::default()
            },
        };
        let request = EngineCoreRequest::new(case.prompt.clone()).with_params(case.params.clone());
        core.add_request(request).expect("fits the whole cache");
        let mut out = None;
        for _ in 0..1000 {
            if let Some(done) = core.step().into_iter().find_map(|o| o.finished) {
                out = Some(done);
                break;
            }
        }
        let out = out.unwrap_or_else(|| panic!("width {width}: the search never ended"));
        match &out.finish_reason {
            FinishReason::Failed(message) => {
                assert!(
                    message.contains("cannot hold this request's beams"),
                    "{message}"
                )
            }
            _ => check(&model, &case, &out, &format!("width {width}")),
        }
        assert!(!core.has_unfinished());
        assert_eq!(
            core.kv_cache_stats().free_blocks,
            num_blocks,
            "width {width}: every block is back"
        );
    }
}
