//! Rotary position embeddings, in either layout checkpoints use for the pairs of
//! dimensions that rotate together.

use candle_core::{DType, Device, Result, Tensor};

/// The most positions rotation tables are built for: far beyond the contexts the engine
/// runs (`EngineCoreConfig::max_seq_len`, 4096 by default; a position past the table is
/// an error, not a crash), and few enough that a model file claiming a billion
/// positions cannot make loading allocate gigabytes (a failed allocation aborts the
/// process).
pub const MAX_POSITIONS: usize = 1 << 17;

/// Precomputed cos/sin tables, applied to tokens at arbitrary positions so that one
/// batch can mix sequences at different offsets.
#[derive(Debug, Clone)]
pub struct RotaryEmbedding {
    cos: Tensor,
    sin: Tensor,
    pairs: RotaryPairs,
}

/// Which dimensions of a head rotate together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotaryPairs {
    /// `i` with `i + head_dim / 2` (Hugging Face's rotate-half).
    Halves,
    /// `2i` with `2i + 1`: llama.cpp permutes the query and key rows of Llama-family
    /// GGUF files into this order, and attention scores are the same either way.
    Interleaved,
}

impl RotaryEmbedding {
    /// Tables for `head_dim` dimensions with base `theta`; `freq_factors`, when given,
    /// divide the frequencies one by one (llama.cpp's `rope_freqs`).
    pub fn new(
        head_dim: usize,
        max_positions: usize,
        theta: f64,
        freq_factors: Option<&[f32]>,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        if let Some(factors) = freq_factors {
            if factors.len() != head_dim / 2 {
                candle_core::bail!(
                    "{} RoPE frequency factors for a head of {head_dim} dimensions (want {})",
                    factors.len(),
                    head_dim / 2
                );
            }
        }
        let inv_freq: Vec<f32> = (0..head_dim / 2)
            .map(|i| {
                let factor = freq_factors.map_or(1.0, |f| f64::from(f[i]));
                (1.0 / theta.powf(2.0 * i as f64 / head_dim as f64) / factor) as f32
            })
            .collect();
        let inv_freq = Tensor::from_vec(inv_freq, (1, head_dim / 2), device)?;
        // A model file can declare any context length; the engine never runs longer
        // sequences than its own limit, far below this.
        let max_positions = max_positions.min(MAX_POSITIONS);
        let positions = Tensor::arange(0u32, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?;
        let freqs = positions.broadcast_mul(&inv_freq)?;
        Ok(Self {
            cos: freqs.cos()?.to_dtype(dtype)?,
            sin: freqs.sin()?.to_dtype(dtype)?,
            pairs: RotaryPairs::Halves,
        })
    }

    pub fn with_pairs(self, pairs: RotaryPairs) -> Self {
        Self { pairs, ..self }
    }

    /// Rotates `x` (`[tokens, heads, head_dim]`, contiguous), token `i` by `positions[i]`.
    pub fn apply(&self, x: &Tensor, positions: &Tensor) -> Result<Tensor> {
        let (tokens, heads, dim) = x.dims3()?;
        // Each token is its own batch entry of length one, with its own angle.
        let cos = self
            .cos
            .index_select(positions, 0)?
            .reshape((tokens, 1, dim / 2))?;
        let sin = self
            .sin
            .index_select(positions, 0)?
            .reshape((tokens, 1, dim / 2))?;
        let x = x.reshape((tokens, heads, 1, dim))?;
        match self.pairs {
            RotaryPairs::Halves => candle_nn::rotary_emb::rope(&x, &cos, &sin)?,
            RotaryPairs::Interleaved => candle_nn::rotary_emb::rope_i(&x, &cos, &sin)?,
        }
        .reshape((tokens, heads, dim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model file may claim any context: the tables stop at [`MAX_POSITIONS`].
    #[test]
    fn a_claimed_billion_positions_builds_bounded_tables() -> Result<()> {
        let rope =
            RotaryEmbedding::new(64, 1_000_000_000, 10_000.0, None, DType::F32, &Device::Cpu)?;
        assert_eq!(rope.cos.dims(), [MAX_POSITIONS, 32]);
        assert_eq!(rope.sin.dims(), [MAX_POSITIONS, 32]);
        Ok(())
    }
}
