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
