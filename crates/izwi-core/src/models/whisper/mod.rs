//! Whisper (OpenAI's speech recognition model) on the engine.

pub mod ctranslate2;
