//! Writing WAV files, atomically, all at once or as the samples are made.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use crate::atomic::AtomicFile;
use crate::limits::check_sample_rate;
use crate::AudioError;

/// Writes mono `samples` to `path` as a 16-bit PCM WAV file, atomically (see
/// [`WavFile`]).
pub fn write_wav(
    path: impl AsRef<Path>,
    samples: &[f32],
    sample_rate: u32,
) -> Result<(), AudioError> {
    let mut wav = WavFile::create(path.as_ref(), sample_rate)?;
    wav.write(samples)?;
    wav.finish()
}

/// A mono 16-bit PCM WAV file written a block of samples at a time, so audio longer
/// than memory can hold goes straight to disk.
///
/// 16-bit PCM because every player, browser and tool reads it, at half the size of f32,
/// and its 96 dB of dynamic range is more than speech needs. Samples are clipped to
/// -1.0..=1.0 and rounded; NaN becomes 0.
///
/// The samples go to a temporary file beside `path`, which [`WavFile::finish`] renames
/// over it: a crash, a full disk or a cancel (dropping the writer) never leaves a
/// half-written file under `path`; it holds either the old file (or nothing) or the
/// complete new one.
pub struct WavFile {
    writer: hound::WavWriter<BufWriter<File>>,
    file: AtomicFile,
    path: PathBuf,
    samples: u64,
}

impl WavFile {
    pub fn create(path: &Path, sample_rate: u32) -> Result<WavFile, AudioError> {
        check_sample_rate(sample_rate)?;
        let fail = |source| AudioError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut file = AtomicFile::create(path).map_err(fail)?;
        let out = BufWriter::new(file.file().try_clone().map_err(fail)?);
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let writer = hound::WavWriter::new(out, spec)
            .map_err(hound_error)
            .map_err(fail)?;
        Ok(WavFile {
            writer,
            file,
            path: path.to_path_buf(),
            samples: 0,
        })
    }

    /// Appends `samples`. A WAV's sizes are 32-bit: past 4 GiB of samples (27 hours
    /// at 22 kHz) this fails rather than write a file no player can read.
    pub fn write(&mut self, samples: &[f32]) -> Result<(), AudioError> {
        let bytes = (self.samples + samples.len() as u64) * 2;
        if bytes > u64::from(u32::MAX) - 44 {
            return Err(self.fail(io::Error::other("a WAV file holds at most 4 GiB of audio")));
        }
        for &sample in samples {
            self.writer
                .write_sample(to_i16(sample))
                .map_err(|e| self.fail(hound_error(e)))?;
        }
        self.samples += samples.len() as u64;
        Ok(())
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Completes the header, flushes, and puts the file in place.
    pub fn finish(self) -> Result<(), AudioError> {
        let WavFile {
            writer, file, path, ..
        } = self;
        let fail = |source| AudioError::Write {
            path: path.clone(),
            source,
        };
        writer.finalize().map_err(hound_error).map_err(fail)?;
        file.commit().map_err(fail)
    }

    fn fail(&self, source: io::Error) -> AudioError {
        AudioError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

/// `samples` as 16-bit little-endian PCM: the bytes a WAV file's data holds, and what
/// OpenAI's API calls `pcm`.
pub fn pcm16_bytes(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|&s| to_i16(s).to_le_bytes())
        .collect()
}

pub(crate) fn to_i16(sample: f32) -> i16 {
    // `as` saturates and maps NaN to 0.
    (sample.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

pub(crate) fn hound_error(error: hound::Error) -> io::Error {
    match error {
        hound::Error::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_clips_and_rounds() {
        assert_eq!(to_i16(0.0), 0);
        assert_eq!(to_i16(1.0), 32767);
        assert_eq!(to_i16(-1.0), -32767);
        assert_eq!(to_i16(2.5), 32767);
        assert_eq!(to_i16(-7.0), -32767);
        assert_eq!(to_i16(f32::NAN), 0);
        assert_eq!(to_i16(0.5), 16384);
        assert_eq!(pcm16_bytes(&[1.0, -1.0]), [0xff, 0x7f, 0x01, 0x80]);
    }

    #[test]
    fn blocks_are_on_disk_before_the_end_and_the_file_appears_at_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.wav");
        let mut wav = WavFile::create(&path, 22_050).unwrap();
        let block = vec![0.25f32; 100_000];
        for _ in 0..5 {
            wav.write(&block).unwrap();
        }
        // The buffered writer holds at most its buffer: the rest is in the temp file.
        let temp_len: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(temp_len >= 2 * 500_000 - 64 * 1024, "{temp_len}");
        assert!(!path.exists());
        assert_eq!(wav.samples(), 500_000);
        wav.finish().unwrap();
        let reader = hound::WavReader::open(&path).unwrap();
        assert_eq!(reader.duration(), 500_000);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        // Dropped unfinished: no file, no temp.
        let cancelled = dir.path().join("cancelled.wav");
        let mut wav = WavFile::create(&cancelled, 22_050).unwrap();
        wav.write(&block).unwrap();
        drop(wav);
        assert!(!cancelled.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
