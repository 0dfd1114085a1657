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

/// Counters and gauges of the cache.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KVCacheStats {
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

impl KVCacheStats {
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

pub struct KVCacheManager {
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
}

impl KVCacheManager {
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
        })
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
    pub fn lookup_prefix(&self, tokens: &[u32]) -> Vec<BlockId> {
        let mut hits = Vec::new();
        if !self.enable_prefix_caching {
            return hits;
        }
        let mut parent = 0;
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
    /// `num_tokens` tokens. All or nothing.
    pub fn allocate_with_prefix(
        &mut self,
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
        let mut table = BlockTable::default();
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

    pub fn stats(&self) -> KVCacheStats {
        let total = self.blocks.len();
        let free = self.num_free_blocks();
        KVCacheStats {
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
