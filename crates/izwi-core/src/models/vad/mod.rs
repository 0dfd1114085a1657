//! Voice activity detection with Silero VAD v6: which parts of audio are speech.
//! Transcription cuts long files into chunks of speech with it (silence is never
//! decoded); live input uses its streaming form for endpointing. docs/vad.md.

mod segments;
mod silero;
mod stream;

pub use segments::{chunks, speech_segments, Segmenter, VadEvent, VadOptions};
pub use silero::{SileroVad, VadState, FRAME_SAMPLES};
pub use stream::VadStream;
