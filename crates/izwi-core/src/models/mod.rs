//! Model families that run on the engine. Each folder holds a family's config, weight
//! loading, modules and its [`ModelExecutor`](crate::engine::ModelExecutor) glue;
//! `shared` holds what families have in common.

pub mod lfm2;
pub mod lfm2_audio;
pub mod llama;
pub mod qwen3_tts;
pub mod shared;
pub mod vad;
pub mod vits;
pub mod voxtral_realtime;
pub mod whisper;
