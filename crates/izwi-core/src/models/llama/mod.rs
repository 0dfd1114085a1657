//! A Llama-family decoder-only transformer (RoPE, grouped-query attention, RMSNorm,
//! SwiGLU; Qwen2's query/key/value biases and Qwen3's query/key norms): the engine's
//! test and benchmark model, the pattern the other families follow, and the chat model
//! of voice chat. Loads Hugging Face `LlamaForCausalLM` checkpoints and Llama, Qwen2
//! and Qwen3 GGUF files.

mod config;
mod dense;
mod gguf;
mod model;

pub use config::{Architecture, EosTokens, LlamaConfig};
pub use dense::DenseKvCache;
pub use gguf::GgufWeights;
pub(crate) use model::DecoderLayer;
pub use model::Llama;
