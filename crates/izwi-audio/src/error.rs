//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong reading, converting or writing audio.
///
/// Each variant names one problem, so callers (the CLI, the desktop app, the HTTP server)
/// can tell the user what is wrong with their file instead of a generic "decode failed".
#[derive(Debug, Error)]
pub enum AudioError {
    /// The path does not exist.
    #[error("audio file not found: {}", path.display())]
    NotFound { path: PathBuf },

    /// The path exists but cannot be read (permissions, a directory, an I/O failure).
    #[error("cannot read audio file {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The file or buffer has zero bytes.
    #[error("the audio file is empty (0 bytes)")]
    EmptyFile,

    /// No container format we read was recognised; holds what the prober said.
    #[error("unsupported or unrecognised audio format: {0}")]
    UnsupportedFormat(String),

    /// The container was read, but its audio codec is not one we decode (e.g. "opus").
    #[error("unsupported audio codec: {0}")]
    UnsupportedCodec(String),

    /// The data is malformed or ends too early to give any audio; holds what the
    /// demuxer or decoder said.
    #[error("corrupt or truncated audio data: {0}")]
    Corrupt(String),

    /// The container holds tracks, but none of them is audio.
    #[error("the file has no audio track")]
    NoAudioTrack,

    /// The file is a valid container whose audio track holds no samples.
    #[error("the file contains no audio samples")]
    ZeroLength,

    /// The audio is longer than this crate accepts (see [`crate::max_frames`]), by its
    /// header or by what was decoded. `seconds` is how far it got before stopping, or what
    /// the header declared.
    #[error("audio is too long: {seconds:.0} s or more; the limit for this file is {limit_seconds:.0} s")]
    TooLong { seconds: f64, limit_seconds: f64 },

    /// A sample rate of 0 or outside [`crate::MIN_SAMPLE_RATE`]..=[`crate::MAX_SAMPLE_RATE`].
    #[error(
        "invalid sample rate {0} Hz (supported: {min}..={max} Hz)",
        min = crate::MIN_SAMPLE_RATE,
        max = crate::MAX_SAMPLE_RATE
    )]
    InvalidSampleRate(u32),

    /// A channel count of 0 or above [`crate::MAX_CHANNELS`].
    #[error("invalid channel count {0} (supported: 1..={max})", max = crate::MAX_CHANNELS)]
    InvalidChannels(u32),

    /// Writing an output file failed; nothing was left under `path`.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The resampler refused its input. Not expected with validated rates; kept as an
    /// error rather than a panic.
    #[error("resampling failed: {0}")]
    Resample(String),

    /// The caller asked decoding to stop (see [`crate::decode_peaks`]).
    #[error("decoding was stopped")]
    Cancelled,

    /// A microphone or speaker that cannot be found, opened or kept running.
    #[error("{0}")]
    Device(String),
}
