//! A sample to clone a voice from, made in the app: recorded from the microphone (its
//! level reported as it is heard), cut to the part that is wanted, and heard by Whisper
//! so the user can correct the transcript before cloning. Samples live in the data
//! folder's `voice-samples/`; cloning copies the one chosen into the library.

use std::path::{Path, PathBuf};

use izwi_audio::{WavRecording, ASR_SAMPLE_RATE};
use serde::{Deserialize, Serialize};

use crate::dictation::AudioChunks;
use crate::qwen3_tts::MAX_REFERENCE_SECONDS;
use crate::qwen3_voices::TranscriptSource;
use crate::{Runtime, RuntimeError, LEVEL_SECONDS};

const SAMPLES_DIR: &str = "voice-samples";

/// How many peaks a sample comes with: enough for a dialog's waveform.
pub const SAMPLE_PEAKS: usize = 200;

/// A recorded or trimmed sample: 16 kHz mono WAV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VoiceSample {
    pub path: PathBuf,
    pub seconds: f64,
    /// [`SAMPLE_PEAKS`] peaks (0..=1) over its length, for drawing it.
    pub peaks: Vec<f32>,
}

/// What Whisper heard in a sample; `text` is None when `source` says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SampleTranscript {
    pub text: Option<String>,
    pub source: TranscriptSource,
}

/// The root mean square of `samples` (0 silence, 1 full scale).
fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

/// The part of `samples` (at `rate`) from `start_s` to `end_s`, refused when that is
/// not a part of it.
fn cut(samples: &[f32], rate: u32, start_s: f64, end_s: f64) -> Result<&[f32], RuntimeError> {
    let seconds = samples.len() as f64 / f64::from(rate);
    // The length shown was read at the file's own rate; resampled, it may be up to a
    // sample shorter.
    let slack = 1.0 / f64::from(rate);
    if !(start_s >= 0.0 && end_s <= seconds + slack && start_s < end_s) {
        return Err(RuntimeError::InvalidRequest(format!(
            "cannot keep {start_s:.2} s to {end_s:.2} s of a {seconds:.2} s recording"
        )));
    }
    let at = |s: f64| ((s * f64::from(rate)).round() as usize).min(samples.len());
    Ok(&samples[at(start_s)..at(end_s)])
}

/// Writes `audio` into `wav` until it ends or reaches the longest a clone takes.
async fn record(
    mut wav: WavRecording,
    audio: &mut AudioChunks,
    on_level: &mut impl FnMut(f32),
) -> Result<(), RuntimeError> {
    let path = wav.path().to_path_buf();
    let audio_error = |source| RuntimeError::Audio {
        path: path.clone(),
        source,
    };
    let max = (MAX_REFERENCE_SECONDS * f64::from(ASR_SAMPLE_RATE)) as u64;
    let per_level = (LEVEL_SECONDS * f64::from(ASR_SAMPLE_RATE)) as usize;
    let mut pending = Vec::new();
    while let Some(chunk) = audio.recv().await {
        let chunk = chunk?;
        let room = (max - wav.samples()) as usize;
        let chunk = &chunk[..chunk.len().min(room)];
        wav.write(chunk).map_err(audio_error)?;
        pending.extend_from_slice(chunk);
        while pending.len() >= per_level {
            on_level(rms(&pending[..per_level]));
            pending.drain(..per_level);
        }
        if wav.samples() >= max {
            break;
        }
    }
    wav.finish().map_err(audio_error)
}

/// Removes the samples in `dir` last written over a day ago (what is left of dialogs
/// closed without a clone); a sample that cannot be removed stays.
fn forget_old_samples(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let day = std::time::Duration::from_secs(24 * 3600);
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        let is_sample = entry.file_name().to_string_lossy().starts_with("sample-");
        if old && is_sample {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Runtime {
    /// A new, unused file name in the samples folder. Samples are the Clone dialog's
    /// scratch (a clone keeps its own copy of what it was made from): those over a day
    /// old are removed first.
    fn new_sample_path(&self) -> Result<PathBuf, RuntimeError> {
        let dir = self.inner.store.data_dir().join(SAMPLES_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        forget_old_samples(&dir);
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut n = 0;
        loop {
            let path = dir.join(format!("sample-{stamp}-{n}.wav"));
            if !path.exists() {
                return Ok(path);
            }
            n += 1;
        }
    }

    /// Records `audio` (16 kHz mono chunks, e.g. [`crate::microphone_chunks`]) into a
    /// new sample until it ends or reaches the longest a clone takes, calling
    /// `on_level` with the level every [`LEVEL_SECONDS`].
    pub async fn record_voice_sample(
        &self,
        mut audio: AudioChunks,
        mut on_level: impl FnMut(f32),
    ) -> Result<VoiceSample, RuntimeError> {
        let path = self.new_sample_path()?;
        let audio_error = |source| RuntimeError::Audio {
            path: path.clone(),
            source,
        };
        let wav = WavRecording::create(&path, ASR_SAMPLE_RATE).map_err(audio_error)?;
        match record(wav, &mut audio, &mut on_level).await {
            Ok(()) => self.read_voice_sample(&path),
            Err(e) => {
                // A recording cut short by an error is no sample.
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// A recording (any format Izwi decodes) as a sample to trim: its length and peaks.
    pub fn read_voice_sample(&self, path: &Path) -> Result<VoiceSample, RuntimeError> {
        let audio = izwi_audio::decode_file(path).map_err(|source| RuntimeError::Audio {
            path: path.to_path_buf(),
            source,
        })?;
        let mono = audio.to_mono();
        Ok(VoiceSample {
            path: path.to_path_buf(),
            seconds: mono.len() as f64 / f64::from(audio.sample_rate.max(1)),
            peaks: izwi_audio::peaks(&mono, SAMPLE_PEAKS),
        })
    }

    /// A new sample holding `start_s` to `end_s` of the recording at `path` (any format
    /// Izwi decodes), as 16 kHz mono; `path` is only read.
    pub fn trim_voice_sample(
        &self,
        path: &Path,
        start_s: f64,
        end_s: f64,
    ) -> Result<VoiceSample, RuntimeError> {
        let samples = izwi_audio::load_for_asr(path).map_err(|source| RuntimeError::Audio {
            path: path.to_path_buf(),
            source,
        })?;
        let kept = cut(&samples, ASR_SAMPLE_RATE, start_s, end_s)?;
        if kept.len() as f64 > MAX_REFERENCE_SECONDS * f64::from(ASR_SAMPLE_RATE) {
            return Err(RuntimeError::InvalidRequest(format!(
                "keep at most {MAX_REFERENCE_SECONDS:.0} s: a clone takes no more"
            )));
        }
        let to = self.new_sample_path()?;
        izwi_audio::write_wav(&to, kept, ASR_SAMPLE_RATE).map_err(|source| {
            RuntimeError::Audio {
                path: to.clone(),
                source,
            }
        })?;
        self.read_voice_sample(&to)
    }

    /// What Whisper (the installed model the library transcribes with) hears in a
    /// recording, for the user to correct before cloning.
    pub async fn transcribe_voice_sample(
        &self,
        path: &Path,
    ) -> Result<SampleTranscript, RuntimeError> {
        let samples = crate::qwen3_voices::recording(path)?;
        let (text, source) = self.inner.hear(samples).await;
        Ok(SampleTranscript { text, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_of_a_square_wave_is_its_height() {
        assert_eq!(rms(&[]), 0.0);
        assert!((rms(&[0.5, -0.5, 0.5, -0.5]) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn cut_keeps_the_range_and_refuses_what_is_outside() {
        let samples: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let kept = cut(&samples, 10, 2.0, 5.0).unwrap();
        assert_eq!(kept.first(), Some(&20.0));
        assert_eq!(kept.len(), 30);
        assert!(cut(&samples, 10, 5.0, 2.0).is_err());
        assert!(cut(&samples, 10, -1.0, 2.0).is_err());
        assert!(cut(&samples, 10, 0.0, 11.0).is_err());
        assert_eq!(cut(&samples, 10, 0.0, 10.0).unwrap().len(), 100);
    }
}
