//! Building blocks every model family shares.

pub mod device;
pub mod linear;
pub mod paged_attention;
pub mod rope;
pub mod sampling;
pub mod weights;
