//! Decoding frames to audio while they are generated: every `chunk` frames are decoded
//! with the frames before them as left context, exactly as the reference's chunked
//! decode cuts an utterance, so the streamed audio equals `decode_chunked`'s.

use std::sync::Arc;

use candle_core::Result;

use super::decoder::{CodecDecoder, LEFT_CONTEXT_FRAMES};

pub struct CodecStream {
    decoder: Arc<CodecDecoder>,
    chunk: usize,
    left_context: usize,
    frames: Vec<Vec<u32>>,
    decoded: usize,
}

impl CodecStream {
    /// Audio comes out every `chunk` frames, with the reference's left context.
    pub fn new(decoder: Arc<CodecDecoder>, chunk: usize) -> Self {
        Self::with_left_context(decoder, chunk, LEFT_CONTEXT_FRAMES)
    }

    pub fn with_left_context(
        decoder: Arc<CodecDecoder>,
        chunk: usize,
        left_context: usize,
    ) -> Self {
        Self {
            decoder,
            chunk: chunk.max(1),
            left_context,
            frames: Vec::new(),
            decoded: 0,
        }
    }

    /// A stream that continues from `earlier` frames (a voice sample's): they are only
    /// the left context of the first chunks, their audio is not given out.
    pub fn after(mut self, earlier: Vec<Vec<u32>>) -> Self {
        self.decoded = earlier.len();
        self.frames = earlier;
        self
    }

    /// Adds a frame; returns the next chunk's audio once it is complete.
    pub fn push(&mut self, frame: Vec<u32>) -> Result<Option<Vec<f32>>> {
        self.frames.push(frame);
        if self.frames.len() - self.decoded < self.chunk {
            return Ok(None);
        }
        self.next(self.decoded + self.chunk).map(Some)
    }

    /// The audio of the frames not decoded yet (the last, short chunk).
    pub fn finish(&mut self) -> Result<Vec<f32>> {
        if self.decoded == self.frames.len() {
            return Ok(Vec::new());
        }
        self.next(self.frames.len())
    }

    fn next(&mut self, end: usize) -> Result<Vec<f32>> {
        let wav = self
            .decoder
            .decode_span(&self.frames, self.decoded, end, self.left_context)?;
        self.decoded = end;
        Ok(wav)
    }
}
