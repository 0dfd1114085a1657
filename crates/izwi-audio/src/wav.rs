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

/// [`write_wav`] to a file that must not exist: one there (or put there meanwhile) is
/// kept, and this fails.
pub fn write_new_wav(
    path: impl AsRef<Path>,
    samples: &[f32],
    sample_rate: u32,
) -> Result<(), AudioError> {
    let mut wav = WavFile::create_new(path.as_ref(), sample_rate)?;
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
        Self::start(path, sample_rate, AtomicFile::create)
    }

    /// [`WavFile::create`] for a file that must not exist, now or when it is finished
    /// (see [`AtomicFile::create_new`]).
    pub fn create_new(path: &Path, sample_rate: u32) -> Result<WavFile, AudioError> {
        Self::start(path, sample_rate, AtomicFile::create_new)
    }

    fn start(
        path: &Path,
        sample_rate: u32,
        open: fn(&Path) -> io::Result<AtomicFile>,
    ) -> Result<WavFile, AudioError> {
        check_sample_rate(sample_rate)?;
        let fail = |source| AudioError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut file = open(path).map_err(fail)?;
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

/// The header of a mono 16-bit PCM WAV sent as it is made, before its length is known:
/// the RIFF and data sizes are 0xFFFFFFFF, as OpenAI's streamed WAV has them, which
/// readers take as "until the end of the stream". [`pcm16_bytes`] follow it.
pub fn streamed_wav_header(sample_rate: u32) -> [u8; 44] {
    const UNKNOWN: [u8; 4] = u32::MAX.to_le_bytes();
    let mut header = [0u8; 44];
    let fields: [&[u8]; 13] = [
        b"RIFF",
        &UNKNOWN,
        b"WAVE",
        b"fmt ",
        &16u32.to_le_bytes(),
        &1u16.to_le_bytes(), // PCM
        &1u16.to_le_bytes(), // mono
        &sample_rate.to_le_bytes(),
        &(sample_rate * 2).to_le_bytes(), // bytes a second
        &2u16.to_le_bytes(),              // bytes a frame
        &16u16.to_le_bytes(),             // bits a sample
        b"data",
        &UNKNOWN,
    ];
    let mut at = 0;
    for field in fields {
        header[at..at + field.len()].copy_from_slice(field);
        at += field.len();
    }
    header
}

/// The sample rate and the 16-bit PCM data of a mono 16-bit WAV's bytes (as
/// [`WavFile`] writes them, or a streamed one with open lengths); None when the bytes
/// are not such a WAV.
pub fn pcm16_wav_data(wav: &[u8]) -> Option<(u32, &[u8])> {
    if wav.get(0..4)? != b"RIFF" || wav.get(8..12)? != b"WAVE" {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(wav.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(wav.get(at..at + 4)?.try_into().ok()?));
    let mut rate = None;
    let mut at = 12;
    while at + 8 <= wav.len() {
        let size = u32_at(at + 4)? as usize;
        let body = at + 8;
        match &wav[at..at + 4] {
            b"fmt " => {
                // PCM (1) or its extensible form (0xFFFE), mono, 16 bits.
                let format = u16_at(body)?;
                if !matches!(format, 1 | 0xFFFE)
                    || u16_at(body + 2)? != 1
                    || u16_at(body + 14)? != 16
                {
                    return None;
                }
                rate = Some(u32_at(body + 4)?);
            }
            b"data" => {
                let end = body.saturating_add(size).min(wav.len());
                return Some((rate?, &wav[body..end]));
            }
            _ => {}
        }
        // Chunks are padded to an even length.
        at = body.checked_add(size)?.checked_add(size % 2)?;
    }
    None
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
    fn a_streamed_wav_is_read_to_its_end() {
        let samples: Vec<f32> = (0..24_000).map(|i| (i as f32 / 50.0).sin() * 0.5).collect();
        let mut stream = streamed_wav_header(24_000).to_vec();
        stream.extend(pcm16_bytes(&samples));
        let audio = crate::decode_bytes(&stream, Some("wav")).unwrap();
        assert_eq!((audio.sample_rate, audio.channels), (24_000, 1));
        assert_eq!(audio.samples.len(), samples.len());
        let off = audio
            .samples
            .iter()
            .zip(&samples)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(off < 1e-4, "{off}");
    }

    #[test]
    fn the_pcm_of_a_written_or_streamed_wav_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("said.wav");
        let samples = [0.5f32, -0.25, 0.0, 1.0];
        write_wav(&path, &samples, 22_050).unwrap();
        let file = std::fs::read(&path).unwrap();
        let pcm = pcm16_bytes(&samples);
        assert_eq!(pcm16_wav_data(&file), Some((22_050, &pcm[..])));
        let mut streamed = streamed_wav_header(24_000).to_vec();
        streamed.extend(&pcm);
        assert_eq!(pcm16_wav_data(&streamed), Some((24_000, &pcm[..])));
        assert_eq!(pcm16_wav_data(b"RIFF\0\0\0\0WAVEdata"), None);
        assert_eq!(pcm16_wav_data(&file[..20]), None);
        assert_eq!(pcm16_wav_data(b"not a wav at all"), None);
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
