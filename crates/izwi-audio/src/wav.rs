//! Writing WAV files, atomically.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::check_sample_rate;
use crate::AudioError;

/// Writes mono `samples` to `path` as a 16-bit PCM WAV file.
///
/// 16-bit PCM because every player, browser and tool reads it, at half the size of f32,
/// and its 96 dB of dynamic range is more than speech needs. Samples are clipped to
/// -1.0..=1.0 and rounded; NaN becomes 0.
///
/// The file is written under a temporary name in the same directory, flushed to disk, and
/// then renamed over `path`. A crash or a full disk therefore never leaves a half-written
/// file under `path`: it holds either the old file (or nothing) or the complete new one.
pub fn write_wav(
    path: impl AsRef<Path>,
    samples: &[f32],
    sample_rate: u32,
) -> Result<(), AudioError> {
    let path = path.as_ref();
    check_sample_rate(sample_rate)?;
    let fail = |source| AudioError::Write {
        path: path.to_path_buf(),
        source,
    };
    let temp = temp_path(path).map_err(fail)?;
    match write_then_rename(&temp, path, samples, sample_rate) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Best effort: the write already failed, and a stray temp file is harmless.
            let _ = fs::remove_file(&temp);
            Err(fail(e))
        }
    }
}

/// A fresh name next to `path`: hidden, and unique per process and call, so concurrent
/// writers of the same file do not collide.
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp_name = format!(".{}.{}-{n}.tmp", name.to_string_lossy(), std::process::id());
    Ok(path.with_file_name(temp_name))
}

fn write_then_rename(temp: &Path, path: &Path, samples: &[f32], rate: u32) -> io::Result<()> {
    let file = OpenOptions::new().write(true).create_new(true).open(temp)?;
    let mut out = BufWriter::new(file);
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::new(&mut out, spec).map_err(hound_error)?;
    for &sample in samples {
        writer.write_sample(to_i16(sample)).map_err(hound_error)?;
    }
    writer.finalize().map_err(hound_error)?;
    let file: File = out.into_inner().map_err(|e| e.into_error())?;
    // On disk before the rename, so the new name never points at unwritten data.
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)
}

fn to_i16(sample: f32) -> i16 {
    // `as` saturates and maps NaN to 0.
    (sample.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

fn hound_error(error: hound::Error) -> io::Error {
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
    }

    #[test]
    fn temp_names_are_hidden_unique_and_beside_the_target() {
        let a = temp_path(Path::new("/some/dir/out.wav")).unwrap();
        let b = temp_path(Path::new("/some/dir/out.wav")).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(Path::new("/some/dir")));
        assert!(a
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".out.wav."));
        assert!(temp_path(Path::new("/")).is_err());
    }
}
