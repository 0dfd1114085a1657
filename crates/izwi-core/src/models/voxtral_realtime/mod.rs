//! Voxtral Realtime (Mistral's streaming speech recognition model) on the engine: a
//! causal audio encoder streamed chunk by chunk and a decoder that writes text a fixed
//! delay behind the audio.

mod config;
mod decoder;
mod encoder;
mod format;
pub mod mel;
mod model;
mod tokenizer;
mod transcriber;

pub use config::VoxtralRealtimeConfig;
pub use format::StreamingFormat;
pub use model::VoxtralRealtime;
pub use tokenizer::{StreamingAudio, Tekken, TekkenError};
pub use transcriber::{
    indexed_words_of, segments_of, words_of, LiveTranscription, VoxtralTranscriber,
};
