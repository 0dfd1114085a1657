//! Building blocks every model family shares.

pub mod activations;
pub mod bf16_weights;
pub mod block_attention;
pub mod cpu_slice;
pub mod device;
pub mod embedding;
pub mod gguf;
pub mod half_weights;
pub mod linear;
pub mod onnx;
pub mod paged_attention;
pub mod rope;
pub mod row_attention;
pub mod sampling;
pub mod tap_conv;
pub mod vector_math;
pub mod weights;
