//! Whisper (OpenAI's speech recognition model) on the engine.

mod config;
pub mod ctranslate2;
mod executor;
mod logits;
pub mod mel;
mod model;
mod tokens;
mod transcribe;
mod word_timestamps;

pub use config::WhisperConfig;
pub use executor::WhisperExecutor;
pub use logits::LogitRules;
pub use model::{CrossKv, Whisper};
pub use tokens::{is_multilingual_dir, SpecialTokens, TokenizerError, WhisperTokenizer};
pub use transcribe::{Task, TranscribeError, TranscribeOptions, Transcriber, WindowDone};
