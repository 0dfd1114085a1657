//! Transcription with LFM2-Audio: each window of speech (the VAD's chunks, as for
//! Whisper) is one ASR turn on the model's shared engine, all windows at once so the
//! engine batches them. The model writes text only: no timestamps inside a window, no
//! language, prompt, translation or beams, each refused by name.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use izwi_core::models::lfm2_audio::Lfm2Audio;
use izwi_core::models::whisper::{Task, WindowDone};
use izwi_core::transcript::{Segment, Transcript};

use crate::{RuntimeError, TranscribeRequest};

/// The ASR sample rate (`izwi_audio::load_for_asr`'s, and LFM2-Audio's speech in).
const SAMPLE_RATE: f64 = 16_000.0;

/// What LFM2-Audio cannot do, refused before a job is made.
pub(crate) fn check_request(
    model_name: &str,
    request: &TranscribeRequest,
) -> Result<(), RuntimeError> {
    crate::transcribe::refuse_delay(model_name, request.delay_ms)?;
    let unsupported = [
        (request.task == Task::Translate, "translate"),
        (request.language.is_some(), "take a language"),
        (request.initial_prompt.is_some(), "take a prompt"),
        (request.word_timestamps, "give word timestamps"),
        (request.beam_size > 1, "search with beams (beam size)"),
    ];
    match unsupported.iter().find(|(asked, _)| *asked) {
        Some((_, what)) => Err(RuntimeError::InvalidRequest(format!(
            "{model_name} (LFM2-Audio) cannot {what}; it transcribes what it hears"
        ))),
        None => Ok(()),
    }
}

/// Windows on the engine at once: enough to fill its batches, few enough that a long
/// file does not hold every window's audio and encoding at once.
const WINDOWS_IN_FLIGHT: usize = 6;

/// The transcript of `windows` of `samples` (16 kHz), a segment per window that has
/// words; `on_window` as each window ends.
pub(crate) async fn transcribe(
    model: &Arc<Lfm2Audio>,
    samples: &[f32],
    windows: &[Range<usize>],
    mut on_window: impl FnMut(WindowDone),
) -> Result<Transcript, RuntimeError> {
    let started = Instant::now();
    let total = windows.len();
    let mut turns = futures::stream::iter(windows.iter().cloned().enumerate())
        .map(|(index, range)| {
            let audio: Arc<[f32]> = samples[range.clone()].into();
            async move {
                let text = model.transcribe(audio).await;
                (index, range, text)
            }
        })
        .buffer_unordered(WINDOWS_IN_FLIGHT);
    let mut segments = vec![None; total];
    let mut done = 0;
    while let Some((index, range, text)) = turns.next().await {
        let text = text.map_err(|e| RuntimeError::Speech(e.to_string()))?;
        done += 1;
        let segment = (!text.is_empty()).then(|| Segment {
            start: range.start as f64 / SAMPLE_RATE,
            end: range.end as f64 / SAMPLE_RATE,
            text,
            words: Vec::new(),
        });
        on_window(WindowDone {
            index,
            done,
            total,
            segments: segment.iter().cloned().collect(),
        });
        segments[index] = segment;
    }
    let duration = samples.len() as f64 / SAMPLE_RATE;
    Ok(Transcript {
        language: None,
        duration,
        segments: segments.into_iter().flatten().collect(),
        rtf: started.elapsed().as_secs_f64() / duration.max(f64::EPSILON),
    })
}
