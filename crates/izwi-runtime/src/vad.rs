//! The voice activity detector transcription cuts long audio with (Silero VAD), found
//! in the data folder where the setup script puts it.

use std::path::{Path, PathBuf};

/// Where the Silero VAD weights live in a data folder.
pub fn vad_path(data_dir: &Path) -> PathBuf {
    data_dir.join("vad").join("silero_vad_16k.safetensors")
}
