//! Audio in and out for Izwi: decode any supported file to f32 samples, resample, write
//! WAV, split long recordings into windows for the speech models, and capture from a
//! microphone and play on a speaker ([`Microphone`], [`Playback`]).
//!
//! The transcription pipeline needs one call, [`load_for_asr`]: any file in, 16 kHz mono
//! f32 out, then [`split_at_silence`] for audio longer than the model's window.
//!
//! No input makes these functions panic: every problem with a file is an [`AudioError`]
//! that names it, and the sizes a file can make us allocate are bounded (see
//! [`max_frames`]).

pub mod atomic;
mod decode;
mod device;
mod error;
mod limits;
mod peaks;
mod recording;
mod resample;
mod split;
mod wav;

pub use atomic::{write_atomically, write_new_atomically, AtomicFile};
pub use decode::{decode_bytes, decode_file, load_for_asr, probe_file, Audio, AAC_PRIMING_FRAMES};
pub use device::{input_devices, output_devices, DeviceInfo, Microphone, Playback};
pub use error::AudioError;
pub use limits::{
    max_frames, MAX_CHANNELS, MAX_DECODED_SAMPLES, MAX_DURATION_SECONDS, MAX_SAMPLE_RATE,
    MIN_SAMPLE_RATE,
};
pub use peaks::{decode_peaks, peaks, PeakBlocks};
pub use recording::WavRecording;
pub use resample::{resample, StreamResampler};
pub use split::{split_at_silence, Window};
pub use wav::{
    pcm16_bytes, pcm16_wav_data, streamed_wav_header, write_new_wav, write_wav, WavFile,
};

/// The sample rate the speech models take, and [`load_for_asr`] returns.
pub const ASR_SAMPLE_RATE: u32 = 16_000;
