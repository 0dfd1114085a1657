//! Files as the shells hand them over: paths dropped or picked (folders included)
//! turned into the media files to transcribe, transcripts exported to disk, and the
//! peaks of a file's waveform.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use izwi_core::transcript::Transcript;
use serde::{Deserialize, Serialize};

use crate::{Runtime, RuntimeError};

/// Extensions (lowercase) of the audio and video files Izwi transcribes.
pub const MEDIA_EXTENSIONS: &[&str] = &[
    "wav", "flac", "mp3", "ogg", "oga", "opus", "m4a", "aac", "mp4", "m4v", "mov", "mkv", "webm",
];

/// Whether `path` names an audio or video file by its extension.
pub fn is_media_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MEDIA_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The media files among `paths`: files with a media extension as they are, folders
/// searched recursively (hidden entries and symlinked folders skipped). Sorted, each
/// once. A path that does not exist is an error; so is finding no media file at all.
pub fn expand_media_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, RuntimeError> {
    let mut found = BTreeSet::new();
    for path in paths {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|source| RuntimeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if meta.is_dir() {
            collect_dir(path, &mut found)?;
        } else if is_media_file(path) {
            found.insert(path.to_path_buf());
        }
    }
    if found.is_empty() && !paths.is_empty() {
        return Err(RuntimeError::InvalidRequest(format!(
            "no audio or video files ({}) among the paths given",
            MEDIA_EXTENSIONS.join(", ")
        )));
    }
    Ok(found.into_iter().collect())
}

fn collect_dir(dir: &Path, found: &mut BTreeSet<PathBuf>) -> Result<(), RuntimeError> {
    let io = |source| RuntimeError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // file_type does not follow symlinks: a linked folder could loop back.
        let file_type = entry.file_type().map_err(io)?;
        if file_type.is_dir() {
            collect_dir(&path, found)?;
        } else if is_media_file(&path) && path.is_file() {
            found.insert(path);
        }
    }
    Ok(())
}

/// The formats a transcript is exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    Txt,
    Srt,
    Vtt,
    Json,
}

impl ExportFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Txt => "txt",
            ExportFormat::Srt => "srt",
            ExportFormat::Vtt => "vtt",
            ExportFormat::Json => "json",
        }
    }

    pub fn render(self, transcript: &Transcript) -> String {
        match self {
            ExportFormat::Txt => transcript.to_txt(),
            ExportFormat::Srt => transcript.to_srt(),
            ExportFormat::Vtt => transcript.to_vtt(),
            ExportFormat::Json => transcript.to_json(),
        }
    }
}

/// Writes `bytes` to `path` so that `path` holds either its old content or all of the
/// new, through izwi-audio's one atomic writer (a temporary file of a random name
/// beside it, the replaced file's permissions kept).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
    izwi_audio::write_atomically(path, bytes).map_err(|source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The peak magnitude (0 to 1) of mono `samples` in each of `buckets` equal spans.
/// Spans shorter than a sample (a short file, many buckets) reuse the nearest sample.
pub fn peaks(samples: &[f32], buckets: usize) -> Vec<f32> {
    let n = samples.len();
    if n == 0 {
        return vec![0.0; buckets];
    }
    (0..buckets)
        .map(|i| {
            let start = (i * n / buckets).min(n - 1);
            let end = ((i + 1) * n / buckets).clamp(start + 1, n);
            samples[start..end]
                .iter()
                .fold(0.0f32, |peak, s| peak.max(s.abs()))
                .min(1.0)
        })
        .collect()
}

/// The most peaks [`Runtime::audio_peaks`] returns: more than any screen is wide.
pub const MAX_PEAK_BUCKETS: usize = 100_000;

impl Runtime {
    /// The waveform of a media file: the peak magnitude (0 to 1) of its mono mix in each
    /// of `buckets` equal spans of time. Decodes on a blocking thread.
    pub async fn audio_peaks(&self, path: &Path, buckets: usize) -> Result<Vec<f32>, RuntimeError> {
        if buckets == 0 || buckets > MAX_PEAK_BUCKETS {
            return Err(RuntimeError::InvalidRequest(format!(
                "buckets must be 1 to {MAX_PEAK_BUCKETS}, not {buckets}"
            )));
        }
        let owned = path.to_path_buf();
        tokio::task::spawn_blocking(move || izwi_audio::decode_file(&owned))
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("decoding stopped: {e}")))?
            .map(|audio| peaks(&audio.to_mono(), buckets))
            .map_err(|source| RuntimeError::Audio {
                path: path.to_path_buf(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_expanded_recursively_by_extension_and_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("b/deeper")).unwrap();
        std::fs::create_dir_all(d.join(".hidden")).unwrap();
        for f in [
            "z.WAV",
            "a.mp3",
            "notes.txt",
            "b/c.flac",
            "b/deeper/d.webm",
            "b/cover.jpg",
            ".hidden/e.wav",
            ".f.wav",
        ] {
            std::fs::write(d.join(f), b"x").unwrap();
        }
        let single = d.join("b/c.flac");
        let got = expand_media_paths(&[d.to_path_buf(), single.clone()]).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|p| p.strip_prefix(d).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.mp3", "b/c.flac", "b/deeper/d.webm", "z.WAV"]);
    }

    #[test]
    fn files_without_media_and_missing_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("notes.txt");
        std::fs::write(&txt, b"x").unwrap();
        assert!(matches!(
            expand_media_paths(&[&txt]),
            Err(RuntimeError::InvalidRequest(_))
        ));
        assert!(matches!(
            expand_media_paths(&[dir.path().join("gone.wav")]),
            Err(RuntimeError::Io { .. })
        ));
        assert!(expand_media_paths::<PathBuf>(&[]).unwrap().is_empty());
    }

    #[test]
    fn atomic_writes_replace_the_whole_file_and_leave_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.srt");
        std::fs::write(&path, "old content that is longer").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(entries.len(), 1);
        let missing = dir.path().join("no/such/dir/out.txt");
        assert!(matches!(
            write_atomically(&missing, b"x"),
            Err(RuntimeError::Io { .. })
        ));
    }

    #[test]
    fn peaks_are_per_bucket_maxima_of_magnitudes() {
        let samples = [0.1, -0.5, 0.2, 0.3, -0.1, 0.0, 2.0, -0.25];
        assert_eq!(peaks(&samples, 4), [0.5, 0.3, 0.1, 1.0]);
        assert_eq!(peaks(&samples, 1), [1.0]);
        // More buckets than samples: every bucket still shows a sample.
        assert_eq!(peaks(&[0.5, -0.25], 4), [0.5, 0.5, 0.25, 0.25]);
        assert_eq!(peaks(&[], 3), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn export_formats_render_the_transcript() {
        let t = Transcript {
            language: Some("en".into()),
            duration: 2.0,
            segments: vec![izwi_core::transcript::Segment {
                start: 0.0,
                end: 1.5,
                text: " Hello.".into(),
            }],
            rtf: 0.1,
        };
        assert_eq!(ExportFormat::Txt.render(&t), "Hello.\n");
        assert!(ExportFormat::Srt
            .render(&t)
            .contains("00:00:00,000 --> 00:00:01,500"));
        assert!(ExportFormat::Vtt.render(&t).starts_with("WEBVTT"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&ExportFormat::Json.render(&t)).unwrap()
                ["text"],
            "Hello."
        );
        assert_eq!(
            serde_json::to_string(&ExportFormat::Vtt).unwrap(),
            "\"vtt\""
        );
    }
}
