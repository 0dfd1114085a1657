//! The engine keeps a hybrid model's convolution state right under continuous batching:
//! whatever the arrivals, chunked prefill, preemption, aborts, beam forks and failed
//! batches, the LFM2 fixture (tests/fixtures/lfm2) gives the same tokens and logits as
//! running its requests one at a time, and every state and block comes back.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use common::{greedy, greedy_on_engine, max_abs_diff, tight_config, workload};
use izwi_core::engine::{
    BatchStrategy, ConvStateShape, EngineCore, EngineCoreConfig, EngineCoreRequest, EngineError,
    EngineOutput, FinishReason, ForwardBatch, GenerationParams, LayerKvCache, ModelExecutor,
    ModelSpec, RequestId,
};
use izwi_core::models::lfm2::Lfm2;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TOLERANCE: f32 = 1e-4;

fn model() -> Lfm2 {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lfm2/tiny");
    Lfm2::from_dir(&dir, DType::F32, &Device::Cpu).expect("fixture loads")
}

/// Each `(prompt, max_tokens)` run alone, one after another.
fn one_at_a_time(cases: &[(Vec<u32>, usize)]) -> Vec<EngineOutput> {
    let config = EngineCoreConfig {
        max_batch_size: 1,
        ..EngineCoreConfig::default()
    };
    greedy_on_engine(model(), config, cases)
}

fn assert_same(got: &EngineOutput, want: &EngineOutput, label: &str) {
    assert_eq!(got.tokens, want.tokens, "{label}: tokens");
    assert_eq!(got.logits.len(), want.logits.len(), "{label}");
    for (i, (g, w)) in got.logits.iter().zip(&want.logits).enumerate() {
        let diff = max_abs_diff(g, w);
        assert!(
            diff <= TOLERANCE,
            "{label}: token {i} logits differ by {diff}"
        );
    }
}

fn ignoring_eos(max_tokens: usize) -> GenerationParams {
    GenerationParams {
        ignore_eos: true,
        ..greedy(max_tokens)
    }
}

#[test]
fn random_arrivals_chunking_preemption_and_aborts_equal_one_at_a_time() {
    for strategy in BatchStrategy::ALL {
        equals_one_at_a_time(strategy);
    }
}

fn equals_one_at_a_time(strategy: BatchStrategy) {
    let w = workload(30, 11);
    let cases: Vec<(Vec<u32>, usize)> = w
        .prompts
        .iter()
        .cloned()
        .zip(w.max_tokens.iter().copied())
        .collect();
    let reference = one_at_a_time(&cases);

    let config = EngineCoreConfig {
        batch_strategy: strategy,
        ..tight_config()
    };
    let mut core = EngineCore::new(config, Box::new(model())).expect("engine");
    let total_blocks = core.kv_cache_stats().total_blocks;
    let mut rng = StdRng::seed_from_u64(5);
    // Every fifth request is aborted at a random step after it arrives.
    let abort_at: HashMap<usize, u64> = (0..cases.len())
        .filter(|i| i % 5 == 3)
        .map(|i| (i, w.arrivals[i] + rng.random_range(0..12)))
        .collect();
    let mut ids: HashMap<usize, RequestId> = HashMap::new();
    let mut done: HashMap<usize, EngineOutput> = HashMap::new();
    let mut step = 0u64;
    while done.len() < cases.len() {
        for (i, (prompt, max_tokens)) in cases.iter().enumerate() {
            let due = w.arrivals[i] <= step || !core.has_unfinished();
            if due && !ids.contains_key(&i) {
                let request =
                    EngineCoreRequest::new(prompt.clone()).with_params(ignoring_eos(*max_tokens));
                ids.insert(i, core.add_request(request).expect("accepted"));
            }
        }
        for (&i, &at) in &abort_at {
            if at == step && !done.contains_key(&i) {
                if let Some(out) = ids.get(&i).and_then(|id| core.abort_request(id)) {
                    done.insert(i, out.finished.expect("an abort finishes"));
                }
            }
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            let i = ids
                .iter()
                .find(|(_, id)| **id == out.request_id)
                .map(|(i, _)| *i)
                .expect("known request");
            done.insert(i, out);
        }
        step += 1;
        assert!(step < 10_000, "the engine stopped making progress");
    }

    let mut aborted = 0;
    for (i, out) in &done {
        let label = format!("{strategy:?} request {i}");
        if out.finish_reason == FinishReason::Aborted {
            aborted += 1;
            // What it produced before the abort is a prefix of the reference.
            let want = &reference[*i];
            assert_eq!(out.tokens, want.tokens[..out.tokens.len()], "{label}");
            continue;
        }
        assert_same(out, &reference[*i], &label);
    }
    assert!(aborted > 0, "the workload aborts requests under way");
    assert_eq!(core.kv_cache_stats().free_blocks, total_blocks);
    assert_eq!(core.num_conv_states(), 0, "every convolution state freed");
    let metrics = core.metrics().snapshot();
    assert!(metrics.chunked_prefills > 0, "chunked prefill happened");
    assert!(metrics.preemptions > 0, "preemption happened");
    assert!(metrics.avg_batch_size > 1.5, "sequences were batched");
    assert_eq!(metrics.prefix_hit_tokens, 0, "no prefix cache for hybrids");
}

/// Beam search forks copy their parent's state: the best beam of each search (batched
/// with the others) has the log-probabilities its tokens have when scored afresh.
#[test]
fn beam_forks_carry_the_convolution_state() {
    let w = workload(6, 3);
    let config = EngineCoreConfig {
        max_batch_size: 16,
        block_size: 4,
        chunked_prefill_threshold: 8,
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(model())).expect("engine");
    let mut ids = HashMap::new();
    for (i, prompt) in w.prompts.iter().enumerate() {
        let params = GenerationParams {
            max_tokens: 10,
            ignore_eos: true,
            beam_width: 2 + i % 3,
            ..GenerationParams::default()
        };
        let request = EngineCoreRequest::new(prompt.clone()).with_params(params);
        ids.insert(core.add_request(request).expect("accepted"), i);
    }
    let mut best: Vec<Option<EngineOutput>> = vec![None; w.prompts.len()];
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            let n = ids[&out.request_id];
            best[n] = Some(out);
        }
    }
    assert_eq!(core.num_conv_states(), 0, "every beam's state freed");

    // Every prefix of every best beam, scored in one engine of its own.
    let mut scoring =
        EngineCore::new(EngineCoreConfig::default(), Box::new(model())).expect("engine");
    let mut prefixes = HashMap::new();
    for (i, out) in best.iter().enumerate() {
        let out = out.as_ref().expect("finished");
        assert_eq!(out.tokens.len(), 10);
        for k in 0..out.tokens.len() {
            let mut context = w.prompts[i].clone();
            context.extend_from_slice(&out.tokens[..k]);
            let request = EngineCoreRequest::new(context).with_params(ignoring_eos(1));
            prefixes.insert(scoring.add_request(request).expect("accepted"), (i, k));
        }
    }
    while scoring.has_unfinished() {
        for out in scoring.step().into_iter().filter_map(|o| o.finished) {
            let (i, k) = prefixes[&out.request_id];
            let beam = best[i].as_ref().expect("finished");
            let token = beam.tokens[k] as usize;
            let row = &out.logits[0];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let norm = row.iter().map(|x| (x - max).exp()).sum::<f32>().ln() + max;
            let want = row[token] - norm;
            let got = beam.logprobs[k];
            assert!(
                (got - want).abs() <= TOLERANCE,
                "request {i}, token {k}: log-probability {got} in the search, {want} scored afresh"
            );
        }
    }
}

/// Beam searches on a cache small enough to preempt their beams end with what they
/// find on a roomy one.
#[test]
fn beams_preempted_and_recomputed_find_the_same_best_beam() {
    let w = workload(6, 3);
    let width = |i: usize| 2 + i % 3;
    let run = |config: EngineCoreConfig| -> (Vec<EngineOutput>, u64) {
        let mut core = EngineCore::new(config, Box::new(model())).expect("engine");
        let mut ids = HashMap::new();
        for (i, prompt) in w.prompts.iter().enumerate() {
            let params = GenerationParams {
                max_tokens: 8,
                ignore_eos: true,
                beam_width: width(i),
                ..GenerationParams::default()
            };
            let request = EngineCoreRequest::new(prompt.clone()).with_params(params);
            ids.insert(core.add_request(request).expect("accepted"), i);
        }
        let mut outs: Vec<Option<EngineOutput>> = vec![None; w.prompts.len()];
        let mut steps = 0;
        while core.has_unfinished() {
            for out in core.step().into_iter().filter_map(|o| o.finished) {
                let n = ids[&out.request_id];
                outs[n] = Some(out);
            }
            steps += 1;
            assert!(steps < 10_000, "the engine stopped making progress");
        }
        assert_eq!(core.num_conv_states(), 0, "every beam's state freed");
        let preemptions = core.metrics().snapshot().preemptions;
        (
            outs.into_iter().map(|o| o.expect("finished")).collect(),
            preemptions,
        )
    };
    let (roomy, _) = run(EngineCoreConfig {
        max_batch_size: 16,
        ..EngineCoreConfig::default()
    });
    // The smallest cache that takes every search (hybrids have no prefix cache, so
    // each beam may need its whole context in blocks of its own).
    let num_blocks = w
        .prompts
        .iter()
        .enumerate()
        .map(|(i, p)| width(i) * (p.len() + 8).div_ceil(4))
        .max();
    let (tight, preemptions) = run(EngineCoreConfig {
        max_batch_size: 8,
        block_size: 4,
        num_blocks,
        ..tight_config()
    });
    assert!(
        preemptions > 0,
        "the cache is small enough to preempt beams"
    );
    for (i, (t, r)) in tight.iter().zip(&roomy).enumerate() {
        assert_eq!(t.tokens, r.tokens, "request {i}");
        assert!(
            max_abs_diff(&t.logprobs, &r.logprobs) <= TOLERANCE,
            "request {i}"
        );
    }
}

/// Without a prefix cache a preempted beam recomputes its prompt into blocks of its
/// own, so a search whose beams cannot all hold their whole contexts at once is refused
/// when added: it could keep preempting its own beams (six searches of widths 2 to 4
/// that the shared-prompt count let into 40 blocks of 4 tokens never finished).
#[test]
fn a_search_whose_beams_cannot_all_fit_whole_is_refused() {
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(40),
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(model())).expect("engine");
    let params = |beam_width| GenerationParams {
        max_tokens: 8,
        beam_width,
        ..GenerationParams::default()
    };
    // 88 tokens are 22 blocks: one beam fits, four beams sharing the prompt's blocks
    // would (22 + 3 · 3), four whole contexts do not (88).
    let prompt: Vec<u32> = (1..=80).collect();
    let wide = EngineCoreRequest::new(prompt.clone()).with_params(params(4));
    assert!(matches!(
        core.add_request(wide),
        Err(EngineError::RequestTooLarge {
            needed_blocks: 88,
            ..
        })
    ));
    let narrow = EngineCoreRequest::new(prompt[..30].to_vec()).with_params(params(4));
    assert!(core.add_request(narrow).is_ok());
}

/// The fixture, failing any batched step that holds `POISON` after running it (so the
/// convolution state of every sequence in it has already moved on).
struct FailsAfterRunning(Lfm2);

const POISON: u32 = 255;

impl ModelExecutor for FailsAfterRunning {
    fn spec(&self) -> &ModelSpec {
        self.0.spec()
    }

    fn conv_state_shape(&self) -> Option<ConvStateShape> {
        self.0.conv_state_shape()
    }

    fn execute(
        &mut self,
        batch: &ForwardBatch,
        kv_cache: &[LayerKvCache],
    ) -> candle_core::Result<Tensor> {
        let logits = self.0.execute(batch, kv_cache)?;
        if batch.sequences.iter().any(|s| s.tokens.contains(&POISON)) {
            candle_core::bail!("poisoned batch");
        }
        Ok(logits)
    }
}

#[test]
fn a_failed_batch_is_retried_from_the_state_before_it() {
    let prompts: Vec<Vec<u32>> = vec![
        (10..30).collect(),
        vec![5, 6, 7],
        vec![POISON, 3, 4],
        (40..49).collect(),
    ];
    let cases: Vec<(Vec<u32>, usize)> = prompts.iter().map(|p| (p.clone(), 8)).collect();
    let reference = one_at_a_time(&cases);
    let config = EngineCoreConfig {
        block_size: 4,
        chunked_prefill_threshold: 8,
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(FailsAfterRunning(model()))).expect("engine");
    let mut ids = HashMap::new();
    for (i, (prompt, max_tokens)) in cases.iter().enumerate() {
        let request = EngineCoreRequest::new(prompt.clone()).with_params(ignoring_eos(*max_tokens));
        ids.insert(core.add_request(request).expect("accepted"), i);
    }
    let mut done = HashMap::new();
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            done.insert(ids[&out.request_id], out);
        }
    }
    assert!(matches!(done[&2].finish_reason, FinishReason::Failed(_)));
    for i in [0, 1, 3] {
        assert_same(&done[&i], &reference[i], &format!("request {i}"));
    }
    assert_eq!(core.num_conv_states(), 0);
}
