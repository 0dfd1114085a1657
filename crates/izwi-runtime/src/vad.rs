//! The voice activity detector transcription cuts long audio with (Silero VAD). It
//! lives in the data folder (`vad/silero_vad_16k_op15.onnx`, put there by
//! `izwi models vad FILE` or the setup script). Without it, transcription cuts audio
//! at its quietest points instead and says so in the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use izwi_core::models::vad::SileroVad;
use izwi_core::Device;

use crate::error::RuntimeError;
use crate::runtime::Runtime;

/// Where the Silero VAD weights live in a data folder.
pub fn vad_path(data_dir: &Path) -> PathBuf {
    data_dir.join("vad").join("silero_vad_16k_op15.onnx")
}

/// The detector, loaded on first use; looked for again while none is installed, so
/// one installed while the app runs is used from the next transcription on.
#[derive(Default)]
pub(crate) struct Vad {
    loaded: tokio::sync::Mutex<Option<Arc<SileroVad>>>,
}

impl Vad {
    /// The detector of `data_dir`, or None when none is installed or it cannot load.
    pub async fn get(&self, data_dir: &Path) -> Option<Arc<SileroVad>> {
        let mut loaded = self.loaded.lock().await;
        if let Some(vad) = loaded.as_ref() {
            return Some(vad.clone());
        }
        let path = vad_path(data_dir);
        if !path.is_file() {
            tracing::info!(
                path = %path.display(),
                "no voice activity detector installed: long audio is cut at its quietest points"
            );
            return None;
        }
        let vad = tokio::task::spawn_blocking(move || SileroVad::load(&path, &Device::Cpu))
            .await
            .ok()?;
        match vad {
            Ok(vad) => {
                let vad = Arc::new(vad);
                *loaded = Some(vad.clone());
                Some(vad)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the voice activity detector did not load");
                None
            }
        }
    }
}

impl Runtime {
    /// Installs Silero VAD (`silero_vad_16k_op15.onnx` from the silero-vad
    /// package) into the data folder, after checking that they load. Replaces an
    /// installed copy only by renaming a complete new one over it.
    pub async fn install_vad(&self, file: &Path) -> Result<PathBuf, RuntimeError> {
        let source = file.to_path_buf();
        let target = vad_path(self.data_dir());
        tokio::task::spawn_blocking(move || -> Result<PathBuf, RuntimeError> {
            SileroVad::load(&source, &Device::Cpu).map_err(|e| {
                RuntimeError::InvalidRequest(format!(
                    "{} is not Silero VAD's silero_vad_16k_op15.onnx: {e}",
                    source.display()
                ))
            })?;
            let dir = target.parent().unwrap_or(Path::new("."));
            let io = |path: &Path| {
                let path = path.to_path_buf();
                move |source| RuntimeError::Io { path, source }
            };
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            let partial = dir.join(".silero_vad_16k_op15.onnx.partial");
            std::fs::copy(&source, &partial).map_err(io(&source))?;
            std::fs::rename(&partial, &target).map_err(io(&target))?;
            Ok(target)
        })
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("installing the VAD stopped: {e}")))?
    }

    /// Whether transcription has a voice activity detector (installed and loading).
    pub async fn has_vad(&self) -> bool {
        self.inner.vad.get(self.data_dir()).await.is_some()
    }
}
