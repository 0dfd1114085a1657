//! Chooses where models run.

use candle_core::{Device, DeviceLocation};

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

/// A device as the shells name it: `cpu`, `cuda:0`, `metal`.
pub fn describe_device(device: &Device) -> String {
    match device.location() {
        DeviceLocation::Cpu => "cpu".into(),
        DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        DeviceLocation::Metal { .. } => "metal".into(),
    }
}

/// The backends this build can run on, the CPU first; whether a GPU answers is only
/// known when [`select_device`] tries it.
pub fn built_devices() -> Vec<&'static str> {
    let mut devices = vec!["cpu"];
    if cfg!(feature = "cuda") {
        devices.push("cuda");
    }
    if cfg!(feature = "metal") {
        devices.push("metal");
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_described_and_always_built() {
        assert_eq!(describe_device(&Device::Cpu), "cpu");
        assert_eq!(built_devices()[0], "cpu");
    }
}
