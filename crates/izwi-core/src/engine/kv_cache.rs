//! Paged KV cache: the block allocator, per-request block tables, prefix caching and
//! the per-layer K/V tensors the model reads and writes.
//!
//! A block holds `block_size` consecutive token positions of one sequence for every
//! layer. Free blocks are handed out last-freed first (LIFO) for locality. A full block
//! whose tokens are all computed is registered under a hash of its tokens and of the
//! blocks before it; a later request with the same prefix takes it (reference counted)
//! instead of recomputing it. Blocks nobody holds but that still carry a cached prefix
//! are kept until memory is needed, then evicted oldest first.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use candle_core::{DType, Device, Tensor};
use thiserror::Error;

use super::conv_state::ConvStateCache;
use super::types::{BlockId, RequestId};

/// The shape of a model's KV cache, which the executor declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvCacheShape {
    pub num_layers: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub dtype: DType,
}

impl KvCacheShape {
    /// Bytes of one block across all layers, K and V.
    pub fn bytes_per_block(&self, block_size: usize) -> usize {
        2 * block_size
            * self.num_kv_heads
            * self.head_dim
            * self.dtype.size_in_bytes()
            * self.num_layers
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum KvCacheError {
    #[error("out of KV-cache blocks: {needed} needed, {free} free")]
    OutOfBlocks { needed: usize, free: usize },
    #[error("copying a KV-cache block failed: {0}")]
    Copy(String),
    #[error("convolution state: {0}")]
    ConvState(String),
}

/// K and V of one attention layer: `[num_blocks, block_size, num_kv_heads, head_dim]`.
#[derive(Debug, Clone)]
pub struct LayerKvCache {
    pub k: Tensor,
    pub v: Tensor,
}

impl LayerKvCache {
    /// Writes `k`/`v` (`[tokens, num_kv_heads, head_dim]`) into the cache slots named by
    /// `slots`, a `[tokens, num_kv_heads * head_dim]` index tensor (each row one slot id).
    pub fn write(&self, k: &Tensor, v: &Tensor, slots: &Tensor) -> candle_core::Result<()> {
        let (blocks, block_size, heads, dim) = self.k.dims4()?;
        let flat = (blocks * block_size, heads * dim);
        let tokens = k.dim(0)?;
        // The reshapes share storage with the cache, so scatter_set writes in place.
        self.k.reshape(flat)?.scatter_set(
            slots,
            &k.reshape((tokens, heads * dim))?.contiguous()?,
            0,
        )?;
        self.v.reshape(flat)?.scatter_set(
            slots,
            &v.reshape((tokens, heads * dim))?.contiguous()?,
            0,
        )?;
        Ok(())
    }

    /// Gathers the K and V of the given slots: `[slots.len(), num_kv_heads, head_dim]`.
    pub fn gather(&self, slots: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let (blocks, block_size, heads, dim) = self.k.dims4()?;
        let flat = (blocks * block_size, heads, dim);
        Ok((
            self.k.reshape(flat)?.index_select(slots, 0)?,
            self.v.reshape(flat)?.index_select(slots, 0)?,
        ))
    }
}

impl LayerKvCache {
    /// Copies the K and V held at the slots `from` to the slots `to`.
    pub fn copy_slots(&self, from: &[u32], to: &[u32]) -> candle_core::Result<()> {
        let (_, _, heads, dim) = self.k.dims4()?;
        let device = self.k.device();
        let (k, v) = self.gather(&Tensor::new(from, device)?)?;
        let rows: Vec<u32> = to
            .iter()
            .flat_map(|&slot| std::iter::repeat_n(slot, heads * dim))
            .collect();
        let slots = Tensor::from_vec(rows, (to.len(), heads * dim), device)?;
        self.write(&k, &v, &slots)
    }
}

/// Counters and gauges of the cache.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KvCacheStats {
    pub total_blocks: usize,
    /// Blocks no sequence holds (including those still holding a cached prefix).
    pub free_blocks: usize,
    /// Free blocks that still hold a reusable prefix.
    pub cached_blocks: usize,
    pub block_size: usize,
    pub bytes_per_block: usize,
    pub memory_total_bytes: usize,
    pub memory_used_bytes: usize,
    /// Prompt tokens served from the prefix cache instead of being recomputed.
    pub prefix_hit_tokens: u64,
}

impl KvCacheStats {
    pub fn used_blocks(&self) -> usize {
        self.total_blocks - self.free_blocks
    }

    pub fn utilization(&self) -> f64 {
        if self.total_blocks == 0 {
            0.0
        } else {
            self.used_blocks() as f64 / self.total_blocks as f64
        }
    }
}

#[derive(Debug, Default, Clone)]
struct BlockMeta {
    ref_count: u32,
    /// Set while the block is registered in the prefix cache.
    prefix: Option<CachedPrefix>,
    /// Position in the eviction order while free and cached.
    evict_stamp: u64,
}

#[derive(Debug, Clone)]
struct CachedPrefix {
    hash: u64,
    tokens: Vec<u32>,
}

#[derive(Debug, Default)]
struct BlockTable {
    blocks: Vec<BlockId>,
    /// Leading blocks already registered in the prefix cache.
    num_hashed: usize,
    /// Hash of the last registered block, the parent of the next.
    last_hash: u64,
}

pub struct KvCacheManager {
    block_size: usize,
    bytes_per_block: usize,
    enable_prefix_caching: bool,
    blocks: Vec<BlockMeta>,
    /// Free blocks holding nothing reusable, used last-freed first.
    free: Vec<BlockId>,
    /// Free blocks holding a cached prefix, evicted oldest first.
    evictable: BTreeMap<u64, BlockId>,
    next_stamp: u64,
    prefix_index: HashMap<u64, BlockId>,
    tables: HashMap<RequestId, BlockTable>,
    prefix_hit_tokens: u64,
    layers: Vec<LayerKvCache>,
    /// Hybrid models' per-sequence convolution state: a slot for every sequence that
    /// holds a block table, taken and freed with it.
    conv: Option<ConvStateCache>,
}

impl KvCacheManager {
    /// Allocates `num_blocks` blocks of K/V memory for every layer of `shape` on `device`.
    pub fn new(
        num_blocks: usize,
        block_size: usize,
        shape: KvCacheShape,
        device: &Device,
        enable_prefix_caching: bool,
    ) -> candle_core::Result<Self> {
        let dims = (num_blocks, block_size, shape.num_kv_heads, shape.head_dim);
        let layers = (0..shape.num_layers)
            .map(|_| {
                Ok(LayerKvCache {
                    k: Tensor::zeros(dims, shape.dtype, device)?,
                    v: Tensor::zeros(dims, shape.dtype, device)?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Self {
            block_size,
            bytes_per_block: shape.bytes_per_block(block_size),
            enable_prefix_caching,
            blocks: vec![BlockMeta::default(); num_blocks],
            // Reversed so that block 0 is handed out first.
            free: (0..num_blocks as BlockId).rev().collect(),
            evictable: BTreeMap::new(),
            next_stamp: 0,
            prefix_index: HashMap::new(),
            tables: HashMap::new(),
            prefix_hit_tokens: 0,
            layers,
            conv: None,
        })
    }

    /// Keeps `conv`'s per-sequence state beside the blocks: a sequence gets a zeroed
    /// slot with its first blocks, a fork a copy of its parent's, and loses it when its
    /// blocks are freed (finish, abort, preemption; a preempted sequence recomputes it
    /// from its tokens). Turns prefix caching off: a cached block holds K/V but not
    /// the convolution state at its end, so a sequence starting from it could not go
    /// on (docs/engine.md).
    pub fn with_conv_state(mut self, conv: ConvStateCache) -> Self {
        self.enable_prefix_caching = false;
        self.conv = Some(conv);
        self
    }

    pub fn conv_state(&self) -> Option<&ConvStateCache> {
        self.conv.as_ref()
    }

    /// The convolution-state slot of a request, when the model has convolution layers.
    pub fn conv_slot(&self, request_id: &RequestId) -> Option<u32> {
        self.conv.as_ref()?.slot(request_id)
    }

    fn allocate_conv(&mut self, request_id: &RequestId) -> Result<(), KvCacheError> {
        if let Some(conv) = &mut self.conv {
            conv.allocate(request_id)
                .map_err(|e| KvCacheError::ConvState(e.to_string()))?;
        }
        Ok(())
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    pub fn layers(&self) -> &[LayerKvCache] {
        &self.layers
    }

    /// Blocks needed to hold `num_tokens` tokens.
    pub fn blocks_for(&self, num_tokens: usize) -> usize {
        num_tokens.div_ceil(self.block_size)
    }

    pub fn num_free_blocks(&self) -> usize {
        self.free.len() + self.evictable.len()
    }

    pub fn can_allocate(&self, num_blocks: usize) -> bool {
        num_blocks <= self.num_free_blocks()
    }

    /// The blocks of a request, in position order (empty if it holds none).
    pub fn block_table(&self, request_id: &RequestId) -> &[BlockId] {
        self.tables
            .get(request_id)
            .map_or(&[], |table| table.blocks.as_slice())
    }

    /// Gives a request `num_blocks` fresh blocks (its first).
    pub fn allocate(
        &mut self,
        request_id: &RequestId,
        num_blocks: usize,
    ) -> Result<Vec<BlockId>, KvCacheError> {
        self.extend(request_id, num_blocks)
    }

    /// Appends `additional_blocks` fresh blocks to a request's table, all or none.
    pub fn extend(
        &mut self,
        request_id: &RequestId,
        additional_blocks: usize,
    ) -> Result<Vec<BlockId>, KvCacheError> {
        if !self.can_allocate(additional_blocks) {
            return Err(KvCacheError::OutOfBlocks {
                needed: additional_blocks,
                free: self.num_free_blocks(),
            });
        }
        self.allocate_conv(request_id)?;
        let new: Vec<BlockId> = (0..additional_blocks).map(|_| self.pop_free()).collect();
        self.tables
            .entry(request_id.clone())
            .or_default()
            .blocks
            .extend_from_slice(&new);
        Ok(new)
    }

    /// Grows a request's table so it can hold `num_tokens` tokens, all or nothing.
    /// Returns the number of blocks added.
    pub fn ensure_capacity(
        &mut self,
        request_id: &RequestId,
        num_tokens: usize,
    ) -> Result<usize, KvCacheError> {
        let have = self.block_table(request_id).len();
        let need = self.blocks_for(num_tokens).saturating_sub(have);
        self.extend(request_id, need)?;
        Ok(need)
    }

    /// The longest run of cached blocks matching the start of `tokens`. At least one
    /// token is always left uncovered, because the model must run on the last prompt
    /// token to produce logits.
    ///
    /// `salt` separates caches whose K/V depend on more than the tokens (the audio a
    /// decoder attends to): blocks are shared only between requests of the same salt.
    pub fn lookup_prefix(&self, salt: u64, tokens: &[u32]) -> Vec<BlockId> {
        let mut hits = Vec::new();
        if !self.enable_prefix_caching {
            return hits;
        }
        let mut parent = salt;
        let usable = tokens.len().saturating_sub(1) / self.block_size;
        for chunk in tokens.chunks_exact(self.block_size).take(usable) {
            let hash = block_hash(parent, chunk);
            let Some(&block) = self.prefix_index.get(&hash) else {
                break;
            };
            match &self.blocks[block as usize].prefix {
                Some(prefix) if prefix.tokens == chunk => hits.push(block),
                _ => break,
            }
            parent = hash;
        }
        hits
    }

    /// Starts a request's table with the shared `cached` blocks (from
    /// [`lookup_prefix`](Self::lookup_prefix)) followed by fresh blocks, enough for
    /// `num_tokens` tokens, under `salt` (see [`lookup_prefix`](Self::lookup_prefix)).
    /// All or nothing.
    pub fn allocate_with_prefix(
        &mut self,
        salt: u64,
        request_id: &RequestId,
        cached: &[BlockId],
        num_tokens: usize,
    ) -> Result<(), KvCacheError> {
        let fresh = self.blocks_for(num_tokens).saturating_sub(cached.len());
        // Reviving an unreferenced cached block takes it out of the free pool too.
        let revived = cached
            .iter()
            .filter(|&&b| self.blocks[b as usize].ref_count == 0)
            .count();
        if !self.can_allocate(fresh + revived) {
            return Err(KvCacheError::OutOfBlocks {
                needed: fresh + revived,
                free: self.num_free_blocks(),
            });
        }
        self.allocate_conv(request_id)?;
        let mut table = BlockTable {
            last_hash: salt,
            ..BlockTable::default()
        };
        for &block in cached {
            let meta = &mut self.blocks[block as usize];
            if meta.ref_count == 0 {
                self.evictable.remove(&meta.evict_stamp);
            }
            meta.ref_count += 1;
            table.blocks.push(block);
            table.last_hash = meta.prefix.as_ref().map_or(0, |p| p.hash);
        }
        table.num_hashed = cached.len();
        self.prefix_hit_tokens += (cached.len() * self.block_size) as u64;
        table.blocks.extend((0..fresh).map(|_| self.pop_free()));
        self.tables.insert(request_id.clone(), table);
        Ok(())
    }

    /// Starts `child`'s table as a copy of `parent`'s first `num_computed` positions
    /// (beam search). Full blocks are shared, reference counted as a cached prefix is;
    /// a last block only partly filled is copied into a fresh one, because parent and
    /// child each write their next token into it. A hybrid model's convolution state is
    /// copied too. All or nothing.
    pub fn fork(
        &mut self,
        parent: &RequestId,
        child: &RequestId,
        num_computed: usize,
    ) -> Result<(), KvCacheError> {
        let full = num_computed / self.block_size;
        let partial = num_computed % self.block_size;
        let (shared, num_hashed, last_hash, partial_block) = {
            let table = self.tables.get(parent);
            let blocks = table.map_or(&[][..], |t| t.blocks.as_slice());
            (
                blocks[..full.min(blocks.len())].to_vec(),
                table.map_or(0, |t| t.num_hashed.min(full)),
                table.map_or(0, |t| t.last_hash),
                (partial > 0).then(|| blocks.get(full).copied()).flatten(),
            )
        };
        if partial_block.is_some() && !self.can_allocate(1) {
            return Err(KvCacheError::OutOfBlocks {
                needed: 1,
                free: self.num_free_blocks(),
            });
        }
        if let Some(conv) = &mut self.conv {
            conv.fork(parent, child)
                .map_err(|e| KvCacheError::ConvState(e.to_string()))?;
        }
        for &block in &shared {
            self.blocks[block as usize].ref_count += 1;
        }
        let mut table = BlockTable {
            blocks: shared,
            num_hashed,
            last_hash,
        };
        if let Some(source) = partial_block {
            let copy = self.pop_free();
            let slots = |block: BlockId| -> Vec<u32> {
                let first = block * self.block_size as u32;
                (first..first + partial as u32).collect()
            };
            let (from, to) = (slots(source), slots(copy));
            table.blocks.push(copy);
            self.tables.insert(child.clone(), table);
            for layer in &self.layers {
                if let Err(e) = layer.copy_slots(&from, &to) {
                    self.free(child);
                    return Err(KvCacheError::Copy(e.to_string()));
                }
            }
        } else {
            self.tables.insert(child.clone(), table);
        }
        Ok(())
    }

    /// Registers the request's blocks that became full of computed tokens, so later
    /// requests can reuse them. `tokens` are the sequence's tokens; the first
    /// `num_computed` of them are in the cache.
    pub fn cache_full_blocks(
        &mut self,
        request_id: &RequestId,
        tokens: &[u32],
        num_computed: usize,
    ) {
        if !self.enable_prefix_caching {
            return;
        }
        let Some(table) = self.tables.get_mut(request_id) else {
            return;
        };
        let full = (num_computed / self.block_size).min(table.blocks.len());
        while table.num_hashed < full {
            let i = table.num_hashed;
            let chunk = &tokens[i * self.block_size..(i + 1) * self.block_size];
            let hash = block_hash(table.last_hash, chunk);
            let block = table.blocks[i];
            // Another sequence may have cached the same prefix first; keep theirs.
            if let std::collections::hash_map::Entry::Vacant(slot) = self.prefix_index.entry(hash) {
                slot.insert(block);
                self.blocks[block as usize].prefix = Some(CachedPrefix {
                    hash,
                    tokens: chunk.to_vec(),
                });
            }
            table.last_hash = hash;
            table.num_hashed += 1;
        }
    }

    /// Releases every block of a request. Blocks nobody else holds become free at once.
    pub fn free(&mut self, request_id: &RequestId) {
        if let Some(conv) = &mut self.conv {
            conv.free(request_id);
        }
        let Some(table) = self.tables.remove(request_id) else {
            return;
        };
        // Tail first, so a prefix's later blocks are evicted before its head.
        for &block in table.blocks.iter().rev() {
            let meta = &mut self.blocks[block as usize];
            meta.ref_count -= 1;
            if meta.ref_count > 0 {
                continue;
            }
            if meta.prefix.is_some() {
                meta.evict_stamp = self.next_stamp;
                self.evictable.insert(self.next_stamp, block);
                self.next_stamp += 1;
            } else {
                self.free.push(block);
            }
        }
    }

    pub fn stats(&self) -> KvCacheStats {
        let total = self.blocks.len();
        let free = self.num_free_blocks();
        KvCacheStats {
            total_blocks: total,
            free_blocks: free,
            cached_blocks: self.evictable.len(),
            block_size: self.block_size,
            bytes_per_block: self.bytes_per_block,
            memory_total_bytes: total * self.bytes_per_block,
            memory_used_bytes: (total - free) * self.bytes_per_block,
            prefix_hit_tokens: self.prefix_hit_tokens,
        }
    }

    /// Takes a free block: a clean one if any (LIFO), else the oldest cached one,
    /// whose prefix is forgotten. Callers check `can_allocate` first.
    fn pop_free(&mut self) -> BlockId {
        let block = match self.free.pop() {
            Some(block) => block,
            None => {
                let (_, block) = self
                    .evictable
                    .pop_first()
                    .expect("callers check can_allocate before taking blocks");
                if let Some(prefix) = self.blocks[block as usize].prefix.take() {
                    self.prefix_index.remove(&prefix.hash);
                }
                block
            }
        };
        self.blocks[block as usize].ref_count = 1;
        block
    }
}

fn block_hash(parent: u64, tokens: &[u32]) -> u64 {
    let mut hasher = DefaultHasher::new();
    parent.hash(&mut hasher);
    tokens.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn shape() -> KvCacheShape {
        KvCacheShape {
            num_layers: 1,
            num_kv_heads: 1,
            head_dim: 2,
            dtype: DType::F32,
        }
    }

    fn manager(num_blocks: usize, block_size: usize, prefix_caching: bool) -> KvCacheManager {
        KvCacheManager::new(
            num_blocks,
            block_size,
            shape(),
            &Device::Cpu,
            prefix_caching,
        )
        .expect("tiny cache allocates")
    }

    fn id(name: &str) -> RequestId {
        RequestId::from(name)
    }

    /// Tokens `base, base + 1, ...`: prompts with the same base share a prefix.
    fn tokens(base: u32, len: usize) -> Vec<u32> {
        (0..len as u32).map(|i| base + i).collect()
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

    /// Checks the allocator's bookkeeping against the tables: every held block is
    /// counted once per holder, a block in two tables is a registered prefix block, no
    /// free block is held or listed twice, and held + free == total.
    fn assert_consistent(kv: &KvCacheManager) {
        let total = kv.num_blocks();
        let mut holders = vec![0u32; total];
        for (request, table) in &kv.tables {
            let mut own = HashSet::new();
            for &block in &table.blocks {
                assert!(own.insert(block), "{request} holds block {block} twice");
                holders[block as usize] += 1;
            }
        }
        let mut listed_free = vec![false; total];
        for &block in kv.free.iter().chain(kv.evictable.values()) {
            let b = block as usize;
            assert!(!listed_free[b], "block {block} is free twice");
            listed_free[b] = true;
            assert_eq!(holders[b], 0, "block {block} is free but held");
        }
        for &block in kv.evictable.values() {
            assert!(kv.blocks[block as usize].prefix.is_some());
        }
        for &block in &kv.free {
            assert!(kv.blocks[block as usize].prefix.is_none());
        }
        for (b, meta) in kv.blocks.iter().enumerate() {
            assert_eq!(meta.ref_count, holders[b], "ref count of block {b}");
            // Shared blocks are cached prefixes or forked beams' common blocks.
            if let (true, Some(prefix)) = (holders[b] > 1, meta.prefix.as_ref()) {
                assert_eq!(kv.prefix_index.get(&prefix.hash), Some(&(b as BlockId)));
            }
        }
        for (hash, &block) in &kv.prefix_index {
            let prefix = kv.blocks[block as usize].prefix.as_ref();
            assert_eq!(
                prefix.map(|p| p.hash),
                Some(*hash),
                "index entry of {block}"
            );
        }
        let held = holders.iter().filter(|&&h| h > 0).count();
        assert_eq!(held + kv.num_free_blocks(), total, "held + free == total");
        assert_eq!(kv.stats().free_blocks, kv.num_free_blocks());
    }

    /// Everything observable about the allocation state, to prove a failed call
    /// changed nothing.
    fn snapshot(kv: &KvCacheManager) -> (Vec<(RequestId, Vec<BlockId>)>, KvCacheStats) {
        let mut tables: Vec<_> = kv
            .tables
            .iter()
            .map(|(r, t)| (r.clone(), t.blocks.clone()))
            .collect();
        tables.sort();
        (tables, kv.stats())
    }

    fn randomized_alloc_free(prefix_caching: bool, seed: u64) {
        const BLOCK_SIZE: usize = 4;
        const NUM_BLOCKS: usize = 24;
        let mut kv = manager(NUM_BLOCKS, BLOCK_SIZE, prefix_caching);
        let mut rng = Lcg(seed);
        let ids: Vec<RequestId> = (0..10).map(|i| id(&format!("r{i}"))).collect();
        // Our own record of every request's table and tokens, built from return values.
        let mut expected: HashMap<RequestId, Vec<BlockId>> = HashMap::new();
        let mut seq_tokens: HashMap<RequestId, Vec<u32>> = HashMap::new();
        let (mut refusals, mut shared_hits) = (0, 0);

        for step in 0..3000 {
            let request = &ids[rng.below(ids.len())];
            let before = snapshot(&kv);
            let free = kv.num_free_blocks();
            match rng.below(4) {
                0 if !expected.contains_key(request) => {
                    // Three prompt families, so prefixes repeat across requests.
                    let prompt = tokens(1000 * rng.below(3) as u32, 1 + rng.below(20));
                    let cached = kv.lookup_prefix(0, &prompt);
                    let fresh = kv.blocks_for(prompt.len()) - cached.len();
                    let held: HashSet<BlockId> = expected.values().flatten().copied().collect();
                    let revived = cached.iter().filter(|b| !held.contains(b)).count();
                    match kv.allocate_with_prefix(0, request, &cached, prompt.len()) {
                        Ok(()) => {
                            let table = kv.block_table(request).to_vec();
                            assert_eq!(table.len(), kv.blocks_for(prompt.len()));
                            assert_eq!(&table[..cached.len()], cached.as_slice());
                            shared_hits += cached.iter().filter(|b| held.contains(b)).count();
                            kv.cache_full_blocks(request, &prompt, prompt.len());
                            expected.insert(request.clone(), table);
                            seq_tokens.insert(request.clone(), prompt);
                        }
                        Err(e) => {
                            let needed = fresh + revived;
                            assert_eq!(e, KvCacheError::OutOfBlocks { needed, free });
                            assert!(needed > free);
                            assert_eq!(snapshot(&kv), before, "step {step}: failed allocate");
                            refusals += 1;
                        }
                    }
                }
                1 if expected.contains_key(request) => {
                    let more = 1 + rng.below(3);
                    match kv.extend(request, more) {
                        Ok(new) => {
                            assert_eq!(new.len(), more);
                            let table = expected.get_mut(request).expect("held");
                            table.extend_from_slice(&new);
                            assert_eq!(kv.block_table(request), table.as_slice());
                        }
                        Err(e) => {
                            assert_eq!(e, KvCacheError::OutOfBlocks { needed: more, free });
                            assert!(more > free);
                            assert_eq!(snapshot(&kv), before, "step {step}: failed extend");
                            refusals += 1;
                        }
                    }
                }
                2 if expected.contains_key(request) => {
                    // The sequence grows by a few computed tokens.
                    let seq = seq_tokens.get_mut(request).expect("held");
                    let old_len = seq.len();
                    seq.extend(tokens(5000 + step, 1 + rng.below(6)));
                    let have = expected[request].len();
                    let missing = kv.blocks_for(seq.len()).saturating_sub(have);
                    match kv.ensure_capacity(request, seq.len()) {
                        Ok(added) => {
                            assert_eq!(added, missing);
                            let table = kv.block_table(request).to_vec();
                            assert_eq!(&table[..have], expected[request].as_slice());
                            kv.cache_full_blocks(request, seq, seq.len());
                            expected.insert(request.clone(), table);
                        }
                        Err(e) => {
                            assert_eq!(
                                e,
                                KvCacheError::OutOfBlocks {
                                    needed: missing,
                                    free
                                }
                            );
                            assert_eq!(snapshot(&kv), before, "step {step}: failed ensure");
                            seq.truncate(old_len);
                            refusals += 1;
                        }
                    }
                }
                _ => {
                    kv.free(request);
                    expected.remove(request);
                    seq_tokens.remove(request);
                    assert!(kv.block_table(request).is_empty());
                }
            }
            assert_consistent(&kv);
            if !prefix_caching {
                let all: Vec<BlockId> = expected.values().flatten().copied().collect();
                let distinct: HashSet<BlockId> = all.iter().copied().collect();
                assert_eq!(all.len(), distinct.len(), "step {step}: a block held twice");
            }
        }
        assert!(
            refusals > 0,
            "the workload must run the cache dry sometimes"
        );
        if prefix_caching {
            assert!(shared_hits > 0, "the workload must share prefix blocks");
        }
        for request in &ids {
            kv.free(request);
        }
        assert_consistent(&kv);
        assert_eq!(kv.stats().free_blocks, NUM_BLOCKS);
        assert_eq!(kv.stats().used_blocks(), 0);
        assert!(kv.blocks.iter().all(|m| m.ref_count == 0));
    }

    #[test]
    fn random_allocate_extend_free_never_hands_out_a_block_twice() {
        for seed in [1, 2, 3] {
            randomized_alloc_free(false, seed);
        }
    }

    #[test]
    fn random_workload_with_prefix_caching_shares_only_cached_blocks() {
        for seed in [4, 5, 6] {
            randomized_alloc_free(true, seed);
        }
    }

    #[test]
    fn blocks_are_handed_out_in_order_from_a_fresh_cache() {
        let mut kv = manager(8, 4, false);
        assert_eq!(kv.allocate(&id("a"), 3), Ok(vec![0, 1, 2]));
        assert_eq!(kv.allocate(&id("b"), 2), Ok(vec![3, 4]));
    }

    #[test]
    fn freed_blocks_are_reused_last_freed_first() {
        let mut kv = manager(8, 4, false);
        kv.allocate(&id("a"), 3).expect("a"); // 0, 1, 2
        kv.allocate(&id("b"), 2).expect("b"); // 3, 4
        kv.free(&id("b")); // releases 4 then 3
        kv.free(&id("a")); // releases 2, 1, then 0: 0 is the most recently freed
                           // a's blocks come back head first (freed last), then b's, then untouched ones.
        assert_eq!(kv.allocate(&id("c"), 1), Ok(vec![0]));
        assert_eq!(kv.allocate(&id("d"), 5), Ok(vec![1, 2, 3, 4, 5]));
        assert_eq!(kv.block_table(&id("d")), &[1, 2, 3, 4, 5]);
    }

    #[test]
    fn extend_that_does_not_fit_fails_without_taking_any_block() {
        let mut kv = manager(4, 4, false);
        kv.allocate(&id("a"), 3).expect("a");
        let before = snapshot(&kv);
        assert_eq!(
            kv.extend(&id("a"), 2),
            Err(KvCacheError::OutOfBlocks { needed: 2, free: 1 })
        );
        assert_eq!(snapshot(&kv), before);
        assert_eq!(kv.block_table(&id("a")), &[0, 1, 2]);
        assert_eq!(kv.extend(&id("a"), 1), Ok(vec![3]));
    }

    #[test]
    fn allocate_that_does_not_fit_fails_without_creating_a_table() {
        let mut kv = manager(4, 4, false);
        kv.allocate(&id("a"), 2).expect("a");
        let before = snapshot(&kv);
        assert_eq!(
            kv.allocate(&id("b"), 3),
            Err(KvCacheError::OutOfBlocks { needed: 3, free: 2 })
        );
        assert_eq!(
            kv.allocate_with_prefix(0, &id("b"), &[], 9),
            Err(KvCacheError::OutOfBlocks { needed: 3, free: 2 })
        );
        assert_eq!(
            kv.ensure_capacity(&id("a"), 17),
            Err(KvCacheError::OutOfBlocks { needed: 3, free: 2 })
        );
        assert_eq!(snapshot(&kv), before);
        assert!(kv.block_table(&id("b")).is_empty());
        assert!(!kv.tables.contains_key(&id("b")));
        assert_eq!(kv.stats().free_blocks, 2);
    }

    #[test]
    fn ensure_capacity_adds_only_the_missing_blocks() {
        let mut kv = manager(8, 4, false);
        let a = id("a");
        assert_eq!(kv.ensure_capacity(&a, 5), Ok(2));
        assert_eq!(kv.ensure_capacity(&a, 8), Ok(0));
        assert_eq!(kv.ensure_capacity(&a, 3), Ok(0), "never shrinks");
        assert_eq!(kv.block_table(&a), &[0, 1]);
        assert_eq!(kv.ensure_capacity(&a, 9), Ok(1));
        assert_eq!(kv.ensure_capacity(&a, 20), Ok(2));
        assert_eq!(kv.block_table(&a), &[0, 1, 2, 3, 4]);
        assert_eq!(kv.num_free_blocks(), 3);
    }

    /// A cache with request "a" holding `prompt`, all of it computed and cached.
    fn cached_request(kv: &mut KvCacheManager, prompt: &[u32]) {
        let a = id("a");
        kv.allocate_with_prefix(0, &a, &[], prompt.len())
            .expect("room for a");
        kv.cache_full_blocks(&a, prompt, prompt.len());
    }

    #[test]
    fn lookup_returns_the_cached_blocks_of_a_shared_prefix() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 10)); // blocks 0, 1 full; 2 partial
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 12)), vec![0, 1]);
        let mut diverging = tokens(0, 8);
        diverging.extend([77, 78, 79]);
        assert_eq!(kv.lookup_prefix(0, &diverging), vec![0, 1]);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 6)), vec![0]);
        assert!(kv.lookup_prefix(0, &tokens(0, 4)).is_empty());
    }

    #[test]
    fn lookup_always_leaves_the_last_token_to_compute() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 12));
        // Exactly two full blocks: only the first is reused.
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 8)), vec![0]);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 9)), vec![0, 1]);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 12)), vec![0, 1]);
    }

    #[test]
    fn only_blocks_full_of_computed_tokens_are_cached() {
        let mut kv = manager(8, 4, true);
        let a = id("a");
        let prompt = tokens(0, 12);
        kv.allocate(&a, 3).expect("a");
        kv.cache_full_blocks(&a, &prompt, 7);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 13)), vec![0]);
        kv.cache_full_blocks(&a, &prompt, 12);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 13)), vec![0, 1, 2]);
    }

    #[test]
    fn a_different_block_breaks_the_prefix_chain() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 12));
        let mut second_differs = tokens(0, 12);
        second_differs[5] = 99;
        assert_eq!(kv.lookup_prefix(0, &second_differs), vec![0]);
        // Same second and third blocks after a different first: nothing matches,
        // because a block's identity includes everything before it.
        let mut first_differs = tokens(0, 12);
        first_differs[0] = 99;
        assert!(kv.lookup_prefix(0, &first_differs).is_empty());
    }

    #[test]
    fn a_cached_block_is_reused_only_after_the_same_earlier_blocks() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 8)); // a: [0..4] in block 0, [4..8] in 1
        let c = id("c");
        kv.allocate(&c, 2).expect("c"); // blocks 2, 3
        kv.cache_full_blocks(&c, &tokens(100, 8), 8);
        // c's first block, then a's second block: that second block was computed
        // after different tokens, so its K/V do not apply here.
        let mut spliced = tokens(100, 4);
        spliced.extend(tokens(4, 4));
        spliced.push(7);
        assert_eq!(kv.lookup_prefix(0, &spliced), vec![2]);
    }

    #[test]
    fn a_shared_block_stays_held_until_its_last_holder_frees_it() {
        let mut kv = manager(8, 4, true);
        let (a, b) = (id("a"), id("b"));
        cached_request(&mut kv, &tokens(0, 10)); // a: 0, 1, 2
        let cached = kv.lookup_prefix(0, &tokens(0, 12));
        assert_eq!(cached, vec![0, 1]);
        kv.allocate_with_prefix(0, &b, &cached, 12).expect("b");
        assert_eq!(kv.block_table(&b), &[0, 1, 3]);
        assert_eq!(kv.num_free_blocks(), 4);
        assert_consistent(&kv);

        kv.free(&a);
        assert_eq!(kv.num_free_blocks(), 5, "only a's private block is freed");
        assert_eq!(kv.stats().cached_blocks, 0);
        assert_eq!(kv.allocate(&id("c"), 5), Ok(vec![2, 4, 5, 6, 7]));
        assert_eq!(kv.block_table(&b), &[0, 1, 3], "b's blocks untouched");
        assert_consistent(&kv);

        kv.free(&id("c"));
        kv.free(&b);
        assert_eq!(kv.stats().free_blocks, 8);
        assert_eq!(kv.stats().cached_blocks, 2);
        assert_consistent(&kv);
    }

    #[test]
    fn a_freed_cached_block_counts_as_free_until_lookup_revives_it() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 10));
        kv.free(&id("a"));
        let stats = kv.stats();
        assert_eq!((stats.free_blocks, stats.cached_blocks), (8, 2));
        assert_eq!(stats.used_blocks(), 0);
        assert!(kv.can_allocate(8));

        let cached = kv.lookup_prefix(0, &tokens(0, 9));
        assert_eq!(cached, vec![0, 1]);
        kv.allocate_with_prefix(0, &id("b"), &cached, 9).expect("b");
        assert_eq!(kv.block_table(&id("b"))[..2], [0, 1]);
        let stats = kv.stats();
        assert_eq!((stats.free_blocks, stats.cached_blocks), (5, 0));
        assert_eq!(stats.memory_used_bytes, 3 * stats.bytes_per_block);
        assert_consistent(&kv);
    }

    #[test]
    fn reviving_cached_blocks_counts_them_against_the_free_pool() {
        let mut kv = manager(4, 4, true);
        cached_request(&mut kv, &tokens(0, 9)); // 0, 1 cached; 2 partial
        kv.free(&id("a"));
        kv.allocate(&id("x"), 2)
            .expect("x takes the two clean blocks");
        let cached = kv.lookup_prefix(0, &tokens(0, 12));
        assert_eq!(cached, vec![0, 1]);
        let before = snapshot(&kv);
        // 2 revived + 1 fresh > 2 free.
        assert_eq!(
            kv.allocate_with_prefix(0, &id("b"), &cached, 12),
            Err(KvCacheError::OutOfBlocks { needed: 3, free: 2 })
        );
        assert_eq!(snapshot(&kv), before);
        assert_eq!(
            kv.lookup_prefix(0, &tokens(0, 12)),
            vec![0, 1],
            "still cached"
        );
        kv.allocate_with_prefix(0, &id("b"), &cached, 8)
            .expect("exactly fits");
        assert_eq!(kv.num_free_blocks(), 0);
        assert_consistent(&kv);
    }

    #[test]
    fn cached_blocks_are_evicted_only_when_clean_ones_run_out_oldest_first() {
        let mut kv = manager(4, 2, true);
        cached_request(&mut kv, &tokens(0, 5)); // a: 0, 1 cached; 2 partial
        kv.free(&id("a")); // 2 to the clean list; 1 then 0 become evictable
        assert_eq!(kv.stats().cached_blocks, 2);

        assert_eq!(
            kv.allocate(&id("x"), 2),
            Ok(vec![2, 3]),
            "clean blocks first"
        );
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 5)), vec![0, 1]);

        // The tail (1) was freed first, so it is the oldest and goes first.
        assert_eq!(kv.allocate(&id("y"), 1), Ok(vec![1]));
        assert_eq!(kv.stats().cached_blocks, 1);
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 5)), vec![0]);
        assert_eq!(kv.allocate(&id("z"), 1), Ok(vec![0]));
        assert_eq!(kv.stats().cached_blocks, 0);
        assert!(kv.lookup_prefix(0, &tokens(0, 5)).is_empty());
        assert_consistent(&kv);
    }

    #[test]
    fn eviction_follows_the_order_blocks_were_freed_not_block_ids() {
        let mut kv = manager(2, 2, true);
        let (a, b) = (id("a"), id("b"));
        kv.allocate(&a, 1).expect("a"); // block 0
        kv.allocate(&b, 1).expect("b"); // block 1
        kv.cache_full_blocks(&a, &tokens(0, 2), 2);
        kv.cache_full_blocks(&b, &tokens(100, 2), 2);
        kv.free(&b);
        kv.free(&a);
        assert_eq!(
            kv.allocate(&id("c"), 1),
            Ok(vec![1]),
            "b's block was freed first"
        );
        assert!(kv.lookup_prefix(0, &tokens(100, 3)).is_empty());
        assert_eq!(kv.lookup_prefix(0, &tokens(0, 3)), vec![0]);
    }

    #[test]
    fn prefix_hit_tokens_count_reused_tokens() {
        let mut kv = manager(8, 4, true);
        cached_request(&mut kv, &tokens(0, 10));
        assert_eq!(kv.stats().prefix_hit_tokens, 0);
        let cached = kv.lookup_prefix(0, &tokens(0, 12));
        kv.allocate_with_prefix(0, &id("b"), &cached, 12)
            .expect("b");
        assert_eq!(kv.stats().prefix_hit_tokens, 8);
        let cached = kv.lookup_prefix(0, &tokens(0, 6));
        kv.allocate_with_prefix(0, &id("c"), &cached, 6).expect("c");
        assert_eq!(kv.stats().prefix_hit_tokens, 12);
    }

    #[test]
    fn with_prefix_caching_disabled_nothing_is_reused() {
        let mut kv = manager(8, 4, false);
        cached_request(&mut kv, &tokens(0, 10));
        assert!(kv.lookup_prefix(0, &tokens(0, 12)).is_empty());
        kv.free(&id("a"));
        let stats = kv.stats();
        assert_eq!((stats.free_blocks, stats.cached_blocks), (8, 0));
        assert!(kv.lookup_prefix(0, &tokens(0, 12)).is_empty());
        assert_eq!(stats.prefix_hit_tokens, 0);
    }

    #[test]
    fn stats_report_blocks_and_memory() {
        let mut kv = manager(6, 4, false);
        // 2 (K and V) * 4 tokens * 1 head * 2 dims * 4 bytes * 1 layer.
        assert_eq!(shape().bytes_per_block(4), 64);
        kv.allocate(&id("a"), 2).expect("a");
        let stats = kv.stats();
        assert_eq!(stats.total_blocks, 6);
        assert_eq!(stats.free_blocks, 4);
        assert_eq!(stats.used_blocks(), 2);
        assert_eq!(stats.memory_total_bytes, 6 * 64);
        assert_eq!(stats.memory_used_bytes, 2 * 64);
        assert!((stats.utilization() - 2.0 / 6.0).abs() < 1e-12);
    }

    /// `[slots, heads * dim]` index rows, each row one slot id, as `write` expects.
    fn slot_rows(slots: &[u32], width: usize) -> Tensor {
        let data: Vec<u32> = slots
            .iter()
            .flat_map(|&s| std::iter::repeat_n(s, width))
            .collect();
        Tensor::from_vec(data, (slots.len(), width), &Device::Cpu).expect("slots")
    }

    fn two_head_cache() -> KvCacheManager {
        let shape = KvCacheShape {
            num_layers: 2,
            num_kv_heads: 2,
            head_dim: 2,
            dtype: DType::F32,
        };
        // 3 blocks of 2 tokens: slots 0..6.
        KvCacheManager::new(3, 2, shape, &Device::Cpu, false).expect("cache")
    }

    #[test]
    fn layer_write_then_gather_round_trips_through_slots() -> candle_core::Result<()> {
        let kv = two_head_cache();
        let layer = &kv.layers()[0];
        let k: Vec<f32> = (1..=8).map(|x| x as f32).collect(); // 2 tokens, 2 heads, 2 dims
        let v: Vec<f32> = (1..=8).map(|x| -(x as f32)).collect();
        let k = Tensor::from_vec(k, (2, 2, 2), &Device::Cpu)?;
        let v = Tensor::from_vec(v, (2, 2, 2), &Device::Cpu)?;
        layer.write(&k, &v, &slot_rows(&[4, 1], 4))?;

        let order = Tensor::new(&[1u32, 4, 0], &Device::Cpu)?;
        let (gk, gv) = layer.gather(&order)?;
        assert_eq!(gk.dims(), &[3, 2, 2]);
        assert_eq!(
            gk.to_vec3::<f32>()?,
            vec![
                vec![vec![5., 6.], vec![7., 8.]],
                vec![vec![1., 2.], vec![3., 4.]],
                vec![vec![0., 0.], vec![0., 0.]],
            ]
        );
        assert_eq!(
            gv.to_vec3::<f32>()?,
            vec![
                vec![vec![-5., -6.], vec![-7., -8.]],
                vec![vec![-1., -2.], vec![-3., -4.]],
                vec![vec![0., 0.], vec![0., 0.]],
            ]
        );
        Ok(())
    }

    #[test]
    fn a_fork_shares_full_blocks_and_copies_a_half_full_one() -> candle_core::Result<()> {
        let mut kv = two_head_cache();
        let parent = id("parent");
        kv.allocate(&parent, 2).expect("two blocks");
        let table = kv.block_table(&parent).to_vec();
        // Three computed positions: block 0 full, block 1 holding one.
        let k = Tensor::arange(0f32, 12., &Device::Cpu)?.reshape((3, 2, 2))?;
        let slots: Vec<u32> = (0..3).map(|p| table[p / 2] * 2 + (p % 2) as u32).collect();
        for layer in kv.layers() {
            layer.write(&k, &k.neg()?, &slot_rows(&slots, 4))?;
        }
        let child = id("child");
        kv.fork(&parent, &child, 3)
            .expect("one free block for the copy");
        let forked = kv.block_table(&child).to_vec();
        assert_eq!(forked[0], table[0], "the full block is shared");
        assert_ne!(forked[1], table[1], "the half-full block is copied");
        assert_eq!(kv.blocks[table[0] as usize].ref_count, 2);
        assert_consistent(&kv);
        for layer in kv.layers() {
            let (ck, cv) = layer.gather(&Tensor::new(&[forked[1] * 2], &Device::Cpu)?)?;
            assert_eq!(ck.flatten_all()?.to_vec1::<f32>()?, vec![8., 9., 10., 11.]);
            assert_eq!(
                cv.flatten_all()?.to_vec1::<f32>()?,
                vec![-8., -9., -10., -11.]
            );
        }
        // No block left for another copy: refused, nothing taken.
        let before = kv.num_free_blocks();
        assert!(matches!(
            kv.fork(&parent, &id("third"), 3),
            Err(KvCacheError::OutOfBlocks { needed: 1, .. })
        ));
        assert_eq!(kv.num_free_blocks(), before);
        assert!(kv.block_table(&id("third")).is_empty());
        // At a block boundary nothing is copied.
        kv.fork(&parent, &id("aligned"), 2).expect("shares only");
        assert_eq!(kv.block_table(&id("aligned")), &table[..1]);
        kv.free(&parent);
        assert_consistent(&kv);
        assert_eq!(
            kv.blocks[table[0] as usize].ref_count, 2,
            "held by the forks"
        );
        kv.free(&child);
        kv.free(&id("aligned"));
        assert_consistent(&kv);
        assert_eq!(kv.num_free_blocks(), 3);
        Ok(())
    }

    #[test]
    fn layer_write_lands_in_the_cache_tensor_in_place() -> candle_core::Result<()> {
        let kv = two_head_cache();
        // A clone shares storage with the manager's tensors, as the executor's view does.
        let layer = kv.layers()[1].clone();
        let k = Tensor::from_vec(vec![1f32, 2., 3., 4.], (1, 2, 2), &Device::Cpu)?;
        let v = Tensor::from_vec(vec![9f32, 8., 7., 6.], (1, 2, 2), &Device::Cpu)?;
        layer.write(&k, &v, &slot_rows(&[3], 4))?; // block 1, offset 1

        let flat_k = kv.layers()[1].k.flatten_all()?.to_vec1::<f32>()?;
        let flat_v = kv.layers()[1].v.flatten_all()?.to_vec1::<f32>()?;
        let mut want_k = vec![0f32; 24];
        let mut want_v = vec![0f32; 24];
        want_k[12..16].copy_from_slice(&[1., 2., 3., 4.]);
        want_v[12..16].copy_from_slice(&[9., 8., 7., 6.]);
        assert_eq!(flat_k, want_k);
        assert_eq!(flat_v, want_v);
        let block = kv.layers()[1].k.get(1)?.get(1)?.to_vec2::<f32>()?;
        assert_eq!(block, vec![vec![1., 2.], vec![3., 4.]]);
        // The other layer is untouched.
        let other = kv.layers()[0].k.flatten_all()?.to_vec1::<f32>()?;
        assert!(other.iter().all(|&x| x == 0.0));
        Ok(())
    }

    fn with_conv(num_blocks: usize) -> KvCacheManager {
        let shape = super::super::conv_state::ConvStateShape {
            num_layers: 1,
            channels: 2,
            width: 2,
            dtype: DType::F32,
        };
        let conv = ConvStateCache::new(shape, 1, &Device::Cpu).expect("conv state");
        manager(num_blocks, 2, true).with_conv_state(conv)
    }

    #[test]
    fn conv_state_comes_and_goes_with_the_blocks() {
        let mut kv = with_conv(6);
        let (a, b) = (id("a"), id("b"));
        kv.allocate(&a, 1).expect("blocks");
        let slot_a = kv.conv_slot(&a).expect("a slot with its blocks");
        kv.ensure_capacity(&a, 4).expect("grows");
        assert_eq!(kv.conv_slot(&a), Some(slot_a), "growing keeps the slot");
        kv.allocate_with_prefix(0, &b, &[], 3).expect("blocks");
        let slot_b = kv.conv_slot(&b).expect("b slot");
        assert_ne!(slot_a, slot_b);
        kv.free(&a);
        assert_eq!(kv.conv_slot(&a), None);
        assert_eq!(kv.conv_state().map(|c| c.num_allocated()), Some(1));
        // Out of blocks: no table, no slot.
        assert!(kv.allocate(&a, 10).is_err());
        assert_eq!(kv.conv_slot(&a), None);
    }

    #[test]
    fn a_forked_table_gets_a_copy_of_its_parents_conv_state() -> candle_core::Result<()> {
        let mut kv = with_conv(6);
        let (parent, child) = (id("parent"), id("child"));
        kv.allocate(&parent, 2).expect("blocks");
        let from = kv.conv_slot(&parent).expect("slot");
        let conv = kv.conv_state().expect("conv");
        let state = Tensor::new(&[[[1f32, 2.], [3., 4.]]], &Device::Cpu)?;
        super::super::conv_state::write_rows(&conv.layers()[0], &[from], &state)?;
        kv.fork(&parent, &child, 3).expect("fork");
        let to = kv.conv_slot(&child).expect("child slot");
        assert_ne!(from, to);
        let copied = kv.conv_state().expect("conv").layers()[0]
            .get(to as usize)?
            .to_vec2::<f32>()?;
        assert_eq!(copied, vec![vec![1., 2.], vec![3., 4.]]);
        Ok(())
    }

    #[test]
    fn conv_state_turns_prefix_caching_off() {
        let mut kv = with_conv(6);
        let tokens = [1, 2, 3, 4, 5];
        kv.allocate(&id("a"), 3).expect("blocks");
        kv.cache_full_blocks(&id("a"), &tokens, 5);
        kv.free(&id("a"));
        assert!(kv.lookup_prefix(0, &tokens).is_empty());
    }
}
