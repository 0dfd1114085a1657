//! Izwi's inference engine and the candle models that run on it. Knows nothing of
//! files, databases or user interfaces: token ids and PCM samples in, tokens, text and
//! audio out.

pub use candle_core::{DType, Device};

pub mod allocator;
pub mod bench;
pub mod cpu_pool;
pub mod engine;
pub mod models;
pub mod text;
pub mod transcript;
pub mod word_errors;

/// Call once, early in `main`, before any other thread starts: the allocator and
/// candle's CPU thread pool set up for inference ([`allocator`], [`cpu_pool`]).
pub fn tune_for_inference() {
    allocator::tune();
    cpu_pool::shorten_spin();
}
