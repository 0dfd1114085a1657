//! The codec's split residual vector quantizer, decode side: codebook 0 (semantic) and
//! codebooks 1.. (acoustic) are looked up, summed within each part, and each part
//! projected by its 1×1 convolution.

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::config::CodecDecoderConfig;

/// The reference divides each code's summed embedding by its usage count, floored here.
const USAGE_FLOOR: f64 = 1e-5;

struct Part {
    /// Per codebook: `[codebook_size, dim]`.
    codebooks: Vec<Tensor>,
    /// `[out, dim]`: the 1×1 output convolution as a matrix.
    output_proj: Tensor,
}

impl Part {
    fn load(vb: VarBuilder, codebooks: usize, c: &CodecDecoderConfig) -> Result<Self> {
        let dim = c.codebook_dim / 2;
        let codebooks = (0..codebooks)
            .map(|i| {
                let book = vb.pp(format!("vq.layers.{i}._codebook"));
                let sum = book.get((c.codebook_size, dim), "embedding_sum")?;
                let usage = book
                    .get(c.codebook_size, "cluster_usage")?
                    .clamp(USAGE_FLOOR, f64::INFINITY)?;
                sum.broadcast_div(&usage.unsqueeze(1)?)
            })
            .collect::<Result<Vec<_>>>()?;
        let output_proj = vb
            .get((c.codebook_dim, dim, 1), "output_proj.weight")?
            .squeeze(2)?;
        Ok(Self {
            codebooks,
            output_proj,
        })
    }

    /// `codes[i]` are codebook `i`'s codes over time; returns `[time, out]`.
    fn decode(&self, codes: &[Tensor]) -> Result<Tensor> {
        let mut sum: Option<Tensor> = None;
        for (book, ids) in self.codebooks.iter().zip(codes) {
            let e = book.index_select(ids, 0)?;
            sum = Some(match sum {
                None => e,
                Some(s) => (s + e)?,
            });
        }
        let sum = sum.ok_or_else(|| candle_core::Error::msg("no codebooks"))?;
        sum.matmul(&self.output_proj.t()?)
    }
}

pub struct Quantizer {
    first: Part,
    rest: Part,
}

impl Quantizer {
    pub fn load(vb: VarBuilder, c: &CodecDecoderConfig) -> Result<Self> {
        Ok(Self {
            first: Part::load(vb.pp("rvq_first"), 1, c)?,
            rest: Part::load(vb.pp("rvq_rest"), c.num_quantizers - 1, c)?,
        })
    }

    /// `codes`: `[time, codebooks]` (u32) → `[time, codebook_dim]`.
    pub fn decode(&self, codes: &Tensor) -> Result<Tensor> {
        let books = codes.dim(1)?;
        let columns = (0..books)
            .map(|i| codes.narrow(1, i, 1)?.squeeze(1)?.contiguous())
            .collect::<Result<Vec<_>>>()?;
        self.first.decode(&columns[..1])? + self.rest.decode(&columns[1..])?
    }
}
