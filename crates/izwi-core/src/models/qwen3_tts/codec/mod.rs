//! The 12 Hz speech tokenizer (`speech_tokenizer/` of a checkpoint), decode side.

mod config;
mod decoder;
mod layers;
mod quantizer;
mod stream;
mod transformer;

pub use config::{CodecConfig, CodecDecoderConfig};
pub use decoder::{CodecDecoder, CHUNK_FRAMES, LEFT_CONTEXT_FRAMES};
pub use stream::CodecStream;
