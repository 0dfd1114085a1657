//! Voice activity detection on live audio: feed samples as they arrive (any length),
//! get speech starts and ends as soon as the frames that decide them are complete.
//! Live dictation and voice chat use it for endpointing.

use candle_core::Result;

use super::segments::{Segmenter, VadEvent, VadOptions};
use super::silero::{SileroVad, VadState, FRAME_SAMPLES};

pub struct VadStream<'a> {
    vad: &'a SileroVad,
    state: VadState,
    segmenter: Segmenter,
    /// Samples not yet making a whole frame.
    pending: Vec<f32>,
    /// Samples taken so far.
    samples: usize,
}

impl<'a> VadStream<'a> {
    pub fn new(vad: &'a SileroVad, options: VadOptions) -> Self {
        Self {
            vad,
            state: VadState::default(),
            segmenter: Segmenter::new(options),
            pending: Vec::with_capacity(FRAME_SAMPLES),
            samples: 0,
        }
    }

    /// Takes the next 16 kHz samples; returns the events their whole frames decide.
    /// Event positions are samples since the first one pushed, without padding.
    pub fn push(&mut self, samples: &[f32]) -> Result<Vec<VadEvent>> {
        self.samples += samples.len();
        self.pending.extend_from_slice(samples);
        let whole = self.pending.len() / FRAME_SAMPLES * FRAME_SAMPLES;
        if whole == 0 {
            return Ok(Vec::new());
        }
        let probabilities = self.vad.frames(&self.pending[..whole], &mut self.state)?;
        self.pending.drain(..whole);
        Ok(probabilities
            .into_iter()
            .flat_map(|p| self.segmenter.push(p))
            .collect())
    }

    /// Whether the user is speaking, as of the frames seen.
    pub fn in_speech(&self) -> bool {
        self.segmenter.in_speech()
    }

    /// Ends the stream: the last partial frame is completed with zeros, and speech
    /// still going on ends at the last sample.
    pub fn finish(mut self) -> Result<Vec<VadEvent>> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let mut last = std::mem::take(&mut self.pending);
            last.resize(FRAME_SAMPLES, 0.0);
            for p in self.vad.frames(&last, &mut self.state)? {
                events.extend(self.segmenter.push(p));
            }
        }
        events.extend(self.segmenter.finish(self.samples));
        Ok(events)
    }
}
