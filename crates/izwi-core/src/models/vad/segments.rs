//! From frame probabilities to speech segments, and from segments to the chunks a
//! speech model decodes. The decisions are the ones Silero's `get_speech_timestamps`
//! makes (and faster-whisper's copy of it): speech starts at a frame at or above the
//! threshold and ends after enough frames below `threshold - 0.15`; a segment growing
//! past the maximum is cut at its last pause of over 98 ms, or else where it is; short
//! segments are dropped; segments are widened by a padding, split evenly where two
//! paddings would overlap.

use std::ops::Range;

use super::silero::FRAME_SAMPLES;

const SAMPLE_RATE: f64 = 16_000.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadOptions {
    /// Probability at or above which a frame is speech.
    pub threshold: f32,
    /// Below this a frame is silence; between the two it continues what came before.
    /// Silero's default is `threshold - 0.15` (at least 0.01).
    pub neg_threshold: f32,
    /// Segments shorter than this are dropped.
    pub min_speech_ms: u32,
    /// Segments longer than this are split (infinite: never).
    pub max_speech_seconds: f64,
    /// Silence that ends a segment.
    pub min_silence_ms: u32,
    /// Audio kept on each side of a segment.
    pub speech_pad_ms: u32,
}

impl Default for VadOptions {
    /// Silero's defaults as faster-whisper takes them (`VadOptions()`).
    fn default() -> Self {
        Self {
            threshold: 0.5,
            neg_threshold: 0.35,
            min_speech_ms: 0,
            max_speech_seconds: f64::INFINITY,
            min_silence_ms: 2000,
            speech_pad_ms: 400,
        }
    }
}

impl VadOptions {
    /// For cutting a file into chunks a 30-second model decodes: segments of at most
    /// `max_seconds`, ended by 160 ms of silence (faster-whisper's batched pipeline).
    pub fn for_chunks(max_seconds: f64) -> Self {
        Self {
            max_speech_seconds: max_seconds,
            min_silence_ms: 160,
            ..Self::default()
        }
    }
}

/// A change the segmenter saw, in samples of 16 kHz audio, unpadded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VadEvent {
    /// Speech began at this sample.
    SpeechStart { at: usize },
    /// The speech that began at `speech.start` ended (or was cut at the maximum).
    SpeechEnd { speech: Range<usize> },
}

/// The state machine that turns frame probabilities, one at a time, into speech
/// starts and ends; [`speech_segments`] and the streaming detector both run it.
#[derive(Debug, Clone)]
pub struct Segmenter {
    options: VadOptions,
    min_speech: f64,
    max_speech: f64,
    min_silence: f64,
    frames: usize,
    triggered: bool,
    start: usize,
    /// Where the current silence began (0: none); the last pause long enough to cut
    /// at, and where speech resumed after it.
    temp_end: usize,
    prev_end: usize,
    next_start: usize,
}

impl Segmenter {
    pub fn new(options: VadOptions) -> Self {
        let ms = |v: u32| SAMPLE_RATE * f64::from(v) / 1000.0;
        let pad = ms(options.speech_pad_ms);
        Self {
            min_speech: ms(options.min_speech_ms),
            max_speech: SAMPLE_RATE * options.max_speech_seconds - FRAME_SAMPLES as f64 - 2.0 * pad,
            min_silence: ms(options.min_silence_ms),
            options,
            frames: 0,
            triggered: false,
            start: 0,
            temp_end: 0,
            prev_end: 0,
            next_start: 0,
        }
    }

    /// Whether speech is going on after the frames pushed so far.
    pub fn in_speech(&self) -> bool {
        self.triggered
    }

    /// Takes the next frame's probability.
    pub fn push(&mut self, p: f32) -> Vec<VadEvent> {
        const MIN_SILENCE_AT_MAX: f64 = SAMPLE_RATE * 98.0 / 1000.0;
        let o = self.options;
        let here = FRAME_SAMPLES * self.frames;
        self.frames += 1;
        let mut events = Vec::new();
        if p >= o.threshold && self.temp_end != 0 {
            self.temp_end = 0;
            if self.next_start < self.prev_end {
                self.next_start = here;
            }
        }
        if p >= o.threshold && !self.triggered {
            self.triggered = true;
            self.start = here;
            events.push(VadEvent::SpeechStart { at: here });
            return events;
        }
        if self.triggered && (here - self.start) as f64 > self.max_speech {
            if self.prev_end != 0 {
                events.push(VadEvent::SpeechEnd {
                    speech: self.start..self.prev_end,
                });
                if self.next_start < self.prev_end {
                    self.triggered = false;
                } else {
                    self.start = self.next_start;
                    events.push(VadEvent::SpeechStart { at: self.start });
                }
            } else {
                events.push(VadEvent::SpeechEnd {
                    speech: self.start..here,
                });
                self.triggered = false;
                self.reset_pause();
                return events;
            }
            self.reset_pause();
        }
        if p < o.neg_threshold && self.triggered {
            if self.temp_end == 0 {
                self.temp_end = here;
            }
            if (here - self.temp_end) as f64 > MIN_SILENCE_AT_MAX {
                self.prev_end = self.temp_end;
            }
            if ((here - self.temp_end) as f64) < self.min_silence {
                return events;
            }
            if (self.temp_end - self.start) as f64 > self.min_speech {
                events.push(VadEvent::SpeechEnd {
                    speech: self.start..self.temp_end,
                });
            }
            self.reset_pause();
            self.triggered = false;
        }
        events
    }

    /// Ends speech still going on when the audio, `total_samples` long, ends.
    pub fn finish(&mut self, total_samples: usize) -> Option<VadEvent> {
        let open =
            self.triggered && (total_samples.saturating_sub(self.start)) as f64 > self.min_speech;
        self.triggered = false;
        open.then_some(VadEvent::SpeechEnd {
            speech: self.start..total_samples,
        })
    }

    fn reset_pause(&mut self) {
        self.temp_end = 0;
        self.prev_end = 0;
        self.next_start = 0;
    }
}

/// Speech segments (sample ranges of 16 kHz audio `total_samples` long, padded by the
/// options' padding) from the probabilities of its frames.
pub fn speech_segments(
    probabilities: &[f32],
    total_samples: usize,
    options: &VadOptions,
) -> Vec<Range<usize>> {
    let mut segmenter = Segmenter::new(*options);
    let mut speeches: Vec<(usize, usize)> = Vec::new();
    let ends = probabilities
        .iter()
        .flat_map(|&p| segmenter.push(p))
        .collect::<Vec<_>>()
        .into_iter()
        .chain(segmenter.finish(total_samples));
    for event in ends {
        if let VadEvent::SpeechEnd { speech } = event {
            speeches.push((speech.start, speech.end));
        }
    }
    let pad = SAMPLE_RATE * f64::from(options.speech_pad_ms) / 1000.0;

    // Widen by the padding; where two paddings would overlap, meet halfway.
    let pad = pad as usize;
    for i in 0..speeches.len() {
        if i == 0 {
            speeches[i].0 = speeches[i].0.saturating_sub(pad);
        }
        if i + 1 < speeches.len() {
            let silence = speeches[i + 1].0.saturating_sub(speeches[i].1);
            if silence < 2 * pad {
                speeches[i].1 += silence / 2;
                speeches[i + 1].0 = speeches[i + 1].0.saturating_sub(silence / 2);
            } else {
                speeches[i].1 = (speeches[i].1 + pad).min(total_samples);
                speeches[i + 1].0 = speeches[i + 1].0.saturating_sub(pad);
            }
        } else {
            speeches[i].1 = (speeches[i].1 + pad).min(total_samples);
        }
    }
    speeches
        .into_iter()
        .filter(|(s, e)| e > s)
        .map(|(s, e)| s..e)
        .collect()
}

/// Consecutive segments joined into chunks spanning at most `max_samples` each (from
/// the first segment's start to the last one's end, pauses between them included, as a
/// 30-second window of the audio would hold them). A segment longer than the limit is a
/// chunk of its own, cut into pieces of at most the limit.
pub fn chunks(segments: &[Range<usize>], max_samples: usize) -> Vec<Range<usize>> {
    let max_samples = max_samples.max(1);
    let mut chunks: Vec<Range<usize>> = Vec::new();
    for segment in segments {
        if let Some(last) = chunks.last_mut() {
            if segment.end.saturating_sub(last.start) <= max_samples && segment.start >= last.end {
                last.end = segment.end;
                continue;
            }
        }
        let mut start = segment.start;
        while segment.end - start > max_samples {
            chunks.push(start..start + max_samples);
            start += max_samples;
        }
        chunks.push(start..segment.end);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(pattern: &[(f32, usize)]) -> Vec<f32> {
        pattern
            .iter()
            .flat_map(|&(p, n)| std::iter::repeat_n(p, n))
            .collect()
    }

    #[test]
    fn silence_has_no_speech() {
        let probabilities = vec![0.01; 625];
        assert!(speech_segments(&probabilities, 625 * 512, &VadOptions::default()).is_empty());
    }

    #[test]
    fn speech_is_padded_and_a_short_pause_does_not_end_it() {
        // 1 s silence, 2 s speech, 0.5 s pause, 1 s speech, 3 s silence.
        let p = frames(&[(0.0, 31), (0.9, 63), (0.1, 16), (0.9, 31), (0.0, 94)]);
        let total = p.len() * 512;
        let segments = speech_segments(&p, total, &VadOptions::default());
        assert_eq!(segments.len(), 1, "{segments:?}");
        assert_eq!(segments[0].start, 31 * 512 - 6400);
        assert_eq!(segments[0].end, (31 + 63 + 16 + 31) * 512 + 6400);
        // With 160 ms of silence enough to end speech, the pause splits it.
        let split = speech_segments(&p, total, &VadOptions::for_chunks(30.0));
        assert_eq!(split.len(), 2, "{split:?}");
        assert!(split[0].end <= split[1].start);
    }

    #[test]
    fn long_speech_is_cut_below_the_maximum() {
        let p = frames(&[(0.9, 2000)]);
        let segments = speech_segments(&p, 2000 * 512, &VadOptions::for_chunks(30.0));
        assert!(segments.len() >= 2, "{segments:?}");
        for s in &segments {
            assert!(s.len() <= 30 * 16_000, "{s:?}");
        }
    }

    #[test]
    fn chunks_join_segments_up_to_the_limit() {
        let segments = [0..100, 150..300, 400..900, 950..1000, 1000..3000];
        assert_eq!(chunks(&segments[..3], 500), vec![0..300, 400..900]);
        assert_eq!(
            chunks(&segments, 1000),
            vec![0..1000, 1000..2000, 2000..3000]
        );
        assert!(chunks(&[], 10).is_empty());
    }
}
