//! Sample-rate conversion of mono audio.
//!
//! The resampler is rubato's `FftFixedInOut`: a synchronous resampler, so the ratio is
//! exactly `to / from` (audio files have integer rates; an asynchronous resampler would
//! only approximate it), filtering in the frequency domain with a long windowed-sinc
//! anti-aliasing filter (Blackman-Harris, as long as one FFT chunk: about a thousand taps or
//! more for the common rates). Applying a filter that long by FFT costs far less per sample
//! than sinc interpolation would, which matters for hour-long recordings on a laptop CPU
//! (a 60 s stereo file downmixes and resamples to 16 kHz in about 30 ms).
//!
//! Timing is exact: the resampler's delay is removed, so a sound at input time `t` is at
//! output time `t`, and the output has `round(len * to / from)` samples.

use rubato::{FftFixedInOut, Resampler};

use crate::limits::check_sample_rate;
use crate::AudioError;

/// Input frames per FFT chunk we ask rubato for. rubato rounds it up to a multiple of
/// `from / gcd(from, to)`, so unusual rate pairs (e.g. 44101 Hz) get chunks up to one second
/// long; common pairs get 1024 to 2000 samples.
const CHUNK_FRAMES: usize = 1024;

/// Resamples mono `samples` from `from_hz` to `to_hz`. The result has
/// `round(samples.len() * to_hz / from_hz)` samples and no time shift.
pub fn resample(samples: &[f32], from_hz: u32, to_hz: u32) -> Result<Vec<f32>, AudioError> {
    let mut resampler = StreamResampler::new(from_hz, to_hz)?;
    let mut out = Vec::with_capacity(output_len(samples.len() as u64, from_hz, to_hz) as usize);
    resampler.push(samples, &mut out)?;
    resampler.finish(&mut out)?;
    Ok(out)
}

/// `round(frames * to / from)`, the number of output frames for `frames` input frames.
fn output_len(frames: u64, from_hz: u32, to_hz: u32) -> u64 {
    let from = u128::from(from_hz.max(1));
    let exact = (u128::from(frames) * u128::from(to_hz) + from / 2) / from;
    u64::try_from(exact).unwrap_or(u64::MAX)
}

/// Resamples a mono stream piece by piece (a file as it decodes, a microphone), with the
/// same result as [`resample`] on the whole: feed input with [`push`](Self::push), then call
/// [`finish`](Self::finish) once for the tail.
pub struct StreamResampler {
    from_hz: u32,
    to_hz: u32,
    /// `None` when the rates are equal: samples pass through untouched.
    fft: Option<FftFixedInOut<f32>>,
    chunk_in: usize,
    /// Input not yet making a whole chunk.
    pending: Vec<f32>,
    /// rubato's output buffer for one chunk (one channel).
    chunk_out: Vec<Vec<f32>>,
    /// Leading output frames still to drop: the resampler's delay.
    delay_left: usize,
    frames_in: u64,
    frames_out: u64,
}

impl StreamResampler {
    pub fn new(from_hz: u32, to_hz: u32) -> Result<Self, AudioError> {
        check_sample_rate(from_hz)?;
        check_sample_rate(to_hz)?;
        let fft = if from_hz == to_hz {
            None
        } else {
            Some(
                FftFixedInOut::new(from_hz as usize, to_hz as usize, CHUNK_FRAMES, 1)
                    .map_err(|e| AudioError::Resample(e.to_string()))?,
            )
        };
        let (chunk_in, delay, chunk_out) = match &fft {
            Some(fft) => (
                fft.input_frames_next(),
                fft.output_delay(),
                fft.output_buffer_allocate(true),
            ),
            None => (0, 0, Vec::new()),
        };
        Ok(StreamResampler {
            from_hz,
            to_hz,
            fft,
            chunk_in,
            pending: Vec::with_capacity(chunk_in),
            chunk_out,
            delay_left: delay,
            frames_in: 0,
            frames_out: 0,
        })
    }

    /// Resamples `input`, appending the output ready so far to `out`.
    pub fn push(&mut self, input: &[f32], out: &mut Vec<f32>) -> Result<(), AudioError> {
        self.frames_in += input.len() as u64;
        if self.fft.is_none() {
            out.extend_from_slice(input);
            self.frames_out += input.len() as u64;
            return Ok(());
        }
        let mut input = input;
        // Complete a partial chunk first, then take whole chunks straight from `input`
        // (no copy of a long input), and keep the rest for next time.
        if !self.pending.is_empty() {
            let take = (self.chunk_in - self.pending.len()).min(input.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() < self.chunk_in {
                return Ok(());
            }
            let pending = std::mem::take(&mut self.pending);
            let result = self.process_chunk(&pending, out);
            self.pending = pending;
            self.pending.clear();
            result?;
        }
        let mut chunks = input.chunks_exact(self.chunk_in);
        for chunk in &mut chunks {
            self.process_chunk(chunk, out)?;
        }
        self.pending.extend_from_slice(chunks.remainder());
        Ok(())
    }

    /// Flushes the tail: pads with silence until the output has
    /// `round(total_input * to / from)` frames in all.
    pub fn finish(mut self, out: &mut Vec<f32>) -> Result<(), AudioError> {
        let total = output_len(self.frames_in, self.from_hz, self.to_hz);
        let mut pending = std::mem::take(&mut self.pending);
        while self.frames_out < total && self.fft.is_some() {
            pending.resize(self.chunk_in, 0.0);
            let before = out.len();
            self.process_chunk(&pending, out)?;
            pending.clear();
            // Trim the zero padding's output beyond the exact length.
            let excess = self.frames_out.saturating_sub(total) as usize;
            out.truncate(out.len() - excess.min(out.len() - before));
            self.frames_out -= excess as u64;
        }
        Ok(())
    }

    /// Resamples one whole chunk and appends its output, minus any delay still to drop.
    fn process_chunk(&mut self, chunk: &[f32], out: &mut Vec<f32>) -> Result<(), AudioError> {
        let Some(fft) = &mut self.fft else {
            return Ok(());
        };
        let (_, produced) = fft
            .process_into_buffer(&[chunk], &mut self.chunk_out, None)
            .map_err(|e| AudioError::Resample(e.to_string()))?;
        let produced = &self.chunk_out[0][..produced];
        let skip = self.delay_left.min(produced.len());
        self.delay_left -= skip;
        out.extend_from_slice(&produced[skip..]);
        self.frames_out += (produced.len() - skip) as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_len_rounds() {
        assert_eq!(output_len(44_100, 44_100, 16_000), 16_000);
        assert_eq!(output_len(3, 44_100, 16_000), 1); // 1.088
        assert_eq!(output_len(2, 48_000, 16_000), 1); // 0.667
        assert_eq!(output_len(1, 48_000, 16_000), 0); // 0.333
        assert_eq!(output_len(0, 8_000, 16_000), 0);
    }

    #[test]
    fn equal_rates_pass_through() {
        let input: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).sin()).collect();
        assert_eq!(resample(&input, 16_000, 16_000).unwrap(), input);
    }

    #[test]
    fn rejects_bad_rates() {
        assert!(matches!(
            resample(&[0.0; 10], 0, 16_000),
            Err(AudioError::InvalidSampleRate(0))
        ));
        assert!(matches!(
            StreamResampler::new(16_000, 1_000_000),
            Err(AudioError::InvalidSampleRate(1_000_000))
        ));
    }

    #[test]
    fn pushing_in_pieces_equals_one_push() {
        let input: Vec<f32> = (0..10_000)
            .map(|i| ((i * 7919) % 201) as f32 / 100.0 - 1.0)
            .collect();
        let whole = resample(&input, 44_100, 16_000).unwrap();
        let mut r = StreamResampler::new(44_100, 16_000).unwrap();
        let mut pieces = Vec::new();
        for piece in input.chunks(333) {
            r.push(piece, &mut pieces).unwrap();
        }
        r.finish(&mut pieces).unwrap();
        assert_eq!(whole, pieces);
    }
}
