//! Decides, each step, which sequences run and how many of their tokens.
//!
//! Running sequences go first, in policy order: decodes take the share of the step's
//! token budget the batch strategy gives them, then prefill chunks (cut to the chunk
//! size) what they need of the rest; waiting sequences are then admitted in policy
//! order while the batch, the budget and the cache allow, starting from the longest
//! cached prefix of their tokens; decodes not yet run take what is left. When a
//! running sequence needs a block and none is free, the lowest-ordered running
//! sequence not yet scheduled this step is preempted: its blocks are freed and it
//! returns to the waiting queue to be recomputed later. Under the priority policy a
//! waiting sequence that does not fit preempts running sequences of lower priority.

use std::cmp::Reverse;
use std::collections::{HashSet, VecDeque};

use super::batch_strategy::BatchStrategy;
use super::config::EngineCoreConfig;
use super::kv_cache::KvCacheManager;
use super::sequence::Sequence;
use super::types::{Priority, RequestId, SchedulingPolicy};

/// One sequence's share of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledRequest {
    pub request_id: RequestId,
    /// Tokens already in the cache; the step runs the next `num_tokens`.
    pub start_pos: usize,
    pub num_tokens: usize,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScheduleResult {
    /// Sequences running their last sampled token.
    pub decode_requests: Vec<ScheduledRequest>,
    /// Sequences running (a chunk of) their prompt, or recomputing after preemption.
    pub prefill_requests: Vec<ScheduledRequest>,
    /// Sequences preempted this step, back in the waiting queue.
    pub preempted_requests: Vec<RequestId>,
    pub total_tokens: usize,
    pub blocks_allocated: usize,
    /// Prefill chunks that did not reach the end of their sequence.
    pub chunked_prefills: usize,
    /// A waiting sequence that can never run: nothing ran or was preempted this step,
    /// so nothing will change. Only a beam search whose idle beams hold the blocks its
    /// waiting beam needs comes to this; the core fails its request.
    pub stuck: Option<RequestId>,
}

impl ScheduleResult {
    pub fn is_empty(&self) -> bool {
        self.decode_requests.is_empty() && self.prefill_requests.is_empty()
    }

    /// Decodes then prefills: the order of the step's batch.
    pub fn scheduled(&self) -> impl Iterator<Item = &ScheduledRequest> {
        self.decode_requests.iter().chain(&self.prefill_requests)
    }
}

pub struct Scheduler {
    policy: SchedulingPolicy,
    batch_strategy: BatchStrategy,
    max_batch_size: usize,
    max_tokens_per_step: usize,
    max_chunk_tokens: usize,
    enable_chunked_prefill: bool,
    /// Both queues are kept sorted by `order_key`.
    waiting: VecDeque<Sequence>,
    running: Vec<Sequence>,
    next_arrival: u64,
}

impl Scheduler {
    pub fn new(config: &EngineCoreConfig) -> Self {
        Self {
            policy: config.scheduling_policy,
            batch_strategy: config.batch_strategy,
            max_batch_size: config.max_batch_size,
            max_tokens_per_step: config.max_tokens_per_step,
            max_chunk_tokens: config.max_chunk_tokens(),
            enable_chunked_prefill: config.enable_chunked_prefill,
            waiting: VecDeque::new(),
            running: Vec::new(),
            next_arrival: 0,
        }
    }

    pub fn add_request(&mut self, request: super::request::EngineCoreRequest) {
        let seq = Sequence::new(request, self.next_arrival);
        self.next_arrival += 1;
        self.enqueue_waiting(seq);
    }

    pub fn contains(&self, id: &RequestId) -> bool {
        self.running
            .iter()
            .chain(&self.waiting)
            .any(|s| &s.id == id)
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Whether there are sequences and every one waits for live audio: no step can run
    /// until more arrives.
    pub fn awaits_input(&self) -> bool {
        self.has_unfinished()
            && self
                .running
                .iter()
                .chain(self.waiting.iter())
                .all(Sequence::awaits_input)
    }

    pub fn has_unfinished(&self) -> bool {
        !self.waiting.is_empty() || !self.running.is_empty()
    }

    /// A sequence, running or waiting.
    pub fn get(&self, id: &RequestId) -> Option<&Sequence> {
        self.running
            .iter()
            .chain(&self.waiting)
            .find(|s| &s.id == id)
    }

    pub fn running(&self, id: &RequestId) -> Option<&Sequence> {
        self.running.iter().find(|s| &s.id == id)
    }

    pub fn running_mut(&mut self, id: &RequestId) -> Option<&mut Sequence> {
        self.running.iter_mut().find(|s| &s.id == id)
    }

    /// A running or waiting sequence.
    pub fn get_mut(&mut self, id: &RequestId) -> Option<&mut Sequence> {
        self.running
            .iter_mut()
            .chain(self.waiting.iter_mut())
            .find(|s| &s.id == id)
    }

    /// Removes a running sequence that has finished and frees its blocks.
    pub fn finish_request(
        &mut self,
        id: &RequestId,
        kv_cache: &mut KvCacheManager,
    ) -> Option<Sequence> {
        let index = self.running.iter().position(|s| &s.id == id)?;
        kv_cache.free(id);
        Some(self.running.remove(index))
    }

    /// Removes a sequence wherever it is and frees its blocks at once.
    pub fn abort_request(
        &mut self,
        id: &RequestId,
        kv_cache: &mut KvCacheManager,
    ) -> Option<Sequence> {
        if let Some(seq) = self.finish_request(id, kv_cache) {
            return Some(seq);
        }
        let index = self.waiting.iter().position(|s| &s.id == id)?;
        self.waiting.remove(index)
    }

    /// Removes every sequence (engine shutdown), freeing their blocks.
    pub fn drain(&mut self, kv_cache: &mut KvCacheManager) -> Vec<Sequence> {
        for seq in &self.running {
            kv_cache.free(&seq.id);
        }
        self.running
            .drain(..)
            .chain(self.waiting.drain(..))
            .collect()
    }

    pub fn schedule(&mut self, kv_cache: &mut KvCacheManager) -> ScheduleResult {
        let mut result = ScheduleResult::default();
        let mut scheduled: HashSet<RequestId> = HashSet::new();

        // Decodes take their share first, then prefill chunks and admissions what they
        // need of the rest, then decodes not yet run what is left (batch_strategy.rs).
        let (decodes, prefills): (Vec<&Sequence>, Vec<&Sequence>) = self
            .running
            .iter()
            .filter(|s| s.num_runnable() > 0) // a beam waiting for its siblings, or for its audio
            .partition(|s| s.is_decoding());
        let decodes: Vec<RequestId> = decodes.iter().map(|s| s.id.clone()).collect();
        let prefills: Vec<RequestId> = prefills.iter().map(|s| s.id.clone()).collect();
        let free_places = self.max_batch_size.saturating_sub(self.running.len());
        let prefill_demand: usize = self
            .running
            .iter()
            .filter(|s| prefills.contains(&s.id))
            .chain(self.waiting.iter().take(free_places))
            .map(|s| s.num_runnable().min(self.max_chunk_tokens))
            .sum();
        let mut budget = self.max_tokens_per_step;
        let mut decode_budget = self
            .batch_strategy
            .decode_share(budget, prefill_demand)
            .min(budget);
        budget -= decode_budget;
        self.run_shares(
            &decodes,
            kv_cache,
            &mut decode_budget,
            &mut scheduled,
            &mut result,
        );
        budget += decode_budget;
        self.run_shares(
            &prefills,
            kv_cache,
            &mut budget,
            &mut scheduled,
            &mut result,
        );

        // Admitting while sequences are being preempted would only thrash.
        if result.preempted_requests.is_empty() {
            self.admit_waiting(kv_cache, &mut budget, &mut scheduled, &mut result);
        }
        self.run_shares(&decodes, kv_cache, &mut budget, &mut scheduled, &mut result);

        // Beams that wait for a sibling hold their blocks and batch places without
        // running; if that sibling waits for room, make it by preempting sequences
        // ordered after it, so the earliest request always moves on.
        while result.is_empty() {
            let Some(head) = self.next_waiting().map(|i| &self.waiting[i]) else {
                break;
            };
            let key = self.order_key(head);
            let Some(victim) = self.running.iter().rposition(|s| self.order_key(s) > key) else {
                break;
            };
            result
                .preempted_requests
                .push(self.running[victim].id.clone());
            self.preempt(victim, kv_cache);
            self.admit_waiting(kv_cache, &mut budget, &mut scheduled, &mut result);
        }
        // Nothing ran and nothing can make room: stuck, unless a running sequence waits
        // for its live audio (it will run, or end, when audio comes).
        if result.is_empty()
            && result.preempted_requests.is_empty()
            && !self.running.iter().any(Sequence::awaits_input)
        {
            result.stuck = self.next_waiting().map(|i| self.waiting[i].id.clone());
        }
        result
    }

    /// The first waiting sequence that can run: those still waiting for their live
    /// audio are passed over.
    fn next_waiting(&self) -> Option<usize> {
        self.waiting.iter().position(|s| !s.awaits_input())
    }

    /// Gives each running sequence of `ids` not yet scheduled its share of `budget`
    /// (its uncomputed tokens, cut to the chunk size), in order. When one needs a block
    /// and none is free, the last sequence in policy order not yet given a share of this
    /// step is preempted; it may be this one.
    fn run_shares(
        &mut self,
        ids: &[RequestId],
        kv_cache: &mut KvCacheManager,
        budget: &mut usize,
        scheduled: &mut HashSet<RequestId>,
        result: &mut ScheduleResult,
    ) {
        for id in ids {
            if *budget == 0 {
                break;
            }
            if scheduled.contains(id) {
                continue;
            }
            let Some(seq) = self.running.iter().find(|s| &s.id == id) else {
                continue; // preempted earlier in this step
            };
            let start_pos = seq.num_computed;
            let num_tokens = seq.num_runnable().min(*budget).min(self.max_chunk_tokens);
            loop {
                if let Ok(added) = kv_cache.ensure_capacity(id, start_pos + num_tokens) {
                    result.blocks_allocated += added;
                    *budget -= num_tokens;
                    scheduled.insert(id.clone());
                    self.push_scheduled(result, id, start_pos, num_tokens);
                    break;
                }
                let Some(victim) = self
                    .running
                    .iter()
                    .rposition(|s| !scheduled.contains(&s.id))
                else {
                    break;
                };
                let victim_id = self.running[victim].id.clone();
                self.preempt(victim, kv_cache);
                result.preempted_requests.push(victim_id.clone());
                if &victim_id == id {
                    break;
                }
            }
        }
    }

    fn admit_waiting(
        &mut self,
        kv_cache: &mut KvCacheManager,
        budget: &mut usize,
        scheduled: &mut HashSet<RequestId>,
        result: &mut ScheduleResult,
    ) {
        while *budget > 0 && self.running.len() < self.max_batch_size {
            let Some(index) = self.next_waiting() else {
                break;
            };
            let seq = &self.waiting[index];
            // A sequence preempted in this step waits for the next.
            if result.preempted_requests.contains(&seq.id) {
                break;
            }
            // Live audio: only the positions whose audio has arrived can run (and be
            // found in the cache, which always leaves one of them to run).
            let reach = seq
                .live_input
                .map_or(seq.len(), |i| i.positions.min(seq.len()));
            // A request that wants its prompt's alignment computes its whole prompt.
            let cached = if seq.params.return_alignment {
                Vec::new()
            } else {
                kv_cache.lookup_prefix(seq.cache_salt, &seq.tokens[..reach])
            };
            let num_cached = cached.len() * kv_cache.block_size();
            let remaining = reach - num_cached;
            let num_tokens = remaining.min(*budget).min(self.max_chunk_tokens);
            // Without chunked prefill a prompt runs whole, unless it could never fit
            // one step (a long recompute), which must be split to make progress.
            if !self.enable_chunked_prefill
                && num_tokens < remaining
                && remaining <= self.max_tokens_per_step
            {
                break;
            }
            if kv_cache
                .allocate_with_prefix(seq.cache_salt, &seq.id, &cached, num_cached + num_tokens)
                .is_err()
            {
                // Under the priority policy a more important request may take the
                // place of a less important one, even one already in this step.
                let priority = seq.priority;
                if !self.preempt_lower_priority(priority, kv_cache, budget, scheduled, result) {
                    break;
                }
                continue;
            }
            let Some(mut seq) = self.waiting.remove(index) else {
                break;
            };
            seq.num_computed = num_cached;
            let id = seq.id.clone();
            self.insert_running(seq);
            scheduled.insert(id.clone());
            *budget -= num_tokens;
            self.push_scheduled(result, &id, num_cached, num_tokens);
        }
    }

    /// Preempts the last running sequence in policy order whose priority is below
    /// `priority`. Every running sequence has usually been given its share of the step
    /// by now; the victim's share is taken back and its tokens returned to the budget.
    fn preempt_lower_priority(
        &mut self,
        priority: Priority,
        kv_cache: &mut KvCacheManager,
        budget: &mut usize,
        scheduled: &mut HashSet<RequestId>,
        result: &mut ScheduleResult,
    ) -> bool {
        if self.policy != SchedulingPolicy::Priority {
            return false;
        }
        let Some(index) = self.running.iter().rposition(|s| s.priority < priority) else {
            return false;
        };
        let victim = &self.running[index];
        for (list, is_prefill) in [
            (&mut result.decode_requests, false),
            (&mut result.prefill_requests, true),
        ] {
            if let Some(pos) = list.iter().position(|r| r.request_id == victim.id) {
                let share = list.remove(pos);
                if is_prefill && share.start_pos + share.num_tokens < victim.len() {
                    result.chunked_prefills -= 1;
                }
                result.total_tokens -= share.num_tokens;
                *budget += share.num_tokens;
            }
        }
        scheduled.remove(&victim.id);
        result.preempted_requests.push(victim.id.clone());
        self.preempt(index, kv_cache);
        true
    }

    fn push_scheduled(
        &mut self,
        result: &mut ScheduleResult,
        id: &RequestId,
        start_pos: usize,
        num_tokens: usize,
    ) {
        let Some(seq) = self.running.iter_mut().find(|s| &s.id == id) else {
            return;
        };
        seq.first_scheduled_at
            .get_or_insert_with(std::time::Instant::now);
        let request = ScheduledRequest {
            request_id: id.clone(),
            start_pos,
            num_tokens,
        };
        result.total_tokens += num_tokens;
        if seq.is_decoding() {
            result.decode_requests.push(request);
        } else {
            if start_pos + num_tokens < seq.len() {
                result.chunked_prefills += 1;
            }
            result.prefill_requests.push(request);
        }
    }

    fn preempt(&mut self, index: usize, kv_cache: &mut KvCacheManager) {
        let mut seq = self.running.remove(index);
        kv_cache.free(&seq.id);
        seq.num_computed = 0;
        seq.num_preemptions += 1;
        tracing::debug!(request = %seq.id, "preempted: KV cache full, will recompute");
        self.enqueue_waiting(seq);
    }

    fn order_key(&self, seq: &Sequence) -> (Reverse<Priority>, u64) {
        match self.policy {
            SchedulingPolicy::Fcfs => (Reverse(Priority::Normal), seq.arrival_order),
            SchedulingPolicy::Priority => (Reverse(seq.priority), seq.arrival_order),
        }
    }

    fn enqueue_waiting(&mut self, seq: Sequence) {
        let key = self.order_key(&seq);
        let index = self.waiting.partition_point(|s| self.order_key(s) <= key);
        self.waiting.insert(index, seq);
    }

    /// Puts a sequence that holds no blocks back in line (a forked beam that could not
    /// get its own block: it is recomputed).
    pub fn requeue(&mut self, seq: Sequence) {
        self.enqueue_waiting(seq);
    }

    /// Adds a sequence that already holds its blocks (a forked beam) to the running ones.
    pub fn insert_running(&mut self, seq: Sequence) {
        let key = self.order_key(&seq);
        let index = self.running.partition_point(|s| self.order_key(s) <= key);
        self.running.insert(index, seq);
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};

    use super::*;
    use crate::engine::kv_cache::KvCacheShape;
    use crate::engine::request::EngineCoreRequest;
    use crate::engine::types::GenerationParams;

    const BLOCK_SIZE: usize = 4;

    fn config(policy: SchedulingPolicy) -> EngineCoreConfig {
        EngineCoreConfig {
            scheduling_policy: policy,
            max_batch_size: 8,
            max_tokens_per_step: 64,
            block_size: BLOCK_SIZE,
            enable_chunked_prefill: true,
            chunked_prefill_threshold: 16,
            enable_prefix_caching: false,
            ..EngineCoreConfig::default()
        }
    }

    fn kv_cache(num_blocks: usize, prefix_caching: bool) -> KvCacheManager {
        let shape = KvCacheShape {
            num_layers: 1,
            num_kv_heads: 1,
            head_dim: 2,
            dtype: DType::F32,
        };
        KvCacheManager::new(num_blocks, BLOCK_SIZE, shape, &Device::Cpu, prefix_caching)
            .expect("tiny cache allocates")
    }

    /// A request whose prompt is `len` (< 100) tokens unique to `name`.
    fn request(name: &str, len: usize, priority: Priority) -> EngineCoreRequest {
        let hash = name
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        let base = (hash % 1_000_000) * 100;
        let prompt = (0..len as u32).map(|i| base + i).collect();
        EngineCoreRequest::new(prompt)
            .with_id(name)
            .with_params(GenerationParams {
                max_tokens: 1000,
                ..GenerationParams::default()
            })
            .with_priority(priority)
    }

    fn id(name: &str) -> RequestId {
        RequestId::from(name)
    }

    fn ids(scheduled: &[ScheduledRequest]) -> Vec<&str> {
        scheduled.iter().map(|s| s.request_id.as_str()).collect()
    }

    fn chunk(name: &str, start_pos: usize, num_tokens: usize) -> ScheduledRequest {
        ScheduledRequest {
            request_id: id(name),
            start_pos,
            num_tokens,
        }
    }

    /// Plays the executor the way `EngineCore::process` does: every scheduled chunk is
    /// computed and a chunk reaching the end of its sequence samples one more token.
    fn execute(scheduler: &mut Scheduler, kv: &mut KvCacheManager, result: &ScheduleResult) {
        for s in result.scheduled() {
            let seq = scheduler
                .running_mut(&s.request_id)
                .expect("scheduled is running");
            assert_eq!(
                s.start_pos, seq.num_computed,
                "{} runs from its cache",
                seq.id
            );
            seq.num_computed += s.num_tokens;
            if seq.num_computed == seq.len() {
                let token = 7_000_000 + seq.len() as u32;
                seq.tokens.push(token);
            }
            kv.cache_full_blocks(&seq.id, &seq.tokens, seq.num_computed);
        }
    }

    fn step(scheduler: &mut Scheduler, kv: &mut KvCacheManager) -> ScheduleResult {
        let result = scheduler.schedule(kv);
        execute(scheduler, kv, &result);
        result
    }

    fn waiting_ids(scheduler: &Scheduler) -> Vec<&str> {
        scheduler.waiting.iter().map(|s| s.id.as_str()).collect()
    }

    fn running_ids(scheduler: &Scheduler) -> Vec<&str> {
        scheduler.running.iter().map(|s| s.id.as_str()).collect()
    }

    /// A small deterministic generator (64-bit LCG), so failures replay exactly.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }

    /// A live request (its audio arriving as it runs), with no audio yet.
    fn live(name: &str, len: usize) -> EngineCoreRequest {
        request(name, len, Priority::Normal).with_live_audio()
    }

    fn awaits(scheduler: &Scheduler, name: &str) -> bool {
        scheduler
            .running(&id(name))
            .is_some_and(Sequence::awaits_input)
    }

    fn set_audio(scheduler: &mut Scheduler, name: &str, positions: usize) {
        let seq = scheduler.get_mut(&id(name)).expect("in the scheduler");
        seq.live_input = Some(crate::engine::sequence::LiveInput {
            positions,
            ended: false,
        });
    }

    #[test]
    fn a_live_request_preempted_at_a_block_edge_comes_back_and_recomputes_its_last_block() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            enable_prefix_caching: true,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(16, true);
        scheduler.add_request(live("live", 5));
        set_audio(&mut scheduler, "live", 8);
        // Prompt, then decodes, until the 8 positions its audio allows have run (two
        // full blocks, cached), with the ninth token sampled.
        while !awaits(&scheduler, "live") {
            step(&mut scheduler, &mut kv);
        }
        let seq = scheduler.running(&id("live")).expect("running");
        assert_eq!((seq.num_computed, seq.len()), (8, 9));
        // Preempted while it waits (another request wanted its blocks).
        let index = scheduler
            .running
            .iter()
            .position(|s| s.id == id("live"))
            .unwrap();
        scheduler.preempt(index, &mut kv);
        // Its cached blocks cover all the audio it has: it must still come back, and
        // recompute the last cached block's positions rather than wait forever.
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.stuck, None);
        assert_eq!(ids(&result.prefill_requests), ["live"]);
        assert_eq!(result.prefill_requests[0].start_pos, 4);
        assert_eq!(scheduler.running(&id("live")).unwrap().num_computed, 8);
    }

    #[test]
    fn a_live_request_without_audio_is_passed_over_and_a_full_cache_is_not_stuck() {
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Fcfs));
        let mut kv = kv_cache(4, false);
        // Waiting for its first audio at the head of the line: the next one runs.
        scheduler.add_request(live("silent", 5));
        scheduler.add_request(request("file", 6, Priority::Normal));
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(ids(&result.prefill_requests), ["file"]);
        assert_eq!(waiting_ids(&scheduler), ["silent"]);
        scheduler.finish_request(&id("file"), &mut kv);
        // Its audio comes: it runs, then waits for more holding 3 of the 4 blocks.
        set_audio(&mut scheduler, "silent", 9);
        while !awaits(&scheduler, "silent") {
            step(&mut scheduler, &mut kv);
        }
        // A request that cannot get blocks while the live one waits is not stuck: the
        // live one will run, or end, when its audio comes.
        scheduler.add_request(request("big", 8, Priority::Normal));
        let result = scheduler.schedule(&mut kv);
        assert!(result.is_empty());
        assert!(result.preempted_requests.is_empty());
        assert_eq!(result.stuck, None);
    }

    #[test]
    fn each_batch_strategy_shares_the_budget_as_it_says() {
        // Budget 8: six sequences decoding, then a 20-token prompt arrives.
        for (strategy, decodes, prefill) in [
            (BatchStrategy::DecodeMaximal, 6, 2),
            (BatchStrategy::PrefillPriority, 0, 8),
            (BatchStrategy::Balanced, 4, 4),
        ] {
            let mut scheduler = Scheduler::new(&EngineCoreConfig {
                max_tokens_per_step: 8,
                batch_strategy: strategy,
                ..config(SchedulingPolicy::Fcfs)
            });
            let mut kv = kv_cache(64, false);
            for i in 0..6 {
                scheduler.add_request(request(&format!("r{i}"), 2, Priority::Normal));
            }
            while scheduler.running.iter().filter(|s| s.is_decoding()).count() < 6 {
                step(&mut scheduler, &mut kv);
            }
            scheduler.add_request(request("long", 20, Priority::Normal));
            let result = step(&mut scheduler, &mut kv);
            assert_eq!(
                result.decode_requests.len(),
                decodes,
                "{strategy:?} decodes"
            );
            assert_eq!(
                result.prefill_requests,
                [chunk("long", 0, prefill)],
                "{strategy:?} prefill"
            );
            assert_eq!(result.total_tokens, 8, "{strategy:?} fills the budget");
        }
    }

    #[test]
    fn a_share_prefill_cannot_use_goes_to_the_decodes() {
        // Prefill first, but the prompt cannot be admitted (the batch is full): the
        // decodes still run.
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 2,
            batch_strategy: BatchStrategy::PrefillPriority,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(64, false);
        scheduler.add_request(request("a", 3, Priority::Normal));
        scheduler.add_request(request("b", 3, Priority::Normal));
        step(&mut scheduler, &mut kv);
        scheduler.add_request(request("c", 30, Priority::Normal));
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(ids(&result.decode_requests), ["a", "b"]);
        assert!(result.prefill_requests.is_empty());
    }

    #[test]
    fn a_sequence_nothing_can_make_room_for_is_reported_stuck() {
        // "idle" has computed all its tokens (a beam waiting for its siblings) and holds
        // 3 of the 4 blocks; "late" needs 2 and nothing ordered after it could give way.
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Fcfs));
        let mut kv = kv_cache(4, false);
        scheduler.add_request(request("idle", 12, Priority::Normal));
        step(&mut scheduler, &mut kv);
        let idle = scheduler.running_mut(&id("idle")).expect("running");
        idle.num_computed = idle.len();
        scheduler.add_request(request("late", 8, Priority::Normal));
        let result = scheduler.schedule(&mut kv);
        assert!(result.is_empty());
        assert_eq!(result.stuck, Some(id("late")));
        // Once the idle one goes, the same step admits it.
        scheduler
            .finish_request(&id("idle"), &mut kv)
            .expect("running");
        let result = scheduler.schedule(&mut kv);
        assert_eq!(result.stuck, None);
        assert_eq!(result.prefill_requests, [chunk("late", 0, 8)]);
    }

    #[test]
    fn fcfs_admits_in_arrival_order_ignoring_priority() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 2,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("low", 4, Priority::Low));
        scheduler.add_request(request("critical", 4, Priority::Critical));
        scheduler.add_request(request("high", 4, Priority::High));
        let result = scheduler.schedule(&mut kv);
        assert_eq!(ids(&result.prefill_requests), ["low", "critical"]);
        assert_eq!(waiting_ids(&scheduler), ["high"]);
    }

    #[test]
    fn priority_policy_admits_higher_priority_first_then_by_arrival() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 3,
            ..config(SchedulingPolicy::Priority)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("low", 4, Priority::Low));
        scheduler.add_request(request("high-1", 4, Priority::High));
        scheduler.add_request(request("normal", 4, Priority::Normal));
        scheduler.add_request(request("high-2", 4, Priority::High));
        let result = scheduler.schedule(&mut kv);
        assert_eq!(
            ids(&result.prefill_requests),
            ["high-1", "high-2", "normal"]
        );
        assert_eq!(waiting_ids(&scheduler), ["low"]);
    }

    #[test]
    fn no_more_than_max_batch_size_sequences_run() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 3,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(64, false);
        for i in 0..7 {
            scheduler.add_request(request(&format!("r{i}"), 3, Priority::Normal));
        }
        for _ in 0..5 {
            let result = step(&mut scheduler, &mut kv);
            assert_eq!(result.scheduled().count(), 3);
            assert_eq!(scheduler.num_running(), 3);
            assert_eq!(scheduler.num_waiting(), 4);
        }
        scheduler
            .finish_request(&id("r1"), &mut kv)
            .expect("running");
        let result = scheduler.schedule(&mut kv);
        assert_eq!(ids(&result.decode_requests), ["r0", "r2"]);
        assert_eq!(
            ids(&result.prefill_requests),
            ["r3"],
            "one freed place, one admitted"
        );
    }

    #[test]
    fn the_token_budget_is_never_exceeded_and_every_request_completes() {
        const BUDGET: usize = 24;
        const CHUNK: usize = 10;
        let priorities = [Priority::Low, Priority::Normal, Priority::High];
        for (policy, chunked, seed) in [
            (SchedulingPolicy::Fcfs, true, 11),
            (SchedulingPolicy::Fcfs, false, 12),
            (SchedulingPolicy::Priority, true, 13),
            (SchedulingPolicy::Priority, false, 14),
        ] {
            let mut scheduler = Scheduler::new(&EngineCoreConfig {
                max_batch_size: 5,
                max_tokens_per_step: BUDGET,
                enable_chunked_prefill: chunked,
                chunked_prefill_threshold: CHUNK,
                ..config(policy)
            });
            // Tight enough that sequences get preempted along the way.
            let mut kv = kv_cache(20, true);
            let mut rng = Lcg(seed);
            let mut added = 0;
            let mut finished = 0;
            let (mut preemptions, mut chunked_prefills) = (0, 0);
            for _ in 0..2000 {
                if added < 40 && rng.below(2) == 0 {
                    let len = 1 + rng.below(40); // some longer than a step
                    let priority = priorities[rng.below(3)];
                    scheduler.add_request(request(&format!("r{added}"), len, priority));
                    added += 1;
                }
                let result = step(&mut scheduler, &mut kv);
                let sum: usize = result.scheduled().map(|s| s.num_tokens).sum();
                assert_eq!(result.total_tokens, sum);
                assert!(sum <= BUDGET, "{sum} tokens scheduled in one step");
                assert!(result.scheduled().count() <= 5);
                for s in result.scheduled() {
                    assert!(s.num_tokens >= 1);
                    if chunked {
                        assert!(s.num_tokens <= CHUNK, "chunk of {}", s.num_tokens);
                    }
                    let table = kv.block_table(&s.request_id).len();
                    assert!(table * BLOCK_SIZE >= s.start_pos + s.num_tokens);
                }
                preemptions += result.preempted_requests.len();
                chunked_prefills += result.chunked_prefills;
                // Each sequence stops after 6 generated tokens.
                let done: Vec<RequestId> = scheduler
                    .running
                    .iter()
                    .filter(|s| s.output_tokens().len() >= 6)
                    .map(|s| s.id.clone())
                    .collect();
                for request in done {
                    scheduler
                        .finish_request(&request, &mut kv)
                        .expect("running");
                    finished += 1;
                }
                if added == 40 && !scheduler.has_unfinished() {
                    break;
                }
            }
            assert_eq!(finished, 40, "every request completes");
            assert!(preemptions > 0, "the workload must preempt");
            assert!(chunked_prefills > 0, "the workload must split prompts");
            assert_eq!(kv.stats().free_blocks, 20);
        }
    }

    #[test]
    fn a_long_prompt_is_prefilled_in_chunks_over_several_steps() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            chunked_prefill_threshold: 8,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("long", 20, Priority::Normal));

        let first = step(&mut scheduler, &mut kv);
        assert_eq!(first.prefill_requests, [chunk("long", 0, 8)]);
        assert_eq!(first.chunked_prefills, 1);
        let second = step(&mut scheduler, &mut kv);
        assert_eq!(second.prefill_requests, [chunk("long", 8, 8)]);
        assert_eq!(second.chunked_prefills, 1);
        let last = step(&mut scheduler, &mut kv);
        assert_eq!(last.prefill_requests, [chunk("long", 16, 4)]);
        assert_eq!(last.chunked_prefills, 0);
        let decode = step(&mut scheduler, &mut kv);
        assert_eq!(decode.decode_requests, [chunk("long", 20, 1)]);
        assert!(decode.prefill_requests.is_empty());
    }

    #[test]
    fn decodes_are_scheduled_before_prefill_chunks() {
        // "long" outranks "short", but a running decode takes its token first.
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_tokens_per_step: 8,
            chunked_prefill_threshold: 8,
            ..config(SchedulingPolicy::Priority)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("short", 1, Priority::Low));
        step(&mut scheduler, &mut kv);
        scheduler.add_request(request("long", 30, Priority::High));
        let admitted = step(&mut scheduler, &mut kv);
        assert_eq!(admitted.decode_requests, [chunk("short", 1, 1)]);
        assert_eq!(admitted.prefill_requests, [chunk("long", 0, 7)]);
        assert_eq!(running_ids(&scheduler), ["long", "short"]);

        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.decode_requests, [chunk("short", 2, 1)]);
        assert_eq!(result.prefill_requests, [chunk("long", 7, 7)]);
        let order: Vec<&str> = result.scheduled().map(|s| s.request_id.as_str()).collect();
        assert_eq!(order, ["short", "long"]);
    }

    #[test]
    fn without_chunked_prefill_a_prompt_that_fits_a_step_runs_whole_or_waits() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_tokens_per_step: 16,
            enable_chunked_prefill: false,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("a", 10, Priority::Normal));
        scheduler.add_request(request("b", 10, Priority::Normal));
        let first = step(&mut scheduler, &mut kv);
        assert_eq!(first.prefill_requests, [chunk("a", 0, 10)]);
        assert_eq!(first.chunked_prefills, 0);
        assert_eq!(
            waiting_ids(&scheduler),
            ["b"],
            "6 tokens left: b is not split"
        );
        assert!(kv.block_table(&id("b")).is_empty());
        let second = step(&mut scheduler, &mut kv);
        assert_eq!(second.decode_requests, [chunk("a", 10, 1)]);
        assert_eq!(second.prefill_requests, [chunk("b", 0, 10)]);
    }

    #[test]
    fn without_chunked_prefill_a_prompt_longer_than_a_step_is_still_split() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_tokens_per_step: 16,
            enable_chunked_prefill: false,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(32, false);
        scheduler.add_request(request("huge", 20, Priority::Normal));
        let first = step(&mut scheduler, &mut kv);
        assert_eq!(first.prefill_requests, [chunk("huge", 0, 16)]);
        let second = step(&mut scheduler, &mut kv);
        assert_eq!(second.prefill_requests, [chunk("huge", 16, 4)]);
    }

    /// Three 4-token prompts decoded until each fills two blocks, with `spare` blocks
    /// left free.
    fn three_sequences_in_two_blocks_each(
        spare: usize,
        prefix_caching: bool,
    ) -> (Scheduler, KvCacheManager) {
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Fcfs));
        let mut kv = kv_cache(6 + spare, prefix_caching);
        for name in ["a", "b", "c"] {
            scheduler.add_request(request(name, 4, Priority::Normal));
        }
        for _ in 0..5 {
            let result = step(&mut scheduler, &mut kv);
            assert!(result.preempted_requests.is_empty());
        }
        // Each now has 9 tokens, 8 computed, in 2 full blocks.
        assert_eq!(kv.num_free_blocks(), spare);
        assert_eq!(scheduler.running_mut(&id("c")).expect("c").len(), 9);
        (scheduler, kv)
    }

    #[test]
    fn when_blocks_run_out_the_last_sequence_in_order_is_preempted() {
        let (mut scheduler, mut kv) = three_sequences_in_two_blocks_each(0, false);
        scheduler.add_request(request("d", 1, Priority::Normal));
        let result = step(&mut scheduler, &mut kv);
        // a needs a third block; c, last in FCFS order, gives up its two.
        assert_eq!(result.preempted_requests, [id("c")]);
        assert_eq!(result.decode_requests, [chunk("a", 8, 1), chunk("b", 8, 1)]);
        assert!(
            result.prefill_requests.is_empty(),
            "no admission while preempting"
        );
        assert!(kv.block_table(&id("c")).is_empty());
        assert_eq!(kv.block_table(&id("a")).len(), 3);
        assert_eq!(kv.block_table(&id("b")).len(), 3);
        assert_eq!(running_ids(&scheduler), ["a", "b"]);
        assert_eq!(
            waiting_ids(&scheduler),
            ["c", "d"],
            "c keeps its place in line"
        );
        let c = &scheduler.waiting[0];
        assert_eq!((c.num_computed, c.num_preemptions, c.len()), (0, 1, 9));
    }

    #[test]
    fn nothing_is_admitted_in_a_step_that_preempts() {
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Priority));
        let mut kv = kv_cache(6, false);
        scheduler.add_request(request("a", 8, Priority::Normal)); // 2 full blocks
        scheduler.add_request(request("b", 5, Priority::Normal)); // 2 blocks
        scheduler.add_request(request("c", 5, Priority::Normal)); // 2 blocks
        step(&mut scheduler, &mut kv);
        scheduler.add_request(request("d", 1, Priority::High));
        let result = step(&mut scheduler, &mut kv);
        // a's third block came from c's two; the other stays free, yet d waits.
        assert_eq!(result.preempted_requests, [id("c")]);
        assert_eq!(kv.num_free_blocks(), 1);
        assert!(result.prefill_requests.is_empty());
        assert_eq!(waiting_ids(&scheduler), ["d", "c"]);
        let next = step(&mut scheduler, &mut kv);
        assert_eq!(next.prefill_requests, [chunk("d", 0, 1)]);
    }

    #[test]
    fn a_preempted_sequence_is_recomputed_from_the_start() {
        let (mut scheduler, mut kv) = three_sequences_in_two_blocks_each(0, false);
        step(&mut scheduler, &mut kv); // c preempted
        scheduler.finish_request(&id("a"), &mut kv).expect("a runs");
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.decode_requests, [chunk("b", 9, 1)]);
        // All 9 tokens, the prompt and what it had generated, from position 0.
        assert_eq!(result.prefill_requests, [chunk("c", 0, 9)]);
        let after = step(&mut scheduler, &mut kv);
        assert_eq!(after.decode_requests, [chunk("b", 10, 1), chunk("c", 9, 1)]);
    }

    #[test]
    fn a_preempted_sequence_reuses_its_still_cached_prefix() {
        let (mut scheduler, mut kv) = three_sequences_in_two_blocks_each(1, true);
        let result = step(&mut scheduler, &mut kv);
        // a took the spare block; b's need preempted c, whose 2 full blocks stay
        // cached, and took the older of them, c's tail.
        assert_eq!(result.preempted_requests, [id("c")]);
        assert_eq!(kv.stats().cached_blocks, 1);
        scheduler.finish_request(&id("a"), &mut kv).expect("a runs");
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.prefill_requests, [chunk("c", 4, 5)]);
        assert_eq!(kv.stats().prefix_hit_tokens, 4);
    }

    #[test]
    fn a_sequence_that_cannot_grow_preempts_itself_when_it_is_last() {
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Fcfs));
        let mut kv = kv_cache(3, false);
        scheduler.add_request(request("a", 3, Priority::Normal)); // 1 block
        scheduler.add_request(request("b", 8, Priority::Normal)); // 2 blocks
        step(&mut scheduler, &mut kv);
        assert_eq!(kv.num_free_blocks(), 0);
        // a's next token fits its block; b's needs a third block, and b is the last
        // sequence not yet scheduled.
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.decode_requests, [chunk("a", 3, 1)]);
        assert_eq!(result.preempted_requests, [id("b")]);
        assert_eq!(kv.num_free_blocks(), 2);
        assert_eq!(waiting_ids(&scheduler), ["b"]);
    }

    /// A low-priority sequence holding the whole 3-block cache, decoding.
    fn cache_full_of_low_priority(policy: SchedulingPolicy) -> (Scheduler, KvCacheManager) {
        let mut scheduler = Scheduler::new(&config(policy));
        let mut kv = kv_cache(3, false);
        scheduler.add_request(request("low", 9, Priority::Low));
        step(&mut scheduler, &mut kv);
        assert_eq!(kv.num_free_blocks(), 0);
        (scheduler, kv)
    }

    #[test]
    fn under_priority_a_waiting_important_request_preempts_a_running_lesser_one() {
        let (mut scheduler, mut kv) = cache_full_of_low_priority(SchedulingPolicy::Priority);
        scheduler.add_request(request("high", 4, Priority::High));
        let result = step(&mut scheduler, &mut kv);
        assert_eq!(result.preempted_requests, [id("low")]);
        assert_eq!(result.prefill_requests, [chunk("high", 0, 4)]);
        assert!(
            result.decode_requests.is_empty(),
            "low does not run this step"
        );
        assert_eq!(result.total_tokens, 4);
        assert_eq!(running_ids(&scheduler), ["high"]);
        assert_eq!(waiting_ids(&scheduler), ["low"]);
        assert_eq!(scheduler.waiting[0].num_computed, 0);
        assert!(kv.block_table(&id("low")).is_empty());
        // low does not in turn preempt high.
        let next = step(&mut scheduler, &mut kv);
        assert!(next.preempted_requests.is_empty());
        assert_eq!(next.decode_requests, [chunk("high", 4, 1)]);
    }

    #[test]
    fn a_request_preempted_for_priority_gives_back_its_share_of_the_step() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_tokens_per_step: 8,
            chunked_prefill_threshold: 6,
            ..config(SchedulingPolicy::Priority)
        });
        let mut kv = kv_cache(3, false);
        scheduler.add_request(request("low", 20, Priority::Low));
        step(&mut scheduler, &mut kv); // low: tokens 0..6 in 2 blocks
        scheduler.add_request(request("high", 8, Priority::High));
        let result = step(&mut scheduler, &mut kv);
        // low took a chunk of 6 and the last block; high, with the 2 tokens left and no
        // block, preempts it and then runs a full chunk itself.
        assert_eq!(result.preempted_requests, [id("low")]);
        assert_eq!(result.prefill_requests, [chunk("high", 0, 6)]);
        assert_eq!(result.total_tokens, 6);
        assert_eq!(result.chunked_prefills, 1, "only high's chunk");
        assert_eq!(kv.block_table(&id("high")).len(), 2);
        assert_eq!(
            waiting_ids(&scheduler),
            ["low"],
            "not readmitted in the same step"
        );
    }

    #[test]
    fn under_priority_equal_priority_does_not_preempt() {
        let mut scheduler = Scheduler::new(&config(SchedulingPolicy::Priority));
        let mut kv = kv_cache(3, false);
        scheduler.add_request(request("first", 9, Priority::High));
        step(&mut scheduler, &mut kv);
        scheduler.add_request(request("second", 4, Priority::High));
        let result = step(&mut scheduler, &mut kv);
        assert!(result.preempted_requests.is_empty());
        assert_eq!(waiting_ids(&scheduler), ["second"]);
    }

    #[test]
    fn under_fcfs_a_waiting_important_request_waits_for_room() {
        let (mut scheduler, mut kv) = cache_full_of_low_priority(SchedulingPolicy::Fcfs);
        scheduler.add_request(request("high", 4, Priority::High));
        let result = step(&mut scheduler, &mut kv);
        assert!(result.preempted_requests.is_empty());
        assert_eq!(result.decode_requests, [chunk("low", 9, 1)]);
        assert!(result.prefill_requests.is_empty());
        assert_eq!(waiting_ids(&scheduler), ["high"]);
    }

    #[test]
    fn aborting_a_running_or_waiting_request_frees_its_blocks_at_once() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 1,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(8, false);
        scheduler.add_request(request("running", 6, Priority::Normal));
        scheduler.add_request(request("waiting", 6, Priority::Normal));
        step(&mut scheduler, &mut kv);
        assert_eq!(kv.stats().used_blocks(), 2);

        let aborted = scheduler.abort_request(&id("running"), &mut kv);
        assert_eq!(aborted.map(|s| s.id), Some(id("running")));
        assert_eq!(kv.stats().free_blocks, 8);
        assert!(!scheduler.contains(&id("running")));

        let aborted = scheduler.abort_request(&id("waiting"), &mut kv);
        assert_eq!(aborted.map(|s| s.id), Some(id("waiting")));
        assert_eq!(kv.stats().free_blocks, 8);
        assert!(!scheduler.has_unfinished());
        assert!(scheduler.abort_request(&id("waiting"), &mut kv).is_none());
        assert!(scheduler.schedule(&mut kv).is_empty());
    }

    #[test]
    fn aborting_a_preempted_request_leaves_the_cache_free() {
        let (mut scheduler, mut kv) = three_sequences_in_two_blocks_each(0, false);
        step(&mut scheduler, &mut kv); // c preempted, waiting
        for name in ["c", "a", "b"] {
            assert!(scheduler.abort_request(&id(name), &mut kv).is_some());
        }
        assert_eq!(kv.stats().free_blocks, 6);
        assert!(!scheduler.has_unfinished());
    }

    #[test]
    fn finishing_a_request_frees_its_blocks_and_makes_room() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 1,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(8, false);
        scheduler.add_request(request("a", 6, Priority::Normal));
        scheduler.add_request(request("b", 6, Priority::Normal));
        step(&mut scheduler, &mut kv);
        assert!(
            scheduler.finish_request(&id("b"), &mut kv).is_none(),
            "only running sequences finish"
        );
        assert_eq!(waiting_ids(&scheduler), ["b"]);

        let done = scheduler.finish_request(&id("a"), &mut kv).expect("a runs");
        assert_eq!(done.output_tokens().len(), 1);
        assert_eq!(kv.stats().free_blocks, 8);
        assert!(kv.block_table(&id("a")).is_empty());
        let result = scheduler.schedule(&mut kv);
        assert_eq!(result.prefill_requests, [chunk("b", 0, 6)]);
    }

    #[test]
    fn drain_removes_everything_and_frees_the_cache() {
        let mut scheduler = Scheduler::new(&EngineCoreConfig {
            max_batch_size: 1,
            ..config(SchedulingPolicy::Fcfs)
        });
        let mut kv = kv_cache(8, false);
        scheduler.add_request(request("a", 6, Priority::Normal));
        scheduler.add_request(request("b", 6, Priority::Normal));
        step(&mut scheduler, &mut kv);
        let drained: Vec<RequestId> = scheduler.drain(&mut kv).into_iter().map(|s| s.id).collect();
        assert_eq!(drained, [id("a"), id("b")]);
        assert_eq!(kv.stats().free_blocks, 8);
        assert!(!scheduler.has_unfinished());
    }
}
