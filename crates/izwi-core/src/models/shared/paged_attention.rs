//! Attention over the paged KV cache.
//!
//! All tokens of a step are laid out as one flat batch (`[tokens, ...]`), so every
//! projection and MLP runs as one matrix multiply for all sequences. Attention then
//! writes each token's K/V into its cache slot and reads each sequence's context back
//! through its block table: runs of single-token (decode) sequences are attended
//! together as one padded batch, each prefill chunk on its own.

use candle_core::{DType, Device, Result, Tensor, D};

use super::activations::softmax_last_dim;
use super::row_attention::RowAttention;
use crate::engine::{ForwardBatch, LayerKvCache};

/// Everything about a step's layout that every layer needs, built once per step.
pub struct PagedAttentionMetadata {
    /// Position of every token in its sequence: `[tokens]`.
    pub positions: Tensor,
    /// Rows whose logits are wanted, in batch order: `[n]`.
    pub logits_rows: Tensor,
    /// Cache slot of every token, one row per token as `scatter_set` wants:
    /// `[tokens, kv_width]`.
    write_slots: Tensor,
    groups: Vec<AttentionGroup>,
}

/// Sequences attended together: `num_seqs` consecutive sequences of `q_len` tokens each,
/// starting at flat row `first_row`, with contexts padded to `kv_len`.
struct AttentionGroup {
    first_row: usize,
    num_seqs: usize,
    q_len: usize,
    kv_len: usize,
    /// Slots to gather, `[num_seqs * kv_len]`; padding points at slot 0 and is masked.
    gather_slots: Tensor,
    /// `[num_seqs, 1, 1, q_len, kv_len]` of 0 and -inf; None when nothing is masked.
    mask: Option<Tensor>,
    /// Each sequence's cache slots in order, for the row kernel (decode groups).
    slots: Vec<Vec<usize>>,
}

impl PagedAttentionMetadata {
    /// `kv_width` is `num_kv_heads * head_dim` of the model.
    pub fn new(
        batch: &ForwardBatch,
        kv_width: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let block_size = batch.block_size;
        let mut positions = Vec::with_capacity(batch.num_tokens());
        let mut slots = Vec::with_capacity(batch.num_tokens());
        let mut logits_rows = Vec::new();
        for seq in &batch.sequences {
            for pos in seq.start_pos..seq.start_pos + seq.tokens.len() {
                positions.push(pos as u32);
                slots.push(seq.slot(pos, block_size));
            }
            if seq.compute_logits {
                logits_rows.push(positions.len() as u32 - 1);
            }
        }
        let num_tokens = positions.len();
        let write_slots: Vec<u32> = slots
            .iter()
            .flat_map(|&s| std::iter::repeat_n(s, kv_width))
            .collect();

        let mut groups = Vec::new();
        let mut row = 0;
        let mut i = 0;
        while i < batch.sequences.len() {
            // A run of decode sequences forms one group; a longer chunk is its own group.
            let mut end = i + 1;
            if batch.sequences[i].tokens.len() == 1 {
                while end < batch.sequences.len() && batch.sequences[end].tokens.len() == 1 {
                    end += 1;
                }
            }
            let group =
                AttentionGroup::new(&batch.sequences[i..end], row, block_size, dtype, device)?;
            row += group.num_seqs * group.q_len;
            groups.push(group);
            i = end;
        }
        Ok(Self {
            positions: Tensor::from_vec(positions, num_tokens, device)?,
            logits_rows: Tensor::from_vec(logits_rows.clone(), logits_rows.len(), device)?,
            write_slots: Tensor::from_vec(write_slots, (num_tokens, kv_width), device)?,
            groups,
        })
    }

    /// Stores this step's `k`/`v` in `cache`, then attends `q` to every sequence's
    /// cached context. `q`: `[tokens, heads, head_dim]`, `k`/`v`:
    /// `[tokens, kv_heads, head_dim]`; returns `[tokens, heads * head_dim]`.
    pub fn attention(
        &self,
        cache: &LayerKvCache,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<Tensor> {
        cache.write(k, v, &self.write_slots)?;
        let outputs = self
            .groups
            .iter()
            .map(|group| group.attend(cache, q))
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&outputs, 0)
    }
}

impl AttentionGroup {
    fn new(
        seqs: &[crate::engine::SequenceChunk],
        first_row: usize,
        block_size: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let q_len = seqs[0].tokens.len();
        let kv_len = seqs.iter().map(|s| s.context_len()).max().unwrap_or(0);
        let mut gather = Vec::with_capacity(seqs.len() * kv_len);
        let mut mask = Vec::with_capacity(seqs.len() * q_len * kv_len);
        let mut masked = false;
        let mut slots = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let context = seq.context_len();
            if q_len == 1 {
                slots.push(
                    (0..context)
                        .map(|pos| seq.slot(pos, block_size) as usize)
                        .collect(),
                );
            }
            gather.extend((0..kv_len).map(|pos| {
                if pos < context {
                    seq.slot(pos, block_size)
                } else {
                    0
                }
            }));
            for j in 0..q_len {
                // Query j sits at position start_pos + j and sees everything up to it.
                let visible = seq.start_pos + j + 1;
                masked |= visible < kv_len;
                mask.extend((0..kv_len).map(|pos| {
                    if pos < visible {
                        0.0
                    } else {
                        f32::NEG_INFINITY
                    }
                }));
            }
        }
        let mask = if masked {
            Some(
                Tensor::from_vec(mask, (seqs.len(), 1, 1, q_len, kv_len), device)?
                    .to_dtype(dtype)?,
            )
        } else {
            None
        };
        Ok(Self {
            first_row,
            num_seqs: seqs.len(),
            q_len,
            kv_len,
            gather_slots: Tensor::from_vec(gather, seqs.len() * kv_len, device)?,
            mask,
            slots,
        })
    }

    fn attend(&self, cache: &LayerKvCache, q: &Tensor) -> Result<Tensor> {
        let (_, heads, head_dim) = q.dims3()?;
        let (b, ql, kl) = (self.num_seqs, self.q_len, self.kv_len);
        let q_rows = q.narrow(0, self.first_row, b * ql)?;
        if ql == 1 && RowAttention::runs_on(&q_rows) {
            // Decode: each sequence's one query reads its keys in place in the cache.
            let kv_heads = cache.k.dim(2)?;
            let slot_width = kv_heads * head_dim;
            let op = RowAttention {
                sequences: self
                    .slots
                    .iter()
                    .map(|slots| (head_dim, slots.iter().map(|s| s * slot_width).collect()))
                    .collect(),
                seq_of_row: (0..b).collect(),
                kv_heads,
            };
            return op.forward(&q_rows, &cache.k, &cache.v);
        }
        let (k, v) = cache.gather(&self.gather_slots)?;
        let kv_heads = k.dim(1)?;
        let groups = heads / kv_heads;
        // [b, kv_heads, kl, d]
        let k = k
            .reshape((b, kl, kv_heads, head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let v = v
            .reshape((b, kl, kv_heads, head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        // Query heads that share a KV head are stacked along the query axis, so grouped
        // query attention needs no copy of K/V: [b, kv_heads, groups * ql, d].
        let q = q_rows
            .reshape((b, ql, kv_heads, groups, head_dim))?
            .permute((0, 2, 3, 1, 4))?
            .contiguous()?
            .reshape((b, kv_heads, groups * ql, head_dim))?;
        let scale = 1.0 / (head_dim as f64).sqrt();
        let mut scores = (q.matmul(&k.t()?)? * scale)?;
        if let Some(mask) = &self.mask {
            scores = scores
                .reshape((b, kv_heads, groups, ql, kl))?
                .broadcast_add(mask)?
                .reshape((b, kv_heads, groups * ql, kl))?;
        }
        let probs = softmax_last_dim(&scores)?;
        probs
            .matmul(&v)?
            .reshape((b, kv_heads, groups, ql, head_dim))?
            .permute((0, 3, 1, 2, 4))?
            .contiguous()?
            .reshape((b * ql, heads * head_dim))
    }
}

/// Causal attention over contiguous caches of `b` sequences of equal length: the dense
/// path models keep as the baseline the paged engine is checked against, and short
/// sequences run beside the engine (Qwen3-TTS's code predictor).
/// `q`: `[b, heads, n, d]`, `k`/`v`: `[b, kv_heads, total, d]` (the last `n` positions
/// are the queries'); returns `[b * n, heads * d]`, sequence by sequence.
pub fn dense_attention(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (b, heads, n, head_dim) = q.dims4()?;
    let (_, kv_heads, total, _) = k.dims4()?;
    let repeat = |t: &Tensor| -> Result<Tensor> {
        let groups = heads / kv_heads;
        t.unsqueeze(2)?
            .broadcast_as((b, kv_heads, groups, total, head_dim))?
            .reshape((b, heads, total, head_dim))
    };
    let (k, v) = (repeat(k)?, repeat(v)?);
    let scale = 1.0 / (head_dim as f64).sqrt();
    let mut scores = (q.contiguous()?.matmul(&k.t()?)? * scale)?;
    if n > 1 {
        let offset = total - n;
        let mask: Vec<f32> = (0..n)
            .flat_map(|i| {
                (0..total).map(move |j| {
                    if j <= offset + i {
                        0.0
                    } else {
                        f32::NEG_INFINITY
                    }
                })
            })
            .collect();
        let mask = Tensor::from_vec(mask, (n, total), q.device())?.to_dtype(q.dtype())?;
        scores = scores.broadcast_add(&mask)?;
    }
    let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
    probs
        .matmul(&v)?
        .transpose(1, 2)?
        .reshape((b * n, heads * head_dim))
}
