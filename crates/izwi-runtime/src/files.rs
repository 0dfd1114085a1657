//! Files as the shells hand them over: paths dropped or picked (folders included)
//! turned into the media files to transcribe, transcripts exported to disk, and the
//! peaks of a file's waveform.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use izwi_core::transcript::Transcript;
use serde::{Deserialize, Serialize};

use izwi_hub::CancellationToken;

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

/// The most media files one drop, pick or launch queues; the rest are left out (and
/// counted), so a drop of a whole disk does not queue a million jobs.
pub const MAX_MEDIA_FILES: usize = 1000;

/// What [`expand_media_paths`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MediaPaths {
    /// The media files, sorted, each once, at most the limit asked for.
    pub files: Vec<PathBuf>,
    /// Paths that could not be read (a folder without permission), with why.
    pub skipped: Vec<SkippedPath>,
    /// Media files found beyond the limit, not in `files`.
    pub left_out: u32,
}

/// A path left out of an expansion because it could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SkippedPath {
    pub path: PathBuf,
    pub reason: String,
}

/// The media files among `paths`: files with a media extension as they are, folders
/// searched recursively (hidden entries and symlinked folders skipped). Sorted, each
/// once, the first `limit` of them. A path or folder that cannot be read is skipped and
/// reported; when nothing was found, the first such failure is the error, else finding
/// no media file at all is.
pub fn expand_media_paths<P: AsRef<Path>>(
    paths: &[P],
    limit: usize,
) -> Result<MediaPaths, RuntimeError> {
    let mut found = BTreeSet::new();
    let mut failures = Vec::new();
    for path in paths {
        let path = path.as_ref();
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => collect_dir(path, &mut found, &mut failures),
            Ok(_) if is_media_file(path) => {
                found.insert(path.to_path_buf());
            }
            Ok(_) => {}
            Err(source) => failures.push(RuntimeError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
    if found.is_empty() && !paths.is_empty() {
        return Err(failures.into_iter().next().unwrap_or_else(|| {
            RuntimeError::InvalidRequest(format!(
                "no audio or video files ({}) among the paths given",
                MEDIA_EXTENSIONS.join(", ")
            ))
        }));
    }
    let left_out = found.len().saturating_sub(limit);
    let skipped = failures
        .into_iter()
        .map(|e| match e {
            RuntimeError::Io { path, source } => SkippedPath {
                path,
                reason: source.to_string(),
            },
            other => SkippedPath {
                path: PathBuf::new(),
                reason: other.to_string(),
            },
        })
        .collect();
    Ok(MediaPaths {
        files: found.into_iter().take(limit).collect(),
        skipped,
        left_out: u32::try_from(left_out).unwrap_or(u32::MAX),
    })
}

/// Adds the media files under `dir` to `found`; a folder or entry that cannot be read
/// goes to `failures` and the rest are still searched.
fn collect_dir(dir: &Path, found: &mut BTreeSet<PathBuf>, failures: &mut Vec<RuntimeError>) {
    let failed = |source| RuntimeError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return failures.push(failed(e)),
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                failures.push(failed(e));
                continue;
            }
        };
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // file_type does not follow symlinks: a linked folder could loop back.
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_dir(&path, found, failures),
            Ok(_) => {
                if is_media_file(&path) && path.is_file() {
                    found.insert(path);
                }
            }
            Err(e) => failures.push(RuntimeError::Io { path, source: e }),
        }
    }
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

impl std::str::FromStr for ExportFormat {
    type Err = String;

    /// `txt`, `srt`, `vtt` or `json`, as a shell's user types it.
    fn from_str(name: &str) -> Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "txt" => Ok(ExportFormat::Txt),
            "srt" => Ok(ExportFormat::Srt),
            "vtt" => Ok(ExportFormat::Vtt),
            "json" => Ok(ExportFormat::Json),
            _ => Err(format!("{name:?} is not a format: txt, srt, vtt or json")),
        }
    }
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

/// [`write_atomically`] to a file that must not exist: one there (or put there before
/// the write ends) is kept, and this fails with [`RuntimeError::OutputExists`].
pub fn write_new_atomically(path: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
    izwi_audio::write_new_atomically(path, bytes).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            RuntimeError::OutputExists(path.to_path_buf())
        } else {
            RuntimeError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// Whether `path` is a file with nothing in it.
pub(crate) fn is_empty_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
}

/// Removes its file when dropped, if the file is still empty: a reservation (a batch's
/// manifest, made before its first line) that nothing was written into.
pub(crate) struct RemoveIfEmpty(pub(crate) PathBuf);

impl Drop for RemoveIfEmpty {
    fn drop(&mut self) {
        if is_empty_file(&self.0) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// Refuses, before any work, an output file that could not or should not be written:
/// its folder missing, a folder at its name, a place inside the data folder (the
/// database and every job's files live there) or, unless `replace`, a file already
/// there.
pub(crate) fn check_output_file(
    data_dir: &Path,
    path: &Path,
    replace: bool,
) -> Result<(), RuntimeError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} is a folder; give a file name",
            path.display()
        )));
    }
    if let (Ok(dir), Ok(data)) = (dir.canonicalize(), data_dir.canonicalize()) {
        if dir.starts_with(&data) {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is inside Izwi's data folder ({}), which holds its database and \
                 every job's files; choose a place outside it",
                path.display(),
                data.display()
            )));
        }
    }
    if !replace && path.symlink_metadata().is_ok() {
        return Err(RuntimeError::OutputExists(path.to_path_buf()));
    }
    Ok(())
}

/// `path` made absolute against the working folder, as a job's row keeps it: a
/// relative one would mean another file to a process started elsewhere.
pub(crate) fn absolute_path(path: &Path) -> Result<PathBuf, RuntimeError> {
    std::path::absolute(path).map_err(|source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// [`absolute_path`] of a path a request may leave out.
pub(crate) fn absolute(path: Option<&Path>) -> Result<Option<PathBuf>, RuntimeError> {
    path.map(absolute_path).transpose()
}

/// The most peaks [`Runtime::audio_peaks`] returns: more than any screen is wide.
pub const MAX_PEAK_BUCKETS: usize = 100_000;

impl Runtime {
    /// Whether `path` may be written as a job's or an export's output: see what
    /// [`check_output_file`] refuses. Shells check a request's outputs with it before
    /// they start work that would end in writing them.
    pub fn check_output_file(&self, path: &Path, replace: bool) -> Result<(), RuntimeError> {
        check_output_file(self.inner.store.data_dir(), path, replace)
    }

    /// The waveform of a media file: the peak magnitude (0 to 1) of its mono mix in each
    /// of `buckets` equal spans of time. Decodes on a blocking thread, packet by packet,
    /// holding the peaks only; `cancel` stops it (a newer request for the same view).
    pub async fn audio_peaks(
        &self,
        path: &Path,
        buckets: usize,
        cancel: CancellationToken,
    ) -> Result<Vec<f32>, RuntimeError> {
        if buckets == 0 || buckets > MAX_PEAK_BUCKETS {
            return Err(RuntimeError::InvalidRequest(format!(
                "buckets must be 1 to {MAX_PEAK_BUCKETS}, not {buckets}"
            )));
        }
        let owned = path.to_path_buf();
        let stop = cancel.clone();
        let peaks = tokio::task::spawn_blocking(move || {
            izwi_audio::decode_peaks(&owned, buckets, &|| stop.is_cancelled())
        })
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("decoding stopped: {e}")))?;
        // A request replaced while it finished still gives way: its answer is stale.
        if cancel.is_cancelled() {
            return Err(RuntimeError::Superseded("the waveform"));
        }
        peaks.map_err(|source| RuntimeError::Audio {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_formats_parse_by_name() {
        assert_eq!("SRT".parse(), Ok(ExportFormat::Srt));
        assert_eq!("json".parse(), Ok(ExportFormat::Json));
        let wrong = "docx".parse::<ExportFormat>().unwrap_err();
        assert!(wrong.contains("txt, srt, vtt or json"), "{wrong}");
    }

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
        let got = expand_media_paths(&[d.to_path_buf(), single.clone()], 100).unwrap();
        assert!(got.skipped.is_empty());
        assert_eq!(got.left_out, 0);
        let names: Vec<_> = got
            .files
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
            expand_media_paths(&[&txt], 100),
            Err(RuntimeError::InvalidRequest(_))
        ));
        assert!(matches!(
            expand_media_paths(&[dir.path().join("gone.wav")], 100),
            Err(RuntimeError::Io { .. })
        ));
        assert!(expand_media_paths::<PathBuf>(&[], 100)
            .unwrap()
            .files
            .is_empty());
    }

    #[test]
    fn an_unreadable_folder_is_skipped_and_reported() {
        // A folder nested deeper than a path can name cannot be listed, even by root
        // (permissions would not stop root): build it bottom-up by renaming, so every
        // single rename names a short path.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.wav"), b"x").unwrap();
        let levels = 20;
        let short: PathBuf = std::iter::once("deep".to_string())
            .chain((1..levels).map(|_| "d".to_string()))
            .collect();
        std::fs::create_dir_all(d.join(&short)).unwrap();
        let long = "l".repeat(250);
        for depth in (1..levels).rev() {
            let parent: PathBuf = std::iter::once("deep".to_string())
                .chain((1..depth).map(|_| "d".to_string()))
                .collect();
            std::fs::rename(d.join(&parent).join("d"), d.join(&parent).join(&long)).unwrap();
        }
        let got = expand_media_paths(&[d], 100).unwrap();
        assert_eq!(got.files, [d.join("a.wav")]);
        assert_eq!(got.skipped.len(), 1, "{:?}", got.skipped);
        assert!(got.skipped[0].path.starts_with(d.join("deep")));
        assert_eq!(got.left_out, 0);
        // Alone, the unreadable folder is the error.
        assert!(expand_media_paths(&[&got.skipped[0].path], 100).is_err());
    }

    #[test]
    fn files_beyond_the_limit_are_left_out_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..7 {
            std::fs::write(dir.path().join(format!("{i}.mp3")), b"x").unwrap();
        }
        let got = expand_media_paths(&[dir.path()], 5).unwrap();
        assert_eq!(got.files.len(), 5);
        assert_eq!(got.files[4], dir.path().join("4.mp3"));
        assert_eq!(got.left_out, 2);
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
    fn export_formats_render_the_transcript() {
        let t = Transcript {
            language: Some("en".into()),
            duration: 2.0,
            segments: vec![izwi_core::transcript::Segment {
                start: 0.0,
                end: 1.5,
                text: " Hello.".into(),
                words: Vec::new(),
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
