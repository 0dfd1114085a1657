//! A recording kept on disk as it is captured: a WAV file whose header is brought up to
//! date after every block, so a process killed mid-recording leaves a file every player
//! reads, holding all the audio up to the last block.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use crate::limits::check_sample_rate;
use crate::wav::{hound_error, to_i16};
use crate::AudioError;

/// A mono 16-bit PCM WAV file written in place, block by block (unlike [`WavFile`],
/// which appears only when complete: a recording must survive its writer).
///
/// [`WavFile`]: crate::WavFile
pub struct WavRecording {
    writer: hound::WavWriter<BufWriter<File>>,
    path: PathBuf,
    samples: u64,
}

impl WavRecording {
    /// Creates `path`; an existing file there is an error, never overwritten.
    pub fn create(path: &Path, sample_rate: u32) -> Result<WavRecording, AudioError> {
        check_sample_rate(sample_rate)?;
        let fail = |source| AudioError::Write {
            path: path.to_path_buf(),
            source,
        };
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(fail)?;
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut writer = hound::WavWriter::new(BufWriter::new(file), spec)
            .map_err(hound_error)
            .map_err(fail)?;
        // A file from the first moment: even an empty recording is a valid WAV.
        writer.flush().map_err(hound_error).map_err(fail)?;
        Ok(WavRecording {
            writer,
            path: path.to_path_buf(),
            samples: 0,
        })
    }

    /// Appends `samples` and rewrites the header to count them: once this returns, the
    /// file on disk is a valid WAV holding them, whatever becomes of this process.
    /// Past 4 GiB (a WAV's limit: 37 hours at 16 kHz) this fails.
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
        self.writer.flush().map_err(|e| self.fail(hound_error(e)))?;
        self.samples += samples.len() as u64;
        Ok(())
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Completes the file and waits until it is on the disk, not only in the system's
    /// cache (so it survives a power cut too).
    pub fn finish(self) -> Result<(), AudioError> {
        let fail = |source| AudioError::Write {
            path: self.path.clone(),
            source,
        };
        self.writer.finalize().map_err(hound_error).map_err(fail)?;
        // Windows syncs only through a handle that may write.
        File::options()
            .write(true)
            .open(&self.path)
            .and_then(|f| f.sync_all())
            .map_err(fail)
    }

    fn fail(&self, source: io::Error) -> AudioError {
        AudioError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_valid_after_every_block_without_finishing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dictation.wav");
        let mut recording = WavRecording::create(&path, 16_000).unwrap();
        assert_eq!(hound::WavReader::open(&path).unwrap().duration(), 0);
        recording.write(&[0.5; 1_600]).unwrap();
        recording.write(&[-0.5; 800]).unwrap();
        // As a killed process would leave it: never finished.
        std::mem::forget(recording);
        let reader = hound::WavReader::open(&path).unwrap();
        assert_eq!(reader.spec().sample_rate, 16_000);
        let samples: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples.len(), 2_400);
        assert_eq!((samples[0], samples[2_399]), (16384, -16384));
        // And the decoder the transcription uses reads it.
        assert_eq!(crate::load_for_asr(&path).unwrap().len(), 2_400);
    }

    #[test]
    fn an_existing_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.wav");
        std::fs::write(&path, b"the user's").unwrap();
        assert!(WavRecording::create(&path, 16_000).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"the user's");
    }
}
