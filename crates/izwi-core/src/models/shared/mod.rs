//! Building blocks every model family shares.

pub mod activations;
pub mod bf16_weights;
pub mod block_attention;
pub mod cpu_slice;
pub mod decoder_weights;
pub mod device;
pub mod embedding;
pub mod f32_rows;
pub mod few_rows;
pub mod gguf;
pub mod half_weights;
pub mod linear;
pub mod mel_filters;
pub mod onnx;
pub mod packed_conv;
pub mod paged_attention;
pub mod pending;
pub mod rope;
pub mod row_attention;
pub mod sampling;
mod shared_out;
pub mod tap_conv;
pub mod vector_math;
pub mod weights;

/// The largest absolute difference between two tensors of one shape (kernel tests).
#[cfg(test)]
pub(crate) fn max_abs_diff(
    a: &candle_core::Tensor,
    b: &candle_core::Tensor,
) -> candle_core::Result<f32> {
    (a - b)?.abs()?.max_all()?.to_scalar::<f32>()
}
