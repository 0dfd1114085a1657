//! Building blocks every model family shares.

pub mod activations;
pub mod device;
pub mod linear;
pub mod paged_attention;
pub mod rope;
pub mod sampling;
pub mod vector_math;
pub mod weights;
