//! Weight sources: safetensors files in Hugging Face layout, or seeded random weights
//! for tests and benchmarks.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use candle_core::{DType, Device, Result, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Memory-maps the safetensors files of a model.
pub fn load_safetensors<'a>(
    files: &[impl AsRef<Path>],
    dtype: DType,
    device: &Device,
) -> Result<VarBuilder<'a>> {
    // SAFETY: the files are not modified while mapped; we only read model weights.
    unsafe { VarBuilder::from_mmaped_safetensors(files, dtype, device) }
}

/// A [`VarBuilder`] whose every tensor is random, determined by the seed and the
/// tensor's name, so a model built twice from the same seed is the same model.
pub fn random_weights<'a>(seed: u64, dtype: DType, device: &Device) -> VarBuilder<'a> {
    VarBuilder::from_backend(Box::new(RandomWeights { seed }), dtype, device.clone())
}

struct RandomWeights {
    seed: u64,
}

impl SimpleBackend for RandomWeights {
    fn get(
        &self,
        shape: Shape,
        name: &str,
        init: Init,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let mut hasher = DefaultHasher::new();
        (self.seed, name).hash(&mut hasher);
        let mut rng = StdRng::seed_from_u64(hasher.finish());
        let fan_in = shape.dims().last().copied().unwrap_or(1).max(1);
        // Norm scales start near their constant init so they are exercised but sane;
        // matrices get a 1/sqrt(fan_in) spread, which keeps activations of unit size.
        let (mean, std) = match init {
            Init::Const(c) => (c as f32, 0.1),
            _ => (0.0, 1.0 / (fan_in as f32).sqrt()),
        };
        let values: Vec<f32> = (0..shape.elem_count())
            .map(|_| mean + std * normal(&mut rng))
            .collect();
        Tensor::from_vec(values, shape, device)?.to_dtype(dtype)
    }

    fn get_unchecked(&self, name: &str, _dtype: DType, _device: &Device) -> Result<Tensor> {
        candle_core::bail!("random weights need a shape for {name}")
    }

    fn contains_tensor(&self, _name: &str) -> bool {
        true
    }
}

/// A standard normal sample (Box–Muller).
fn normal(rng: &mut StdRng) -> f32 {
    let u1 = rng.random::<f32>().max(f32::MIN_POSITIVE);
    let u2 = rng.random::<f32>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
}
