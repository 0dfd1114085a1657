//! Speech audio to the page as binary. Each piece a speak job makes goes, as one
//! `ArrayBuffer`, over the Tauri channel the page opened with `stream_speech_audio`,
//! rather than as a JSON array of numbers in an event (ten times the bytes, and parsed
//! on the page's one thread while it plays).
//!
//! A frame is a 24-byte header of little-endian numbers, then the samples as
//! little-endian f32 (4-byte aligned, so the page reads them in place as a
//! `Float32Array`):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | job id (i64) |
//! | 8..12 | piece index (u32) |
//! | 12..16 | pieces in the job, or so far when not known ahead (u32) |
//! | 16..20 | sample rate (u32) |
//! | 20..24 | seconds of silence before the piece in the saved speech (f32) |
//! | 24.. | samples (f32) |

use std::sync::{Arc, Mutex};

use specta::datatype::DataType;
use specta::{Type, Types};
use tauri::ipc::{Channel, InvokeResponseBody, IpcResponse};

/// Bytes before the samples.
pub const HEADER_BYTES: usize = 24;

/// One piece of a speak job's audio, encoded as above.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechAudioFrame(Vec<u8>);

impl SpeechAudioFrame {
    pub fn new(
        job_id: i64,
        index: usize,
        total: usize,
        sample_rate: u32,
        gap_before: f32,
        samples: &[f32],
    ) -> Self {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + 4 * samples.len());
        bytes.extend_from_slice(&job_id.to_le_bytes());
        // Sentence counts are far below 2^32: a job's text is limited.
        bytes.extend_from_slice(&(index as u32).to_le_bytes());
        bytes.extend_from_slice(&(total as u32).to_le_bytes());
        bytes.extend_from_slice(&sample_rate.to_le_bytes());
        bytes.extend_from_slice(&gap_before.to_le_bytes());
        for sample in samples {
            bytes.extend_from_slice(&sample.to_le_bytes());
        }
        Self(bytes)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Sent raw: the page receives an `ArrayBuffer`.
impl IpcResponse for SpeechAudioFrame {
    fn body(self) -> tauri::Result<InvokeResponseBody> {
        Ok(InvokeResponseBody::Raw(self.0))
    }
}

/// Typed `ArrayBuffer` in the bindings, which is what a raw channel message is.
impl Type for SpeechAudioFrame {
    fn definition(_types: &mut Types) -> DataType {
        specta_typescript::define("ArrayBuffer").into()
    }
}

/// Where speech audio goes: the channel the page opened last (a reload opens a new one;
/// before the page opens one, frames have nowhere to go, as events with no listener).
#[derive(Clone, Default)]
pub struct SpeechAudioStream(Arc<Mutex<Option<Channel<SpeechAudioFrame>>>>);

impl SpeechAudioStream {
    pub fn open(&self, channel: Channel<SpeechAudioFrame>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(channel);
    }

    pub fn send(&self, frame: SpeechAudioFrame) {
        let channel = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(channel) = channel {
            if let Err(e) = channel.send(frame) {
                tracing::warn!(error = %e, "could not send speech audio to the page");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_its_header_then_the_samples() {
        let frame = SpeechAudioFrame::new(-2, 1, 3, 22050, 0.15, &[0.5, -1.0]);
        let b = frame.bytes();
        assert_eq!(b.len(), HEADER_BYTES + 8);
        assert_eq!(i64::from_le_bytes(b[0..8].try_into().unwrap()), -2);
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 22050);
        assert_eq!(f32::from_le_bytes(b[20..24].try_into().unwrap()), 0.15);
        assert_eq!(f32::from_le_bytes(b[24..28].try_into().unwrap()), 0.5);
        assert_eq!(f32::from_le_bytes(b[28..32].try_into().unwrap()), -1.0);
    }
}
