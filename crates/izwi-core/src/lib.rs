//! Izwi's inference engine and the candle models that run on it. Knows nothing of
//! files, databases or user interfaces: token ids (and later PCM samples) in, tokens and
//! audio out.

pub mod bench;
pub mod engine;
pub mod models;
