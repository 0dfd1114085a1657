//! A Llama-architecture decoder-only transformer (RoPE, grouped-query attention,
//! RMSNorm, SwiGLU): the engine's test and benchmark model, and the pattern the other
//! families follow. Loads Hugging Face `LlamaForCausalLM` checkpoints.

mod config;
mod dense;
mod model;

pub use config::LlamaConfig;
pub use dense::DenseKvCache;
pub use model::Llama;
