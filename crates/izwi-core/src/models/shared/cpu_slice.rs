//! The elements of a contiguous CPU tensor as a slice, for our own CPU kernels (their
//! public functions make the tensors contiguous first).

use candle_core::{CpuStorage, Layout, Result, WithDType};

pub fn cpu_slice<'a, T: WithDType>(storage: &'a CpuStorage, layout: &Layout) -> Result<&'a [T]> {
    let data = storage.as_slice::<T>()?;
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&data[start..end]),
        None => candle_core::bail!("izwi's CPU kernels take contiguous tensors"),
    }
}
