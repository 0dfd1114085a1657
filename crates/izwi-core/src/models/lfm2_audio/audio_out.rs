//! Spoken frames → 24 kHz audio while a turn is generated: Kyutai's Mimi (LFM2-Audio)
//! or LFM2.5-Audio's detokenizer, whichever the folder has.

use std::path::Path;
use std::sync::Arc;

use candle_core::{Device, Result};

use super::detokenizer::AudioDetokenizer;
use super::mimi::{MimiDecoder, MimiShape, MIMI_FILE};

/// The folder of LFM2.5-Audio's detokenizer.
pub const AUDIO_DETOKENIZER_DIR: &str = "audio_detokenizer";

/// Frames the detokenizer waits for before it decodes again (one second).
const DETOKENIZER_CHUNK: usize = 12;

/// How a folder turns frames into audio.
#[derive(Clone)]
pub enum AudioOut {
    /// Decoded frame by frame; each stream is a clone with its own state.
    Mimi(Box<MimiDecoder>),
    Detokenizer(Arc<AudioDetokenizer>),
}

impl AudioOut {
    /// The detokenizer when the folder has `audio_detokenizer/` (LFM2.5-Audio decodes
    /// with it), else Mimi when its file is there; `None` for a folder that cannot speak.
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Option<Self>> {
        let detokenizer = dir.join(AUDIO_DETOKENIZER_DIR);
        if detokenizer.join("config.json").is_file() {
            let detokenizer = AudioDetokenizer::from_dir(&detokenizer, device)?;
            return Ok(Some(AudioOut::Detokenizer(Arc::new(detokenizer))));
        }
        let mimi = dir.join(MIMI_FILE);
        if mimi.is_file() {
            let decoder = MimiDecoder::load(&mimi, &MimiShape::of_dir(dir)?, device)?;
            return Ok(Some(AudioOut::Mimi(Box::new(decoder))));
        }
        Ok(None)
    }

    /// A stream for one utterance.
    pub fn stream(&self) -> AudioStream {
        let mut out = self.clone();
        if let AudioOut::Mimi(decoder) = &mut out {
            decoder.reset();
        }
        AudioStream {
            out,
            frames: Vec::new(),
            decoded: 0,
            sent: 0,
        }
    }
}

/// One utterance's frames, decoded as they come.
pub struct AudioStream {
    out: AudioOut,
    /// The detokenizer's frames so far (it decodes from the start each time).
    frames: Vec<Vec<u32>>,
    /// Frames the detokenizer last decoded.
    decoded: usize,
    /// Samples handed out.
    sent: usize,
}

impl AudioStream {
    /// The audio the new `frames` make certain (possibly none yet).
    pub fn push(&mut self, frames: Vec<Vec<u32>>) -> Result<Vec<f32>> {
        if frames.is_empty() {
            return Ok(Vec::new());
        }
        match &mut self.out {
            AudioOut::Mimi(decoder) => decoder.decode_next(&frames),
            AudioOut::Detokenizer(detokenizer) => {
                self.frames.extend(frames);
                if self.frames.len() < self.decoded + DETOKENIZER_CHUNK {
                    return Ok(Vec::new());
                }
                let detokenizer = detokenizer.clone();
                self.decoded = self.frames.len();
                let audio = detokenizer.decode(&self.frames)?;
                // Its attention and convolutions are causal; only the inverse STFT's
                // last overlap still waits for the frames to come.
                let certain = audio.len().saturating_sub(detokenizer.overlap());
                Ok(self.take(audio, certain))
            }
        }
    }

    /// The rest of the utterance's audio.
    pub fn finish(&mut self) -> Result<Vec<f32>> {
        match &mut self.out {
            AudioOut::Mimi(_) => Ok(Vec::new()),
            AudioOut::Detokenizer(detokenizer) => {
                let detokenizer = detokenizer.clone();
                let audio = detokenizer.decode(&self.frames)?;
                let end = audio.len();
                Ok(self.take(audio, end))
            }
        }
    }

    fn take(&mut self, audio: Vec<f32>, end: usize) -> Vec<f32> {
        let piece = audio
            .get(self.sent..end)
            .map(<[f32]>::to_vec)
            .unwrap_or_default();
        self.sent = self.sent.max(end);
        piece
    }
}
