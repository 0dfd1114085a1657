//! Qwen3-TTS (the 12 Hz family: Base, CustomVoice, VoiceDesign checkpoints): a talker
//! that generates codebook 0 of each audio frame on the engine's paged cache, a code
//! predictor that completes each frame's other codebooks, and the speech tokenizer's
//! decoder that turns frames into 24 kHz audio. Reads the official Hugging Face layout;
//! see docs/qwen3-tts.md for what runs and how it was checked.

mod code_predictor;
pub mod codec;
mod config;
mod executor;
mod prompt;
mod speaker_encoder;
mod speaker_mel;
mod speech;
mod talker;
mod text_tokenizer;

pub use code_predictor::CodePredictor;
pub use config::{CodePredictorConfig, Qwen3TtsConfig, TalkerConfig};
pub use executor::{Frame, Qwen3TtsExecutor, Qwen3TtsRequests, FRAME_SECONDS};
pub use prompt::{SpeechPrompt, VoiceReference};
pub use speaker_encoder::{SpeakerEncoder, SpeakerEncoderConfig};
pub use speaker_mel::{SpeakerMel, SAMPLE_RATE as REFERENCE_SAMPLE_RATE};
pub use speech::{
    Qwen3Tts, SamplingDefaults, SpeakOptions, SpeechError, SpeechStats, VoiceSample,
    STREAM_CHUNK_FRAMES,
};
pub use talker::{Talker, TalkerOutput};
pub use text_tokenizer::load_text_tokenizer;
