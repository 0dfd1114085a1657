//! Per-sequence convolution state of hybrid models (LFM2: short convolutions beside
//! attention layers).
//!
//! A causal convolution of kernel `k` needs the `k − 1` inputs before a chunk to compute
//! it, so each running sequence carries them from step to step, per convolution layer.
//! Unlike K/V this state is not per position: it is overwritten each step, so it cannot
//! live in shared blocks. The engine keeps it in one tensor per layer,
//! `[slots, channels, width]`, and gives each sequence a slot for as long as it holds
//! KV blocks (see `KvCacheManager::with_conv_state`). The model reads the rows of a
//! step's sequences in one gather and writes them back in one scatter.

use std::collections::HashMap;

use candle_core::{DType, Device, Result, Tensor};

use super::types::RequestId;

/// The convolution state a hybrid model declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvStateShape {
    /// Convolution layers (attention layers carry none).
    pub num_layers: usize,
    pub channels: usize,
    /// Inputs kept per channel: the kernel size minus one.
    pub width: usize,
    pub dtype: DType,
}

impl ConvStateShape {
    /// Bytes of one sequence's state across all layers.
    pub fn bytes_per_sequence(&self) -> usize {
        self.num_layers * self.channels * self.width * self.dtype.size_in_bytes()
    }
}

/// The convolution state of every sequence, by slot.
pub struct ConvStateCache {
    shape: ConvStateShape,
    device: Device,
    /// One `[slots, channels, width]` tensor per convolution layer.
    layers: Vec<Tensor>,
    free: Vec<u32>,
    owners: HashMap<RequestId, u32>,
}

impl ConvStateCache {
    /// Room for `num_slots` sequences; more are added when a sequence finds none free.
    pub fn new(shape: ConvStateShape, num_slots: usize, device: &Device) -> Result<Self> {
        let num_slots = num_slots.max(1);
        let layers = (0..shape.num_layers)
            .map(|_| {
                Tensor::zeros(
                    (num_slots, shape.channels, shape.width),
                    shape.dtype,
                    device,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            shape,
            device: device.clone(),
            layers,
            // Reversed so that slot 0 is handed out first.
            free: (0..num_slots as u32).rev().collect(),
            owners: HashMap::new(),
        })
    }

    pub fn shape(&self) -> ConvStateShape {
        self.shape
    }

    /// One `[slots, channels, width]` tensor per convolution layer, in layer order.
    pub fn layers(&self) -> &[Tensor] {
        &self.layers
    }

    /// The slot of a sequence, if it has one.
    pub fn slot(&self, id: &RequestId) -> Option<u32> {
        self.owners.get(id).copied()
    }

    pub fn num_allocated(&self) -> usize {
        self.owners.len()
    }

    /// Gives a sequence a zeroed slot: the state before its first token, which is what
    /// the convolution's causal zero padding sees. A sequence that has one keeps it.
    pub fn allocate(&mut self, id: &RequestId) -> Result<u32> {
        if let Some(slot) = self.slot(id) {
            return Ok(slot);
        }
        if self.free.is_empty() {
            self.grow()?;
        }
        let slot = self.free.pop().expect("grow adds free slots");
        let zeros = Tensor::zeros(
            (1, self.shape.channels, self.shape.width),
            self.shape.dtype,
            &self.device,
        )?;
        for layer in &self.layers {
            layer.slice_set(&zeros, 0, slot as usize)?;
        }
        self.owners.insert(id.clone(), slot);
        Ok(slot)
    }

    /// Gives `child` a slot holding a copy of `parent`'s state (a beam fork); on
    /// failure the child has none.
    pub fn fork(&mut self, parent: &RequestId, child: &RequestId) -> Result<()> {
        let slot = self.allocate(child)?;
        let Some(from) = self.slot(parent) else {
            return Ok(());
        };
        let copied = self.layers.iter().try_for_each(|layer| {
            // A copy first: the source must not share the storage being written.
            let row = layer.narrow(0, from as usize, 1)?.copy()?;
            layer.slice_set(&row, 0, slot as usize)
        });
        if copied.is_err() {
            self.free(child);
        }
        copied
    }

    /// Frees a sequence's slot.
    pub fn free(&mut self, id: &RequestId) {
        if let Some(slot) = self.owners.remove(id) {
            self.free.push(slot);
        }
    }

    /// A copy of the rows of `slots` in every layer, to undo a step that failed midway
    /// (unlike K/V, a state updated twice is wrong).
    pub fn snapshot(&self, slots: &[u32]) -> Result<Vec<Tensor>> {
        let index = Tensor::new(slots, &self.device)?;
        self.layers
            .iter()
            .map(|layer| layer.index_select(&index, 0))
            .collect()
    }

    /// Puts back rows taken by [`snapshot`](Self::snapshot) for the same `slots`.
    pub fn restore(&self, slots: &[u32], snapshot: &[Tensor]) -> Result<()> {
        for (layer, rows) in self.layers.iter().zip(snapshot) {
            write_rows(layer, slots, rows)?;
        }
        Ok(())
    }

    /// Doubles the number of slots. The layers become new tensors; the model is handed
    /// the current ones every step.
    fn grow(&mut self) -> Result<()> {
        let old = self.layers.first().map_or(0, |l| l.dim(0).unwrap_or(0));
        let added = old.max(1);
        for layer in &mut self.layers {
            let zeros = Tensor::zeros(
                (added, self.shape.channels, self.shape.width),
                self.shape.dtype,
                &self.device,
            )?;
            *layer = Tensor::cat(&[&*layer, &zeros], 0)?;
        }
        self.free.extend((old as u32..(old + added) as u32).rev());
        Ok(())
    }
}

/// Writes `rows` (`[slots.len(), channels, width]`) into the rows `slots` of `layer`
/// (`[num_slots, channels, width]`) in place.
pub fn write_rows(layer: &Tensor, slots: &[u32], rows: &Tensor) -> Result<()> {
    let (num_slots, channels, width) = layer.dims3()?;
    let row = channels * width;
    let index: Vec<u32> = slots
        .iter()
        .flat_map(|&slot| std::iter::repeat_n(slot, row))
        .collect();
    let index = Tensor::from_vec(index, (slots.len(), row), layer.device())?;
    // The reshape shares storage with the layer, so scatter_set writes in place.
    layer.reshape((num_slots, row))?.scatter_set(
        &index,
        &rows.reshape((slots.len(), row))?.contiguous()?,
        0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(slots: usize) -> ConvStateCache {
        let shape = ConvStateShape {
            num_layers: 2,
            channels: 3,
            width: 2,
            dtype: DType::F32,
        };
        ConvStateCache::new(shape, slots, &Device::Cpu).expect("cache")
    }

    fn row(cache: &ConvStateCache, layer: usize, slot: u32) -> Vec<f32> {
        cache.layers()[layer]
            .get(slot as usize)
            .and_then(|r| r.flatten_all())
            .and_then(|r| r.to_vec1())
            .expect("row")
    }

    fn fill(cache: &ConvStateCache, slot: u32, value: f32) {
        for layer in cache.layers() {
            let rows = Tensor::full(value, (1, 3, 2), &Device::Cpu).expect("rows");
            write_rows(layer, &[slot], &rows).expect("write");
        }
    }

    #[test]
    fn a_new_slot_is_zeroed_even_when_reused() {
        let mut c = cache(1);
        let a = RequestId::from("a");
        let slot = c.allocate(&a).expect("slot");
        fill(&c, slot, 5.0);
        assert_eq!(row(&c, 1, slot), vec![5.0; 6]);
        c.free(&a);
        let b = RequestId::from("b");
        assert_eq!(c.allocate(&b).expect("slot"), slot);
        assert_eq!(row(&c, 0, slot), vec![0.0; 6]);
        assert_eq!(row(&c, 1, slot), vec![0.0; 6]);
    }

    #[test]
    fn slots_grow_past_the_first_count_and_keep_the_states() {
        let mut c = cache(1);
        let ids: Vec<RequestId> = (0..5).map(|i| RequestId::from(format!("s{i}"))).collect();
        for (i, id) in ids.iter().enumerate() {
            let slot = c.allocate(id).expect("slot");
            fill(&c, slot, i as f32 + 1.0);
        }
        assert_eq!(c.num_allocated(), 5);
        for (i, id) in ids.iter().enumerate() {
            let slot = c.slot(id).expect("slot");
            assert_eq!(row(&c, 0, slot), vec![i as f32 + 1.0; 6]);
        }
    }

    #[test]
    fn a_fork_copies_its_parent_and_then_diverges() {
        let mut c = cache(2);
        let (parent, child) = (RequestId::from("p"), RequestId::from("c"));
        let p = c.allocate(&parent).expect("slot");
        fill(&c, p, 2.0);
        c.fork(&parent, &child).expect("fork");
        let k = c.slot(&child).expect("child slot");
        assert_ne!(p, k);
        assert_eq!(row(&c, 1, k), vec![2.0; 6]);
        fill(&c, k, 3.0);
        assert_eq!(row(&c, 1, p), vec![2.0; 6]);
    }

    #[test]
    fn restore_undoes_writes_to_the_snapshot_rows() {
        let mut c = cache(2);
        let a = RequestId::from("a");
        let slot = c.allocate(&a).expect("slot");
        fill(&c, slot, 1.0);
        let saved = c.snapshot(&[slot]).expect("snapshot");
        fill(&c, slot, 9.0);
        c.restore(&[slot], &saved).expect("restore");
        assert_eq!(row(&c, 0, slot), vec![1.0; 6]);
        assert_eq!(row(&c, 1, slot), vec![1.0; 6]);
    }
}
