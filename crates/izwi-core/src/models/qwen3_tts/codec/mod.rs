//! The 12 Hz speech tokenizer (`speech_tokenizer/` of a checkpoint): the decoder (codes
//! to audio) and the encoder (a voice sample to codes).

mod config;
mod decoder;
mod encoder;
mod layers;
mod quantizer;
mod stream;
mod transformer;

pub use config::{CodecConfig, CodecDecoderConfig, CodecEncoderConfig};
pub use decoder::{CodecDecoder, CHUNK_FRAMES, LEFT_CONTEXT_FRAMES};
pub use encoder::CodecEncoder;
pub use stream::CodecStream;
