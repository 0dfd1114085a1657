//! The step loop's body: schedule → execute → process.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use super::beam_search::{BeamSearch, Hypothesis};
use super::config::EngineCoreConfig;
use super::conv_state::ConvStateCache;
use super::error::{EngineError, Result};
use super::executor::{ForwardBatch, ModelExecutor, SequenceChunk};
use super::kv_cache::{KvCacheManager, KvCacheStats};
use super::metrics::{MetricsCollector, Outcome};
use super::output::{OutputProcessor, StreamingOutput};
use super::request::{EngineCoreRequest, RequestProcessor};
use super::scheduler::{ScheduleResult, Scheduler};
use super::sequence::{LiveInput, Sequence};
use super::types::{FinishReason, RequestId};
use crate::models::shared::sampling::{log_softmax_at, top_logprobs};

/// Owns the scheduler, the KV cache and the model; advances every request by one step
/// at a time. Single-threaded: [`Engine`](super::Engine) runs it on its own thread.
pub struct EngineCore {
    scheduler: Scheduler,
    kv_cache: KvCacheManager,
    executor: Box<dyn ModelExecutor>,
    requests: RequestProcessor,
    outputs: OutputProcessor,
    metrics: Arc<MetricsCollector>,
    /// Searches of the requests decoded by beam search, by request id.
    beams: HashMap<RequestId, BeamSearch>,
    eos_token_ids: Vec<u32>,
    max_seq_len: usize,
    /// The last step ran nothing, preempted nothing and failed nothing.
    idle: bool,
}

impl EngineCore {
    pub fn new(config: EngineCoreConfig, executor: Box<dyn ModelExecutor>) -> Result<Self> {
        config.validate()?;
        let spec = executor.spec().clone();
        let bytes_per_block = spec.kv_cache.bytes_per_block(config.block_size);
        let max_seq_len = config.max_seq_len.min(spec.max_position_embeddings);
        if spec.max_position_embeddings == 0 {
            return Err(EngineError::Config(
                "the model declares a context of 0 positions (its max_position_embeddings \
                 or context_length)"
                    .into(),
            ));
        }
        // Running sequences can never hold more than a full batch of full contexts;
        // memory beyond that would sit idle, so the byte limit is a ceiling, not a target.
        let useful_blocks = config.max_batch_size * max_seq_len.div_ceil(config.block_size);
        let num_blocks = config
            .num_blocks
            .unwrap_or((config.kv_cache_bytes / bytes_per_block.max(1)).min(useful_blocks));
        if num_blocks == 0 {
            return Err(EngineError::Config(format!(
                "kv_cache_bytes ({}) is smaller than one block of this model ({bytes_per_block} bytes)",
                config.kv_cache_bytes
            )));
        }
        let mut kv_cache = KvCacheManager::new(
            num_blocks,
            config.block_size,
            spec.kv_cache,
            &spec.device,
            config.enable_prefix_caching,
        )?;
        if let Some(shape) = executor.conv_state_shape() {
            let conv = ConvStateCache::new(shape, config.max_batch_size, &spec.device)?;
            kv_cache = kv_cache.with_conv_state(conv);
        }
        tracing::info!(
            num_blocks,
            block_size = config.block_size,
            cache_mib = num_blocks * bytes_per_block / (1 << 20),
            "KV cache allocated"
        );
        let mut requests = RequestProcessor::new(
            spec.vocab_size,
            max_seq_len,
            config.block_size,
            num_blocks,
            config.max_batch_size,
            spec.requires_audio,
        );
        // Hybrids have no prefix cache (see `KvCacheManager::with_conv_state`).
        if kv_cache.conv_state().is_some() {
            requests = requests.without_shared_beam_prompts();
        }
        Ok(Self {
            scheduler: Scheduler::new(&config),
            requests,
            outputs: OutputProcessor::new(spec.audio_seconds_per_token),
            kv_cache,
            executor,
            metrics: Arc::new(MetricsCollector::default()),
            beams: HashMap::new(),
            eos_token_ids: spec.eos_token_ids,
            max_seq_len,
            idle: false,
        })
    }

    /// Validates a request and queues it.
    pub fn add_request(&mut self, request: EngineCoreRequest) -> Result<RequestId> {
        let request = self.requests.process(request)?;
        if request.live_audio && !self.executor.takes_live_audio() {
            return Err(EngineError::InvalidRequest(format!(
                "{}: this model needs a request's audio whole, not live",
                request.id
            )));
        }
        if self.scheduler.contains(&request.id) {
            return Err(EngineError::DuplicateRequest(request.id));
        }
        let id = request.id.clone();
        if request.params.beam_width > 1 {
            self.beams.insert(
                id.clone(),
                BeamSearch::new(id.clone(), request.params.beam_width),
            );
        }
        self.scheduler.add_request(request);
        Ok(id)
    }

    /// More audio of a live request; `ended` closes its audio. Returns the request's
    /// final output when this ends it: the audio ended where the text already is, or
    /// the model failed on the audio (that request alone fails).
    pub fn append_audio(
        &mut self,
        id: &RequestId,
        samples: &[f32],
        ended: bool,
    ) -> Result<Option<StreamingOutput>> {
        let invalid = |message: &str| Err(EngineError::InvalidRequest(format!("{id}: {message}")));
        let seq = self
            .scheduler
            .get_mut(id)
            .ok_or_else(|| EngineError::UnknownRequest(id.clone()))?;
        match seq.live_input {
            None => return invalid("the request's audio is not live"),
            Some(input) if input.ended => return invalid("the request's audio has already ended"),
            Some(_) => {}
        }
        if samples.iter().any(|s| !s.is_finite()) {
            return invalid("the audio has samples that are not finite numbers");
        }
        let appended = catch_unwind(AssertUnwindSafe(|| {
            self.executor.append_audio(id, samples, ended)
        }));
        let reason = match appended {
            Ok(Ok(positions)) => {
                let seq = self
                    .scheduler
                    .get_mut(id)
                    .ok_or_else(|| EngineError::UnknownRequest(id.clone()))?;
                seq.live_input = Some(LiveInput { positions, ended });
                if !seq.input_exhausted() {
                    return Ok(None);
                }
                FinishReason::Stop
            }
            Ok(Err(e)) => FinishReason::Failed(format!("model error: {e}")),
            Err(panic) => {
                FinishReason::Failed(format!("model panicked: {}", panic_message(&panic)))
            }
        };
        let seq = self
            .scheduler
            .abort_request(id, &mut self.kv_cache)
            .ok_or_else(|| EngineError::UnknownRequest(id.clone()))?;
        Ok(Some(self.finish(seq, Vec::new(), reason)))
    }

    /// Whether every request in the engine waits for more of its live audio: stepping
    /// would do nothing until some arrives.
    pub fn awaits_input(&self) -> bool {
        self.scheduler.awaits_input()
    }

    /// Whether the last step ran nothing and changed nothing: what could run waits for
    /// room that requests waiting for their live audio hold. Only a new command (audio,
    /// an abort) can change that.
    pub fn was_idle(&self) -> bool {
        self.idle
    }

    /// Stops a request wherever it is and frees its cache blocks at once. Returns its
    /// final output, or None if no such request is in the engine.
    pub fn abort_request(&mut self, id: &RequestId) -> Option<StreamingOutput> {
        if self.beams.contains_key(id) {
            return self.end_beams(id, None, FinishReason::Aborted);
        }
        let seq = self.scheduler.abort_request(id, &mut self.kv_cache)?;
        Some(self.finish(seq, Vec::new(), FinishReason::Aborted))
    }

    /// Aborts everything (engine shutdown).
    pub fn abort_all(&mut self) -> Vec<StreamingOutput> {
        let searches: Vec<RequestId> = self.beams.keys().cloned().collect();
        let mut outputs: Vec<StreamingOutput> = searches
            .iter()
            .filter_map(|id| self.end_beams(id, None, FinishReason::Aborted))
            .collect();
        for seq in self.scheduler.drain(&mut self.kv_cache) {
            outputs.push(self.finish(seq, Vec::new(), FinishReason::Aborted));
        }
        outputs
    }

    pub fn has_unfinished(&self) -> bool {
        self.scheduler.has_unfinished()
    }

    pub fn num_waiting(&self) -> usize {
        self.scheduler.num_waiting()
    }

    pub fn num_running(&self) -> usize {
        self.scheduler.num_running()
    }

    pub fn kv_cache_stats(&self) -> KvCacheStats {
        self.kv_cache.stats()
    }

    /// Sequences holding convolution state (hybrid models; 0 for others).
    pub fn num_conv_states(&self) -> usize {
        self.kv_cache
            .conv_state()
            .map_or(0, |conv| conv.num_allocated())
    }

    pub fn metrics(&self) -> Arc<MetricsCollector> {
        self.metrics.clone()
    }

    /// Runs one step and returns the output chunks it produced: one per sequence that
    /// generated a token or finished (streaming or not; the caller filters).
    ///
    /// On the CPU the step runs on a worker of rayon's pool: the hundreds of parallel
    /// operations of a step (every matmul, norm and attention) then start from inside
    /// the pool, where from the engine's own thread each would hand its work to the
    /// pool and sleep until it is done. That made Qwen3-TTS's decode 9–13% faster at
    /// batch 1 and 8 (docs/engine.md). A GPU's steps stay on the engine's thread.
    /// Executors must therefore not block their worker on other threads.
    pub fn step(&mut self) -> Vec<StreamingOutput> {
        if self.executor.spec().device.is_cpu() {
            rayon::scope(|_| self.step_on_this_thread())
        } else {
            self.step_on_this_thread()
        }
    }

    fn step_on_this_thread(&mut self) -> Vec<StreamingOutput> {
        let started = Instant::now();
        let schedule = self.scheduler.schedule(&mut self.kv_cache);
        self.idle = schedule.is_empty()
            && schedule.preempted_requests.is_empty()
            && schedule.stuck.is_none();
        for id in &schedule.preempted_requests {
            for search in self.beams.values_mut() {
                search.forget(id);
            }
        }
        if let Some(id) = &schedule.stuck {
            return self.fail_stuck(id).into_iter().collect();
        }
        if schedule.is_empty() {
            return Vec::new();
        }
        let batch = self.build_batch(&schedule);
        let conv_saved = self.save_conv_state(&batch);
        let outputs = match self.execute(&batch) {
            Ok(logits) => self.process(&batch, logits),
            Err(message) if batch.sequences.len() == 1 => self.fail_batch(&batch, &message),
            Err(message) => {
                // Find the culprit: run each sequence alone so the others still go on.
                // Rewriting the same K/V into the same slots is harmless; convolution
                // state is updated, not rewritten, so it is put back first.
                tracing::warn!(
                    "batched step failed ({message}); retrying its sequences one by one"
                );
                let mut outputs = Vec::new();
                if let Err(message) = self.restore_conv_state(conv_saved) {
                    outputs.extend(self.fail_batch(&batch, &message));
                }
                for chunk in &batch.sequences {
                    if self.scheduler.running(&chunk.request_id).is_none() {
                        continue;
                    }
                    let single = ForwardBatch {
                        sequences: vec![chunk.clone()],
                        block_size: batch.block_size,
                        conv_state: batch.conv_state.clone(),
                    };
                    outputs.extend(match self.execute(&single) {
                        Ok(logits) => self.process(&single, logits),
                        Err(message) => self.fail_batch(&single, &message),
                    });
                }
                outputs
            }
        };
        self.metrics.record_step(
            batch.sequences.len(),
            started,
            schedule.preempted_requests.len(),
            schedule.chunked_prefills,
        );
        self.metrics
            .set_prefix_hit_tokens(self.kv_cache.stats().prefix_hit_tokens);
        outputs
    }

    fn build_batch(&mut self, schedule: &ScheduleResult) -> ForwardBatch {
        let sequences = schedule
            .scheduled()
            .filter_map(|s| {
                let seq = self.scheduler.running_mut(&s.request_id)?;
                let end = s.start_pos + s.num_tokens;
                Some(SequenceChunk {
                    request_id: s.request_id.clone(),
                    tokens: seq.tokens[s.start_pos..end].to_vec(),
                    start_pos: s.start_pos,
                    block_table: self.kv_cache.block_table(&s.request_id).to_vec(),
                    compute_logits: end == seq.len(),
                    audio: seq.audio.clone(),
                    alignment: seq.params.return_alignment,
                    conv_slot: self.kv_cache.conv_slot(&s.request_id),
                })
            })
            .collect();
        ForwardBatch {
            sequences,
            block_size: self.kv_cache.block_size(),
            conv_state: self
                .kv_cache
                .conv_state()
                .map_or_else(Vec::new, |conv| conv.layers().to_vec()),
        }
    }

    /// The convolution state of the batch's sequences before the step (hybrid models),
    /// so a failed batched step can be retried from it.
    fn save_conv_state(&self, batch: &ForwardBatch) -> Option<SavedConvState> {
        let conv = self.kv_cache.conv_state()?;
        let slots: Vec<u32> = batch.sequences.iter().filter_map(|s| s.conv_slot).collect();
        Some(
            conv.snapshot(&slots)
                .map(|rows| (slots, rows))
                .map_err(|e| format!("saving the convolution state failed: {e}")),
        )
    }

    fn restore_conv_state(&self, saved: Option<SavedConvState>) -> std::result::Result<(), String> {
        let (Some(conv), Some(saved)) = (self.kv_cache.conv_state(), saved) else {
            return Ok(());
        };
        let (slots, rows) = saved?;
        conv.restore(&slots, &rows)
            .map_err(|e| format!("restoring the convolution state failed: {e}"))
    }

    /// Runs the model, turning an error or a panic in model code into a message so a
    /// bad batch fails its own requests and not the engine.
    fn execute(&mut self, batch: &ForwardBatch) -> std::result::Result<Vec<Vec<f32>>, String> {
        let executor = &mut self.executor;
        let layers = self.kv_cache.layers();
        let result = catch_unwind(AssertUnwindSafe(|| {
            executor
                .execute(batch, layers)
                .and_then(|logits| logits.to_vec2::<f32>())
        }));
        let expected = batch.sequences.iter().filter(|s| s.compute_logits).count();
        match result {
            Ok(Ok(rows)) if rows.len() == expected => Ok(rows),
            Ok(Ok(rows)) => Err(format!(
                "the model returned {} logit rows for {expected} sequences",
                rows.len()
            )),
            Ok(Err(e)) => Err(format!("model error: {e}")),
            Err(panic) => Err(format!("model panicked: {}", panic_message(&panic))),
        }
    }

    fn process(&mut self, batch: &ForwardBatch, logits: Vec<Vec<f32>>) -> Vec<StreamingOutput> {
        let mut rows = logits.into_iter();
        let mut outputs = Vec::new();
        let mut searched: Vec<RequestId> = Vec::new();
        for chunk in &batch.sequences {
            let Some(seq) = self.scheduler.running_mut(&chunk.request_id) else {
                continue;
            };
            seq.num_computed += chunk.tokens.len();
            let row = chunk.compute_logits.then(|| rows.next()).flatten();
            if let Some(request) = seq.beam_of.clone() {
                // A beam samples nothing: its candidates wait for its siblings'.
                if let (Some(mut row), Some(search)) = (row, self.beams.get_mut(&request)) {
                    self.executor
                        .process_logits(&seq.tokens, seq.prompt_len, &mut row);
                    search.record(&seq.id, top_logprobs(&row, search.width + 1));
                    seq.first_token_at.get_or_insert_with(Instant::now);
                    if !searched.contains(&request) {
                        searched.push(request);
                    }
                }
                self.kv_cache
                    .cache_full_blocks(&seq.id, &seq.tokens, seq.num_computed);
                continue;
            }
            let mut sampled = None;
            if let Some(mut row) = row {
                let first = seq.tokens.len() == seq.prompt_len;
                if seq.params.return_logits || (seq.params.first_logits && first) {
                    seq.logits.push(row.clone());
                }
                self.executor
                    .process_logits(&seq.tokens, seq.prompt_len, &mut row);
                let processed = row.clone();
                let token = seq.sampler.sample(&mut row, &seq.tokens);
                seq.logprobs.push(log_softmax_at(&processed, token));
                if seq.params.top_logprobs > 0 {
                    seq.top_logprobs
                        .push(top_logprobs(&processed, seq.params.top_logprobs));
                }
                seq.tokens.push(token);
                seq.first_token_at.get_or_insert_with(Instant::now);
                sampled = Some((
                    token,
                    stop_reason(seq, token, &self.eos_token_ids, self.max_seq_len),
                ));
            }
            self.kv_cache
                .cache_full_blocks(&seq.id, &seq.tokens, seq.num_computed);
            match sampled {
                Some((token, Some(reason))) => {
                    if let Some(seq) = self
                        .scheduler
                        .finish_request(&chunk.request_id, &mut self.kv_cache)
                    {
                        outputs.push(self.finish(seq, vec![token], reason));
                    }
                }
                Some((token, None)) if seq.streaming => {
                    outputs.push(self.outputs.chunk(seq, vec![token]))
                }
                _ => {}
            }
        }
        for request in searched {
            outputs.extend(self.advance_beams(&request));
        }
        outputs
    }

    /// Once every live beam of a search has its candidates, chooses the continuations:
    /// a beam continued once takes its token itself, one continued more often is forked
    /// (sharing its blocks), one not continued is dropped. Ends the search when enough
    /// beams have ended or the length runs out, with the best hypothesis as the output.
    fn advance_beams(&mut self, request: &RequestId) -> Option<StreamingOutput> {
        let search = self.beams.get_mut(request)?;
        if !search.is_ready() {
            return None;
        }
        let scores: Vec<f64> = search
            .beams
            .iter()
            .map(|id| {
                self.scheduler.running(id).map_or(f64::NEG_INFINITY, |seq| {
                    seq.logprobs.iter().map(|&l| f64::from(l)).sum()
                })
            })
            .collect();
        let template = self.scheduler.running(&search.beams[0])?;
        let (stop_ids, ignore_eos) = (
            template.params.stop_token_ids.clone(),
            template.params.ignore_eos,
        );
        let eos = &self.eos_token_ids;
        let ends = |t: u32| (!ignore_eos && eos.contains(&t)) || stop_ids.contains(&t);
        let selection = search.select(&scores, ends);
        let hypothesis = |scheduler: &Scheduler, source: &RequestId, token: u32, logprob: f32| {
            let seq = scheduler.running(source)?;
            let mut tokens = seq.output_tokens().to_vec();
            tokens.push(token);
            let mut logprobs = seq.logprobs.clone();
            logprobs.push(logprob);
            Some((
                Hypothesis {
                    tokens,
                    logprobs,
                    ended: ends(token),
                },
                seq.output_tokens().len() + 1 >= seq.params.max_tokens
                    || seq.len() + 1 >= self.max_seq_len,
            ))
        };
        for e in &selection.ended {
            if let Some((h, _)) =
                hypothesis(&self.scheduler, &search.beams[e.source], e.token, e.logprob)
            {
                search.finished.push(h);
            }
        }
        let kept: Vec<(Hypothesis, bool)> = selection
            .kept
            .iter()
            .filter_map(|e| {
                hypothesis(&self.scheduler, &search.beams[e.source], e.token, e.logprob)
            })
            .collect();
        let out_of_length = kept.iter().any(|(_, at_limit)| *at_limit);
        if search.finished.len() >= search.width || kept.is_empty() || out_of_length {
            let candidates = if search.finished.is_empty() {
                kept.into_iter().map(|(h, _)| h).collect()
            } else {
                std::mem::take(&mut search.finished)
            };
            let best = BeamSearch::best(candidates);
            return self.end_beams(request, best, FinishReason::Stop);
        }

        // Beams not continued go first, so their blocks can serve the forks.
        let sources = search.beams.clone();
        for (i, source) in sources.iter().enumerate() {
            if !selection.kept.iter().any(|e| e.source == i) {
                self.scheduler.finish_request(source, &mut self.kv_cache);
                self.executor.release(source);
            }
        }
        // Then forks: a fork copies its source before the source takes its own token.
        let mut continued = vec![false; sources.len()];
        let mut next = Vec::with_capacity(selection.kept.len());
        let mut own_tokens = Vec::new();
        for e in &selection.kept {
            let source = &sources[e.source];
            if !std::mem::replace(&mut continued[e.source], true) {
                own_tokens.push(*e);
                next.push(source.clone());
                continue;
            }
            let Some(parent) = self.scheduler.running(source) else {
                continue;
            };
            let id = search.fork_id(request);
            let mut child = parent.fork(id.clone());
            child.tokens.push(e.token);
            child.logprobs.push(e.logprob);
            next.push(id.clone());
            if self.kv_cache.fork(source, &id, parent.num_computed).is_ok() {
                self.scheduler.insert_running(child);
            } else {
                // No block for its copy now: it waits and recomputes from the prefix cache.
                child.num_computed = 0;
                self.scheduler.requeue(child);
            }
        }
        search.beams = next;
        for e in own_tokens {
            if let Some(seq) = self.scheduler.running_mut(&sources[e.source]) {
                seq.tokens.push(e.token);
                seq.logprobs.push(e.logprob);
            }
        }
        None
    }

    /// Ends a beam search: frees every beam and answers for the request with `best`
    /// (stopped if it ended, cut by length if not), or with nothing and `reason`.
    fn end_beams(
        &mut self,
        request: &RequestId,
        best: Option<Hypothesis>,
        reason: FinishReason,
    ) -> Option<StreamingOutput> {
        let search = self.beams.remove(request)?;
        let mut carrier = None;
        for beam in &search.beams {
            if let Some(seq) = self.scheduler.abort_request(beam, &mut self.kv_cache) {
                self.executor.release(beam);
                carrier.get_or_insert(seq);
            }
        }
        let mut seq = carrier?;
        seq.id = request.clone();
        seq.tokens.truncate(seq.prompt_len);
        seq.logprobs.clear();
        let reason = match best {
            Some(best) => {
                seq.tokens.extend_from_slice(&best.tokens);
                seq.logprobs = best.logprobs;
                if best.ended {
                    FinishReason::Stop
                } else {
                    FinishReason::Length
                }
            }
            None => reason,
        };
        Some(self.finish(seq, Vec::new(), reason))
    }

    /// Fails the request of a sequence that can never be scheduled (see
    /// `ScheduleResult::stuck`): a beam search whose beams cannot all hold blocks at once.
    fn fail_stuck(&mut self, id: &RequestId) -> Option<StreamingOutput> {
        let request = self.scheduler.get(id)?.beam_of.clone();
        let message = "the KV cache cannot hold this request's beams at once: ask for fewer \
                       beams or give the engine more cache memory"
            .to_owned();
        match request {
            Some(request) => self.end_beams(&request, None, FinishReason::Failed(message)),
            None => {
                let seq = self.scheduler.abort_request(id, &mut self.kv_cache)?;
                Some(self.finish(seq, Vec::new(), FinishReason::Failed(message)))
            }
        }
    }

    fn fail_batch(&mut self, batch: &ForwardBatch, message: &str) -> Vec<StreamingOutput> {
        tracing::error!(
            requests = batch.sequences.len(),
            "request failed: {message}"
        );
        let mut outputs = Vec::new();
        for chunk in &batch.sequences {
            let search = self
                .scheduler
                .running(&chunk.request_id)
                .and_then(|seq| seq.beam_of.clone());
            if let Some(request) = search {
                let failed = FinishReason::Failed(message.to_owned());
                outputs.extend(self.end_beams(&request, None, failed));
                continue;
            }
            if let Some(seq) = self
                .scheduler
                .finish_request(&chunk.request_id, &mut self.kv_cache)
            {
                outputs.push(self.finish(
                    seq,
                    Vec::new(),
                    FinishReason::Failed(message.to_owned()),
                ));
            }
        }
        outputs
    }

    fn finish(&mut self, seq: Sequence, tokens: Vec<u32>, reason: FinishReason) -> StreamingOutput {
        let outcome = match reason {
            FinishReason::Aborted => Outcome::Aborted,
            FinishReason::Failed(_) => Outcome::Failed,
            FinishReason::Stop | FinishReason::Length => Outcome::Completed,
        };
        let generated = seq.output_tokens().len();
        let alignment = self.executor.take_alignment(&seq.id);
        self.executor.release(&seq.id);
        let output = self.outputs.finish(seq, tokens, reason, alignment);
        if let Some(done) = &output.finished {
            self.metrics.record_request(&done.stats, generated, outcome);
        }
        output
    }
}

/// The convolution-state rows of a batch's slots (in slot order), or why they could not
/// be read.
type SavedConvState = std::result::Result<(Vec<u32>, Vec<candle_core::Tensor>), String>;

fn stop_reason(
    seq: &Sequence,
    token: u32,
    eos_token_ids: &[u32],
    max_seq_len: usize,
) -> Option<FinishReason> {
    if (!seq.params.ignore_eos && eos_token_ids.contains(&token))
        || seq.params.stop_token_ids.contains(&token)
    {
        Some(FinishReason::Stop)
    } else if seq.output_tokens().len() >= seq.params.max_tokens || seq.len() >= max_seq_len {
        Some(FinishReason::Length)
    } else if seq.input_exhausted() {
        Some(FinishReason::Stop)
    } else {
        None
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
