//! A token embedding table, dense or kept quantized (GGUF), that can double as a tied
//! output projection.

use std::sync::Arc;

use candle_core::quantized::QTensor;
use candle_core::{Module, Result, Tensor};

use super::linear::Linear;

#[derive(Debug, Clone)]
pub enum Embedding {
    /// `[vocab, hidden]`.
    Dense(Tensor),
    /// `[vocab, hidden]`, rows dequantized as they are looked up.
    Quantized(Arc<QTensor>),
}

impl Embedding {
    /// The rows of `ids` (u32, any shape): `[..ids, hidden]`, f32 when quantized.
    pub fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        match self {
            Self::Dense(table) => {
                candle_nn::Embedding::new(table.clone(), table.dim(1)?).forward(ids)
            }
            Self::Quantized(table) => table.embedding(ids),
        }
    }

    /// The output projection that shares this table's weights (`x · tableᵀ`).
    pub fn as_linear(&self) -> Result<Linear> {
        match self {
            Self::Dense(table) => Linear::new(table, None),
            Self::Quantized(table) => Linear::quantized(table.clone(), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;
    use candle_core::Device;

    #[test]
    fn a_quantized_table_looks_up_its_dequantized_rows() -> Result<()> {
        let dev = Device::Cpu;
        let table = Tensor::randn(0f32, 1.0, (10, 64), &dev)?;
        let q = QTensor::quantize(&table, GgmlDType::Q8_0)?;
        let dense = Embedding::Dense(q.dequantize(&dev)?);
        let quantized = Embedding::Quantized(Arc::new(q));
        let ids = Tensor::new(&[3u32, 0, 9, 3], &dev)?;
        let diff = (quantized.forward(&ids)? - dense.forward(&ids)?)?
            .abs()?
            .max_all()?
            .to_scalar::<f32>()?;
        assert_eq!(diff, 0.0);
        Ok(())
    }
}
