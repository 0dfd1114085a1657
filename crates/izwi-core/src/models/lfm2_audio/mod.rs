//! LFM2-Audio (LiquidAI/LFM2-Audio-1.5B, as PyPI liquid-audio 1.3.0 runs it): one LFM2
//! backbone that reads text and speech and writes text and speech. Speech in goes
//! through a FastConformer encoder and an adapter into backbone embeddings; speech out
//! is a frame of 8 Mimi codes per backbone step, drawn codebook by codebook by a small
//! depthformer, and Mimi decodes the frames to 24 kHz audio.

pub mod adapter;
pub mod audio_encoder;
pub mod audio_head;
pub mod audio_out;
pub mod chat;
pub mod checkpoint;
pub mod config;
pub mod conformer;
pub mod detokenizer;
pub mod executor;
pub mod mel;
pub mod mimi;
pub mod model;
pub mod voice;

pub use audio_encoder::AudioEncoder;
pub use audio_head::{AudioHead, Depthformer};
pub use audio_out::AudioOut;
pub use chat::{ChatLayout, Message, Part};
pub use checkpoint::open_checkpoint;
pub use config::Lfm2AudioConfig;
pub use detokenizer::AudioDetokenizer;
pub use executor::{Generation, Lfm2AudioExecutor, Lfm2AudioRequests, Segment};
pub use mimi::{MimiDecoder, MimiShape};
pub use model::{AudioSampling, Lfm2Audio, Lfm2AudioError, ReplyPiece, SpokenTurn, CHAT_PROMPT};
pub use voice::Lfm2Voice;
