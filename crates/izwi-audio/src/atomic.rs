//! Replacing a file all at once: the new content goes to a temporary file beside the
//! target (a random name, created exclusively, so a planted symlink or an old temp is
//! never followed), is flushed to disk, then renamed over the target. The target holds
//! either its old content or all of the new, never a part. A target that did not
//! exist when the writing began is never replaced: a file put there meanwhile (by the
//! user, by another program) stays, and the commit fails.
//!
//! This is the one atomic file writer of the workspace: the WAV writer here, the
//! runtime's exports, manifests and saved speech all use it. It lives in izwi-audio
//! because that is the lowest Izwi crate (it depends on no other) and it is light
//! (no candle): every crate that writes files can depend on it without pulling in the
//! engine.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// A file being written under a temporary name until [`AtomicFile::commit`] puts it
/// in place. Dropped without a commit, the temporary file is removed and the target is
/// untouched.
#[derive(Debug)]
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
    /// Whether the target existed when the writing began (only then is it replaced).
    replaces: bool,
}

impl AtomicFile {
    /// Starts writing `target`. The folder must exist. When `target` exists, the new
    /// file gets its permissions; a new file gets the usual ones (0666 less the umask),
    /// not the temporary file's private 0600.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name")
        })?;
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        let prefix = format!(".{}.", name.to_string_lossy());
        builder.prefix(&prefix).suffix(".tmp");
        let existing = std::fs::metadata(target).ok().filter(|m| m.is_file());
        #[cfg(unix)]
        if existing.is_none() {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder.tempfile_in(dir)?;
        if let Some(meta) = &existing {
            // Set on the open file, not at creation, so the umask does not narrow them.
            temp.as_file().set_permissions(meta.permissions())?;
        }
        Ok(AtomicFile {
            temp,
            target: target.to_path_buf(),
            replaces: existing.is_some(),
        })
    }

    /// Starts writing `target`, a file that must not exist now or at the commit: for
    /// an output the user did not ask to replace.
    pub fn create_new(target: &Path) -> io::Result<AtomicFile> {
        if target.symlink_metadata().is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", target.display()),
            ));
        }
        let file = AtomicFile::create(target)?;
        Ok(AtomicFile {
            replaces: false,
            ..file
        })
    }

    /// The temporary file, to write (and seek) in.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Flushes the content to disk and renames it over the target, then flushes the
    /// folder so the new name survives a power cut. A target that appeared after
    /// [`AtomicFile::create`] is left as it is: the commit fails with
    /// [`io::ErrorKind::AlreadyExists`] and the new content is dropped.
    pub fn commit(self) -> io::Result<()> {
        // On disk before the rename, so the name never points at unwritten data.
        self.temp.as_file().sync_all()?;
        let persisted = if self.replaces {
            self.temp.persist(&self.target)
        } else {
            match self.temp.persist_noclobber(&self.target) {
                // Some filesystems (FAT, exFAT, network shares) can neither rename
                // without replacing nor link: there a plain rename puts a new file in
                // place, once the target is seen still missing.
                Err(e)
                    if e.error.kind() != io::ErrorKind::AlreadyExists
                        && self.target.symlink_metadata().is_err() =>
                {
                    e.file.persist(&self.target)
                }
                done => done,
            }
        };
        persisted.map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} appeared while it was being written; it was left as it is",
                    self.target.display()
                ),
            ),
            _ => e.error,
        })?;
        // The file is in place: a folder that cannot be flushed (not readable, an odd
        // filesystem) does not make the write a failure.
        if let Err(error) = sync_folder(&self.target) {
            tracing::warn!(path = %self.target.display(), %error, "could not flush the folder");
        }
        Ok(())
    }
}

/// Flushes the folder holding `path`, where a rename is recorded (Unix; Windows has no
/// handle on a folder to flush).
fn sync_folder(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Writes `bytes` to `path` atomically (see the module docs).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.file().write_all(bytes)?;
    file.commit()
}

/// [`write_atomically`] to a file that must not exist: one already there, or put
/// there before the commit, is kept and this fails.
pub fn write_new_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create_new(path)?;
    file.file().write_all(bytes)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.srt");
        std::fs::write(&path, "old content that is longer").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Not committed: nothing changes, nothing is left.
        let mut file = AtomicFile::create(&path).unwrap();
        file.file().write_all(b"half").unwrap();
        drop(file);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write_atomically(&dir.path().join("no/such/dir/x"), b"x").is_err());
    }

    /// The writer this replaced used `.<name>.<pid>.tmp`: a symlink planted there sent
    /// the new content into whatever it pointed at.
    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_old_temp_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let path = dir.path().join("out.txt");
        let planted = dir
            .path()
            .join(format!(".out.txt.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(planted.symlink_metadata().unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_file_that_appears_while_writing_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.wav");
        let mut file = AtomicFile::create(&path).unwrap();
        file.file().write_all(b"ours").unwrap();
        std::fs::write(&path, "the user's").unwrap();
        let err = file.commit().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("out.wav appeared"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "the user's");
        // The temporary file went with the failed commit.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_new_file_never_replaces_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "mine").unwrap();
        let err = write_new_atomically(&path, b"new").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        let fresh = dir.path().join("fresh.txt");
        write_new_atomically(&fresh, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.txt");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
}
