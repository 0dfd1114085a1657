//! Izwi's application core, the one API the shells (desktop app, CLI, HTTP server)
//! call: models (catalog, downloads, imports, loading), jobs that run on the engine
//! and are remembered in the store, and events that report their progress.

mod batch;
mod chat;
mod chat_settings;
mod dictation;
mod error;
mod events;
mod files;
mod hear_back;
mod history;
mod jobs;
mod lfm2_audio_speak;
mod lfm2_audio_transcribe;
mod lfm2_audio_voices;
mod live_chat;
mod models;
mod qwen3_tts;
mod qwen3_voices;
mod remote;
mod runtime;
mod saved_dictation;
mod speak;
mod speech_chat;
mod streaming_dictation;
mod transcribe;
mod vad;
mod voice_chat;
mod voice_sample;
mod voices;

pub use batch::{read_manifest, ManifestRow, RetakeRequest, DEFAULT_MAX_WER};
pub use chat::{ChatJob, ChatModel, ChatParams, ChatReply, Conversation, DEFAULT_SYSTEM_PROMPT};
pub use chat_settings::{ChatSettings, END_SILENCE_MS_RANGE};
pub use dictation::{
    file_chunks_in_real_time, microphone_chunks, AudioChunks, DictatedText, DictationEvent,
    DictationOptions,
};
pub use error::{ErrorKind, RuntimeError};
pub use events::{Event, EventSink, JobStage, NoEvents};
pub use files::{
    expand_media_paths, is_media_file, write_atomically, write_new_atomically, ExportFormat,
    MediaPaths, SkippedPath, MAX_MEDIA_FILES, MAX_PEAK_BUCKETS, MEDIA_EXTENSIONS,
};
pub use history::{
    BatchDetail, BatchLine, BatchLineStatus, ChatJobDetail, JobDetail, SpeechDetail,
    TranscriptDetail, VoiceUsed,
};
pub use izwi_audio::{input_devices, output_devices, AudioError, DeviceInfo, Microphone, Playback};
pub use izwi_audio::{
    load_for_asr, pcm16_bytes, pcm16_wav_data, peaks, probe_file, resample, streamed_wav_header,
    write_wav, StreamResampler,
};
pub use izwi_core::engine::{EngineStatus, MetricsSnapshot};
pub use izwi_core::models::lfm2_audio::{AudioSampling, CHAT_PROMPT};
pub use izwi_core::models::whisper::Task;
pub use izwi_core::text::ChatMessage;
pub use izwi_core::transcript::{Segment, Transcript};
pub use izwi_core::tune_for_inference;
pub use izwi_hub::{
    CancellationToken, DownloadProgress, Family, ModelInfo, ModelStatus, ModelTask,
};
pub use izwi_store::{
    ChatRecord, Job, JobFilter, JobKind, JobStatus, MessageMetrics, MessageRecord, MessageRole,
    SearchHit, SegmentRecord, TranscriptRecord, VoiceSettings, VoiceSource,
};
pub use lfm2_audio_speak::LFM2_SPEAK_MAX_STEPS;
pub use live_chat::{LiveChatOptions, LiveEvent, VoiceChat, LEVEL_SECONDS};
pub use models::LoadedModel;
pub use qwen3_tts::{Qwen3SpeakRequest, MAX_REFERENCE_SECONDS};
pub use qwen3_voices::{CloneVoiceRequest, ClonedVoice, TranscriptSource};
pub use remote::{
    BackendChoice, RemoteInfo, RemoteSettings, REMOTE_BACKEND, REMOTE_SPEECH_MODEL,
    REMOTE_TRANSCRIBE_MODEL,
};
pub use runtime::{Runtime, RuntimeConfig, DEFAULT_TRANSCRIBE_MODEL};
pub use saved_dictation::SavedDictation;
pub use speak::{
    read_lines, SpeakBatchRequest, SpeakFileRequest, SpeakRequest, SpeechClip, MANIFEST_NAME,
    MAX_SPEAK_CHARS, SENTENCE_GAP_SECONDS,
};
pub use speech_chat::SpeechChat;
pub use transcribe::TranscribeRequest;
pub use vad::vad_path;
pub use voice_chat::{NoPlayback, ReplyOutput, TurnEvent, VoiceChatSetup, VoiceTurn};
pub use voice_sample::{SampleTranscript, VoiceSample, SAMPLE_PEAKS};
pub use voices::{VoiceInfo, VoiceLimits, VOICE_LIMITS};
