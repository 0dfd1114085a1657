//! What a decoder's layers load by their Hugging Face names, whichever source holds
//! them: a safetensors checkpoint (a `VarBuilder`, here) or a GGUF file (each family's
//! own source, which maps the names and keeps quantized weights quantized).

use candle_core::{DType, Device, Result};
use candle_nn::{rms_norm, RmsNorm, VarBuilder};

use super::embedding::Embedding;
use super::linear::Linear;

pub trait DecoderWeights {
    fn linear(&self, name: &str, in_dim: usize, out_dim: usize, bias: bool) -> Result<Linear>;
    fn rms_norm(&self, name: &str, size: usize, eps: f64) -> Result<RmsNorm>;
    fn embedding(&self, name: &str, vocab: usize, hidden: usize) -> Result<Embedding>;
    fn dtype(&self) -> DType;
    fn device(&self) -> &Device;
}

impl DecoderWeights for VarBuilder<'_> {
    fn linear(&self, name: &str, in_dim: usize, out_dim: usize, bias: bool) -> Result<Linear> {
        if bias {
            Linear::load(in_dim, out_dim, self.pp(name))
        } else {
            Linear::load_no_bias(in_dim, out_dim, self.pp(name))
        }
    }

    fn rms_norm(&self, name: &str, size: usize, eps: f64) -> Result<RmsNorm> {
        rms_norm(size, eps, self.pp(name))
    }

    fn embedding(&self, name: &str, vocab: usize, hidden: usize) -> Result<Embedding> {
        let init = candle_nn::Init::Randn {
            mean: 0.,
            stdev: 1.,
        };
        Ok(Embedding::Dense(self.pp(name).get_with_hints(
            (vocab, hidden),
            "weight",
            init,
        )?))
    }

    fn dtype(&self) -> DType {
        VarBuilder::dtype(self)
    }

    fn device(&self) -> &Device {
        VarBuilder::device(self)
    }
}

/// A safetensors checkpoint stored in 16 bits (`half`: bf16 or f16, the type it stores)
/// whose decoder keeps its projections and embedding tables in that type: each is read
/// as it is stored and kept so ([`Linear::with_half_weight`]), never widened to f32 and
/// narrowed back (for a 0.6B Qwen3-TTS, gigabytes of conversions and page faults at
/// every load). Norms and biases come in the builder's type. Without `half`, this is
/// the builder itself.
#[derive(Clone)]
pub struct KeptIn<'a> {
    vb: VarBuilder<'a>,
    half: Option<DType>,
}

impl<'a> KeptIn<'a> {
    pub fn new(vb: VarBuilder<'a>, half: Option<DType>) -> Self {
        Self { vb, half }
    }

    /// The weights under `prefix`.
    pub fn pp(&self, prefix: &str) -> Self {
        Self {
            vb: self.vb.pp(prefix),
            half: self.half,
        }
    }

    /// The builder for what is not kept in 16 bits (norms, biases).
    pub fn vb(&self) -> &VarBuilder<'a> {
        &self.vb
    }
}

impl DecoderWeights for KeptIn<'_> {
    fn linear(&self, name: &str, in_dim: usize, out_dim: usize, bias: bool) -> Result<Linear> {
        let Some(half) = self.half else {
            return self.vb.linear(name, in_dim, out_dim, bias);
        };
        let vb = self.vb.pp(name);
        let weight = vb.to_dtype(half).get_with_hints(
            (out_dim, in_dim),
            "weight",
            candle_nn::init::DEFAULT_KAIMING_NORMAL,
        )?;
        let bias = bias
            .then(|| vb.get_with_hints(out_dim, "bias", candle_nn::Init::Const(0.0)))
            .transpose()?;
        Linear::new(&weight, bias)?.with_half_weight(half)
    }

    fn rms_norm(&self, name: &str, size: usize, eps: f64) -> Result<RmsNorm> {
        self.vb.rms_norm(name, size, eps)
    }

    fn embedding(&self, name: &str, vocab: usize, hidden: usize) -> Result<Embedding> {
        match self.half {
            Some(half) => self.vb.to_dtype(half).embedding(name, vocab, hidden),
            None => self.vb.embedding(name, vocab, hidden),
        }
    }

    fn dtype(&self) -> DType {
        self.vb.dtype()
    }

    fn device(&self) -> &Device {
        self.vb.device()
    }
}
