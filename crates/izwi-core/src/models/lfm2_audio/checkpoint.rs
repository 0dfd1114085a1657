//! An LFM2-Audio folder as the model hub ships it: `config.json` and the model's
//! `model*.safetensors` (the Mimi codec's weights sit beside them in their own file).

use std::path::Path;

use candle_core::{DType, Device, Result};
use candle_nn::VarBuilder;

use super::config::Lfm2AudioConfig;
use crate::models::shared::weights::map_safetensors;

/// Reads the folder's config and maps its model weights.
pub fn open_checkpoint<'a>(
    dir: &Path,
    dtype: DType,
    device: &Device,
) -> Result<(Lfm2AudioConfig, VarBuilder<'a>)> {
    let config_path = dir.join("config.json");
    let text = std::fs::read_to_string(&config_path).map_err(|e| {
        candle_core::Error::msg(format!("cannot read {}: {e}", config_path.display()))
    })?;
    let config: Lfm2AudioConfig = serde_json::from_str(&text)
        .map_err(|e| candle_core::Error::msg(format!("invalid {}: {e}", config_path.display())))?;
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "safetensors")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("model"))
        })
        .collect();
    if files.is_empty() {
        candle_core::bail!("no model*.safetensors weights in {}", dir.display());
    }
    files.sort();
    Ok((config, map_safetensors(&files, dtype, device)?))
}
