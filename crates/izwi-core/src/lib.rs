//! Izwi's inference engine and the candle models that run on it. Knows nothing of
//! files, databases or user interfaces: token ids and PCM samples in, tokens, text and
//! audio out.

pub use candle_core::{DType, Device};

pub mod allocator;
pub mod bench;
pub mod engine;
pub mod models;
pub mod text;
pub mod transcript;
pub mod word_errors;
