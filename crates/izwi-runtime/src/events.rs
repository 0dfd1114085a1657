//! What the runtime reports while it works. The desktop app forwards events to the
//! webview as Tauri events; the CLI draws progress bars from them.

use izwi_core::transcript::Segment;
use izwi_hub::DownloadProgress;
use izwi_store::{Job, JobStatus};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A job was recorded and waits for its turn.
    JobQueued {
        job: Job,
    },
    /// The job got a slot: at most `max_concurrent_jobs` run at once, the rest stay queued.
    JobStarted {
        job_id: i64,
    },
    /// What a running job is doing now, so a shell can say so instead of guessing.
    JobStage {
        job_id: i64,
        stage: JobStage,
    },
    JobProgress {
        job_id: i64,
        /// 0 to 1.
        progress: f64,
        windows_done: usize,
        windows_total: usize,
        /// From the pace so far; None until a window is done.
        eta_seconds: Option<f64>,
    },
    /// Segments of a transcription as they are ready: windows finish out of order.
    JobSegments {
        job_id: i64,
        /// The window they are of (0-based); a transcript is its windows in this order.
        window: usize,
        segments: Vec<Segment>,
    },
    /// One piece of a speak job's audio, in order, as soon as it is ready: a sentence
    /// of a Piper voice, or what the codec of a Qwen3-TTS voice decoded. The desktop
    /// app plays it while the rest are made.
    SpeechAudio {
        job_id: i64,
        index: usize,
        /// Pieces in all (Piper: sentences); a Qwen3-TTS voice does not know its count
        /// ahead, and gives the pieces so far.
        total: usize,
        sample_rate: u32,
        /// Seconds of silence the job's WAV file has before this piece: the pause
        /// between sentences, none between decoded pieces of one utterance.
        gap_before: f32,
        samples: Vec<f32>,
    },
    /// A batch wrote line `line` (0-based) to `file`.
    BatchLineDone {
        job_id: i64,
        line: usize,
        file: String,
        seconds: f64,
    },
    JobFinished {
        job_id: i64,
        status: JobStatus,
        error: Option<String>,
    },
    Download(DownloadProgress),
    ModelLoaded {
        model_id: String,
        seconds: f64,
    },
    ModelUnloaded {
        model_id: String,
    },
}

/// A running job's steps, in order; `LoadingModel` only when its model was not loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum JobStage {
    LoadingModel,
    /// Reading the audio or video file.
    Decoding,
    /// Running the model; `JobProgress` follows as windows finish.
    Transcribing,
}

pub trait EventSink: Send + Sync + 'static {
    fn emit(&self, event: Event);
}

/// For shells that only want results.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: Event) {}
}

impl<F: Fn(Event) + Send + Sync + 'static> EventSink for F {
    fn emit(&self, event: Event) {
        self(event)
    }
}
