//! A Llama-architecture decoder-only transformer (RoPE, grouped-query attention,
//! RMSNorm, SwiGLU): the engine's test and benchmark model, the pattern the other
//! families follow, and the chat model of voice chat. Loads Hugging Face
//! `LlamaForCausalLM` checkpoints and Llama-architecture GGUF files.

mod config;
mod dense;
mod gguf;
mod model;

pub use config::LlamaConfig;
pub use dense::DenseKvCache;
pub use gguf::GgufWeights;
pub use model::Llama;
