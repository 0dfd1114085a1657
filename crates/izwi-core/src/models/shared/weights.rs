//! Weight sources: safetensors files in Hugging Face layout, or seeded random weights
//! for tests and benchmarks.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Result, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::de::DeserializeOwned;

use super::half_weights;

/// Reads a Hugging Face model folder: its `config.json` as `C`, and its `*.safetensors`
/// files, memory-mapped.
pub fn load_model_dir<'a, C: DeserializeOwned>(
    dir: &Path,
    dtype: DType,
    device: &Device,
) -> Result<(C, VarBuilder<'a>)> {
    let config_path = dir.join("config.json");
    let text = std::fs::read_to_string(&config_path).map_err(|e| {
        candle_core::Error::msg(format!("cannot read {}: {e}", config_path.display()))
    })?;
    let config = serde_json::from_str(&text)
        .map_err(|e| candle_core::Error::msg(format!("invalid {}: {e}", config_path.display())))?;
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| is_hf_weights(p))
        .collect();
    if files.is_empty() {
        candle_core::bail!("no .safetensors weights in {}", dir.display());
    }
    files.sort();
    Ok((config, map_safetensors(&files, dtype, device)?))
}

/// Memory-maps safetensors files as one [`VarBuilder`] (f16 tensors asked for as f32
/// widened exactly).
pub fn map_safetensors<'a, P: AsRef<Path>>(
    files: &[P],
    dtype: DType,
    device: &Device,
) -> Result<VarBuilder<'a>> {
    // SAFETY: the files are not modified while mapped; we only read model weights.
    let mapped = unsafe { MmapedSafetensors::multi(files)? };
    Ok(VarBuilder::from_backend(
        Box::new(Mapped(mapped)),
        dtype,
        device.clone(),
    ))
}

/// Whether `path` holds weights in the Hugging Face layout: a `.safetensors` file, but
/// not Mistral's own `consolidated*.safetensors` that its repositories ship beside
/// them (other names for the same weights).
pub fn is_hf_weights(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "safetensors")
        && !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("consolidated"))
}

/// Memory-mapped safetensors, as candle reads them, but f16 and bf16 weights asked for
/// as f32 are widened by [`half_weights::widen`].
struct Mapped(MmapedSafetensors);

impl Mapped {
    fn load(&self, name: &str, dtype: DType, device: &Device) -> Result<Tensor> {
        let tensor = self.0.load(name, device)?;
        if matches!(tensor.dtype(), DType::F16 | DType::BF16) && dtype == DType::F32 {
            half_weights::widen(&tensor)
        } else {
            tensor.to_dtype(dtype)
        }
    }
}

impl SimpleBackend for Mapped {
    fn get(
        &self,
        shape: Shape,
        name: &str,
        _: Init,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let tensor = self.load(name, dtype, device)?;
        if tensor.shape() != &shape {
            candle_core::bail!(
                "{name} has shape {:?}, the model expects {:?}",
                tensor.shape(),
                shape
            );
        }
        Ok(tensor)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, device: &Device) -> Result<Tensor> {
        self.load(name, dtype, device)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.0.get(name).is_ok()
    }
}

/// Whether every floating-point tensor in the folder's `*.safetensors` files is stored
/// as `dtype` (read from the files' headers only). Integer tensors (a batch norm's step
/// count) are not weights and do not count.
pub fn stores_only(dir: &Path, dtype: DType) -> Result<bool> {
    let wanted = match dtype {
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
        other => candle_core::bail!("no safetensors name for {other:?}"),
    };
    let mut any = false;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "safetensors") {
            continue;
        }
        let mut file = std::fs::File::open(&path)?;
        let mut length = [0u8; 8];
        std::io::Read::read_exact(&mut file, &mut length)?;
        let length = u64::from_le_bytes(length);
        if length > 100 << 20 {
            candle_core::bail!("{}: implausible safetensors header", path.display());
        }
        let mut header = vec![0u8; length as usize];
        std::io::Read::read_exact(&mut file, &mut header)?;
        let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&header)
            .map_err(|e| candle_core::Error::msg(format!("{}: {e}", path.display())))?;
        for (name, tensor) in &header {
            if name == "__metadata__" {
                continue;
            }
            let stored = tensor["dtype"].as_str().unwrap_or_default();
            let integer = stored.starts_with('I') || stored.starts_with('U') || stored == "BOOL";
            if integer {
                continue;
            }
            if stored != wanted {
                return Ok(false);
            }
            any = true;
        }
    }
    Ok(any)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn file(dir: &Path, name: &str, tensors: &[(&str, DType)]) -> Result<std::path::PathBuf> {
        let path = dir.join(name);
        let tensors: HashMap<String, Tensor> = tensors
            .iter()
            .map(|&(n, dtype)| Ok((n.to_string(), Tensor::zeros(3, dtype, &Device::Cpu)?)))
            .collect::<Result<_>>()?;
        candle_core::safetensors::save(&tensors, &path)?;
        Ok(path)
    }

    #[test]
    fn only_floating_point_tensors_decide_the_stored_type() -> Result<()> {
        let dir = tempfile::tempdir()?;
        file(
            dir.path(),
            "a.safetensors",
            &[("w", DType::BF16), ("steps", DType::I64)],
        )?;
        assert!(stores_only(dir.path(), DType::BF16)?);
        assert!(!stores_only(dir.path(), DType::F16)?);
        let f32 = file(dir.path(), "b.safetensors", &[("v", DType::F32)])?;
        assert!(!stores_only(dir.path(), DType::BF16)?);
        std::fs::remove_file(f32)?;
        let counts = tempfile::tempdir()?;
        file(counts.path(), "c.safetensors", &[("steps", DType::I64)])?;
        assert!(
            !stores_only(counts.path(), DType::BF16)?,
            "no weights at all"
        );
        Ok(())
    }
}
