//! Liquid AI's LFM2: a hybrid decoder whose layers are either gated short convolutions
//! or grouped-query attention with normalized queries and keys, as the checkpoint's
//! config lays them out. Attention layers use the engine's paged KV cache; convolution
//! layers carry a per-sequence state the engine keeps beside it
//! (`crate::engine::conv_state`). Loads Hugging Face `Lfm2ForCausalLM` checkpoints and
//! llama.cpp's `lfm2` GGUF files.

mod config;
mod gguf;
mod model;
mod short_conv;

pub use config::{LayerKind, Lfm2Config};
pub use model::{Lfm2, Lfm2Weights};
