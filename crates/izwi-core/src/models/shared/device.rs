//! Chooses where models run.

use candle_core::Device;

/// CUDA or Metal when built with that feature and a device answers, else the CPU.
/// Says which in the log, since a silent CPU fallback looks like a slow GPU.
pub fn select_device() -> Device {
    #[cfg(feature = "cuda")]
    match Device::new_cuda(0) {
        Ok(device) => {
            tracing::info!("running on CUDA device 0");
            return device;
        }
        Err(e) => tracing::warn!("CUDA unavailable ({e}); using the CPU"),
    }
    #[cfg(feature = "metal")]
    match Device::new_metal(0) {
        Ok(device) => {
            tracing::info!("running on Metal device 0");
            return device;
        }
        Err(e) => tracing::warn!("Metal unavailable ({e}); using the CPU"),
    }
    tracing::info!(
        threads = std::thread::available_parallelism().map_or(1, |n| n.get()),
        "running on the CPU"
    );
    Device::Cpu
}
