//! LFM2's gated short convolution: `in_proj` gives B, C and x; B·x goes through a causal
//! depthwise convolution of a few taps over time; C gates its output; `out_proj` maps
//! it back.
//!
//! The convolution of a chunk needs the `kernel − 1` values of B·x before it. They are
//! the sequence's convolution state, which the engine owns (one row per sequence, see
//! `crate::engine::conv_state`): each step reads the rows of its sequences, prepends
//! them to the chunk, and writes the chunk's last `kernel − 1` values back in place.

use candle_core::{Module, Result, Tensor};

use super::model::Lfm2Weights;
use crate::engine::conv_state::write_rows;
use crate::models::shared::linear::Linear;

pub struct ShortConv {
    in_proj: Linear,
    out_proj: Linear,
    /// The kernel's taps, oldest input first, each `[channels]`.
    taps: Vec<Tensor>,
    bias: Option<Tensor>,
    hidden: usize,
}

/// Sequences convolved together: `num_seqs` consecutive sequences of `len` tokens
/// each, starting at flat row `first_row`, with state rows `slots`.
pub struct ConvGroup {
    pub first_row: usize,
    pub len: usize,
    pub slots: Vec<u32>,
}

impl ShortConv {
    pub fn load(
        w: &dyn Lfm2Weights,
        prefix: &str,
        hidden: usize,
        kernel: usize,
        bias: bool,
    ) -> Result<Self> {
        let weight = w.tensor(&format!("{prefix}.conv.weight"), &[hidden, 1, kernel])?;
        let weight = weight.reshape((hidden, kernel))?;
        let taps = (0..kernel)
            .map(|k| weight.narrow(1, k, 1)?.squeeze(1)?.contiguous())
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            in_proj: w.linear(&format!("{prefix}.in_proj"), hidden, 3 * hidden, bias)?,
            out_proj: w.linear(&format!("{prefix}.out_proj"), hidden, hidden, bias)?,
            taps,
            bias: bias
                .then(|| w.tensor(&format!("{prefix}.conv.bias"), &[hidden]))
                .transpose()?,
            hidden,
        })
    }

    fn width(&self) -> usize {
        self.taps.len() - 1
    }

    /// `x`: `[tokens, hidden]`, every sequence of the step laid out flat; `state`: this
    /// layer's `[slots, hidden, kernel − 1]`, updated in place for every group.
    pub fn forward(&self, x: &Tensor, groups: &[ConvGroup], state: &Tensor) -> Result<Tensor> {
        let bcx = self.in_proj.forward(x)?;
        let h = self.hidden;
        let b = bcx.narrow(1, 0, h)?;
        let c = bcx.narrow(1, h, h)?;
        let bx = (b * bcx.narrow(1, 2 * h, h)?)?;
        let outputs = groups
            .iter()
            .map(|group| self.convolve(&bx, group, state))
            .collect::<Result<Vec<_>>>()?;
        let y = (c * Tensor::cat(&outputs, 0)?)?;
        self.out_proj.forward(&y)
    }

    /// One whole sequence `x` (`[tokens, hidden]`) convolved causally from a zero state.
    pub fn forward_dense(&self, x: &Tensor) -> Result<Tensor> {
        let bcx = self.in_proj.forward(x)?;
        let (n, h) = (x.dim(0)?, self.hidden);
        let bx = (bcx.narrow(1, 0, h)? * bcx.narrow(1, 2 * h, h)?)?;
        let zeros = Tensor::zeros((self.width(), h), bx.dtype(), bx.device())?;
        let window = Tensor::cat(&[&zeros, &bx], 0)?;
        let mut out = window.narrow(0, 0, n)?.broadcast_mul(&self.taps[0])?;
        for (k, tap) in self.taps.iter().enumerate().skip(1) {
            out = (out + window.narrow(0, k, n)?.broadcast_mul(tap)?)?;
        }
        if let Some(bias) = &self.bias {
            out = out.broadcast_add(bias)?;
        }
        self.out_proj.forward(&(bcx.narrow(1, h, h)? * out)?)
    }

    /// The convolution of one group's rows of `bx`: `[num_seqs * len, hidden]`.
    fn convolve(&self, bx: &Tensor, group: &ConvGroup, state: &Tensor) -> Result<Tensor> {
        let (m, n, width) = (group.slots.len(), group.len, self.width());
        let slots = Tensor::new(group.slots.as_slice(), bx.device())?;
        // [m, width, hidden] of earlier inputs, then the chunk: [m, width + n, hidden].
        let before = state.index_select(&slots, 0)?.transpose(1, 2)?;
        let chunk = bx
            .narrow(0, group.first_row, m * n)?
            .reshape((m, n, self.hidden))?;
        let window = Tensor::cat(&[&before, &chunk], 1)?;
        let mut out = window.narrow(1, 0, n)?.broadcast_mul(&self.taps[0])?;
        for (k, tap) in self.taps.iter().enumerate().skip(1) {
            out = (out + window.narrow(1, k, n)?.broadcast_mul(tap)?)?;
        }
        if let Some(bias) = &self.bias {
            out = out.broadcast_add(bias)?;
        }
        let after = window.narrow(1, n, width)?.transpose(1, 2)?;
        write_rows(state, &group.slots, &after)?;
        out.reshape((m * n, self.hidden))
    }
}

/// Groups a step's sequences for the convolution: runs of consecutive sequences with
/// as many tokens each (decodes) go together, as attention groups them.
pub fn conv_groups(batch: &crate::engine::ForwardBatch) -> Result<Vec<ConvGroup>> {
    let mut groups: Vec<ConvGroup> = Vec::new();
    let mut row = 0;
    for seq in &batch.sequences {
        let Some(slot) = seq.conv_slot else {
            candle_core::bail!("sequence {} has no convolution state", seq.request_id);
        };
        let len = seq.tokens.len();
        match groups.last_mut() {
            Some(group) if group.len == len && len == 1 => group.slots.push(slot),
            _ => groups.push(ConvGroup {
                first_row: row,
                len,
                slots: vec![slot],
            }),
        }
        row += len;
    }
    Ok(groups)
}
