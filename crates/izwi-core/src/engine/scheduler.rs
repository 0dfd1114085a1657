//! Decides, each step, which sequences run and how many of their tokens.
//!
//! Running sequences go first, decodes before prefill chunks, in policy order; each
//! takes what it needs of the step's token budget, its prefill cut to the chunk size.
//! When a running sequence needs a block and none is free, the lowest-ordered running
//! sequence not yet scheduled this step is preempted: its blocks are freed and it
//! returns to the waiting queue to be recomputed later. Waiting sequences are then
//! admitted in policy order while the batch, the budget and the cache allow, starting
//! from the longest cached prefix of their tokens.

use std::cmp::Reverse;
use std::collections::{HashSet, VecDeque};

use super::config::EngineCoreConfig;
use super::kv_cache::KVCacheManager;
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

    pub fn has_unfinished(&self) -> bool {
        !self.waiting.is_empty() || !self.running.is_empty()
    }

    pub fn running_mut(&mut self, id: &RequestId) -> Option<&mut Sequence> {
        self.running.iter_mut().find(|s| &s.id == id)
    }

    /// Removes a running sequence that has finished and frees its blocks.
    pub fn finish_request(
        &mut self,
        id: &RequestId,
        kv_cache: &mut KVCacheManager,
    ) -> Option<Sequence> {
        let index = self.running.iter().position(|s| &s.id == id)?;
        kv_cache.free(id);
        Some(self.running.remove(index))
    }

    /// Removes a sequence wherever it is and frees its blocks at once.
    pub fn abort_request(
        &mut self,
        id: &RequestId,
        kv_cache: &mut KVCacheManager,
    ) -> Option<Sequence> {
        if let Some(seq) = self.finish_request(id, kv_cache) {
            return Some(seq);
        }
        let index = self.waiting.iter().position(|s| &s.id == id)?;
        self.waiting.remove(index)
    }

    /// Removes every sequence (engine shutdown), freeing their blocks.
    pub fn drain(&mut self, kv_cache: &mut KVCacheManager) -> Vec<Sequence> {
        for seq in &self.running {
            kv_cache.free(&seq.id);
        }
        self.running
            .drain(..)
            .chain(self.waiting.drain(..))
            .collect()
    }

    pub fn schedule(&mut self, kv_cache: &mut KVCacheManager) -> ScheduleResult {
        let mut result = ScheduleResult::default();
        let mut budget = self.max_tokens_per_step;
        let mut scheduled: HashSet<RequestId> = HashSet::new();

        // Decodes first, then prefill chunks, each in policy order.
        let mut order: Vec<(bool, RequestId)> = self
            .running
            .iter()
            .map(|s| (!s.is_decoding(), s.id.clone()))
            .collect();
        order.sort_by_key(|(prefill, _)| *prefill);
        for (_, id) in order {
            if budget == 0 {
                break;
            }
            let Some(seq) = self.running.iter().find(|s| s.id == id) else {
                continue; // preempted earlier in this step
            };
            let start_pos = seq.num_computed;
            let num_tokens = seq.num_uncomputed().min(budget).min(self.max_chunk_tokens);
            loop {
                if let Ok(added) = kv_cache.ensure_capacity(&id, start_pos + num_tokens) {
                    result.blocks_allocated += added;
                    budget -= num_tokens;
                    scheduled.insert(id.clone());
                    self.push_scheduled(&mut result, &id, start_pos, num_tokens);
                    break;
                }
                // The victim is the last sequence in policy order not yet given a
                // share of this step; it may be this one.
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
                if victim_id == id {
                    break;
                }
            }
        }

        // Admitting while sequences are being preempted would only thrash.
        if result.preempted_requests.is_empty() {
            self.admit_waiting(kv_cache, &mut budget, &mut result);
        }
        result
    }

    fn admit_waiting(
        &mut self,
        kv_cache: &mut KVCacheManager,
        budget: &mut usize,
        result: &mut ScheduleResult,
    ) {
        while *budget > 0 && self.running.len() < self.max_batch_size {
            let Some(seq) = self.waiting.front() else {
                break;
            };
            let cached = kv_cache.lookup_prefix(&seq.tokens);
            let num_cached = cached.len() * kv_cache.block_size();
            let remaining = seq.len() - num_cached;
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
                .allocate_with_prefix(&seq.id, &cached, num_cached + num_tokens)
                .is_err()
            {
                // Under the priority policy a more important request may take the
                // place of a less important one that is not in this step.
                let priority = seq.priority;
                if !self.preempt_lower_priority(priority, kv_cache, result) {
                    break;
                }
                continue;
            }
            let Some(mut seq) = self.waiting.pop_front() else {
                break;
            };
            seq.num_computed = num_cached;
            let id = seq.id.clone();
            self.insert_running(seq);
            *budget -= num_tokens;
            self.push_scheduled(result, &id, num_cached, num_tokens);
        }
    }

    fn preempt_lower_priority(
        &mut self,
        priority: Priority,
        kv_cache: &mut KVCacheManager,
        result: &mut ScheduleResult,
    ) -> bool {
        if self.policy != SchedulingPolicy::Priority {
            return false;
        }
        let victim = self.running.iter().rposition(|s| {
            s.priority < priority && !result.scheduled().any(|r| r.request_id == s.id)
        });
        match victim {
            Some(index) => {
                result
                    .preempted_requests
                    .push(self.running[index].id.clone());
                self.preempt(index, kv_cache);
                true
            }
            None => false,
        }
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

    fn preempt(&mut self, index: usize, kv_cache: &mut KVCacheManager) {
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

    fn insert_running(&mut self, seq: Sequence) {
        let key = self.order_key(&seq);
        let index = self.running.partition_point(|s| self.order_key(s) <= key);
        self.running.insert(index, seq);
    }
}
