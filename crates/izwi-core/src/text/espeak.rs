//! Phonemes from espeak-ng, run as a separate program: espeak-ng is GPL and Izwi is
//! MIT OR Apache-2.0, so Izwi never links it. One process phonemizes a whole batch of
//! clauses: they go in separated by blank lines, which espeak-ng answers with blank
//! lines, so each clause's phonemes come back in order (espeak-ng may break a clause
//! into several lines; they are joined).
//!
//! A run is bounded: espeak-ng is killed when it takes longer than its timeout, or at
//! once when its [`StopFlag`] is raised (a cancelled job), so no espeak-ng outlives the
//! work that started it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum EspeakError {
    #[error(
        "espeak-ng is not installed; Izwi runs it to turn text into the phonemes Piper voices speak. \
         Install it (Debian and Ubuntu: `sudo apt install espeak-ng`; Fedora: `sudo dnf install \
         espeak-ng`; macOS: `brew install espeak-ng`; Windows: the installer from \
         https://github.com/espeak-ng/espeak-ng/releases) or set IZWI_ESPEAK_NG to the program's path"
    )]
    NotInstalled,
    #[error("espeak-ng ({program}) could not be run: {source}")]
    Run {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("espeak-ng has no voice {voice:?} (the voice's config asks for it)")]
    UnknownVoice { voice: String },
    #[error("espeak-ng failed: {0}")]
    Failed(String),
    #[error(
        "espeak-ng ({program}) gave no answer within {} seconds and was stopped",
        timeout.as_secs_f64()
    )]
    TimedOut { program: PathBuf, timeout: Duration },
    #[error("espeak-ng was stopped")]
    Stopped,
}

/// How long one espeak-ng run may take. A run phonemizes a bounded batch of clauses,
/// which takes espeak-ng well under a second; one that takes this long has hung.
pub const ESPEAK_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a running espeak-ng is checked for its end, its timeout and a stop.
const POLL: Duration = Duration::from_millis(10);

/// Stops every espeak-ng run of the [`Espeak`] (and its clones) it was given to, now
/// and later: raise it from any thread when the work is no longer wanted.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The espeak-ng program.
#[derive(Debug, Clone)]
pub struct Espeak {
    program: PathBuf,
    /// Its `espeak-ng-data`, when it is a copy bundled with the app rather than the
    /// system's (which finds its own).
    data: Option<PathBuf>,
    timeout: Duration,
    stop: StopFlag,
}

/// The environment variable that names the espeak-ng program to use.
pub const ESPEAK_ENV: &str = "IZWI_ESPEAK_NG";

impl Espeak {
    /// Finds espeak-ng: `IZWI_ESPEAK_NG`, then beside the running program (where a
    /// release bundle puts it, with `espeak-ng-data` beside it), then on `PATH`.
    pub fn find() -> Result<Espeak, EspeakError> {
        if let Some(path) = std::env::var_os(ESPEAK_ENV) {
            let path = PathBuf::from(path);
            return if path.is_file() {
                Ok(Espeak::at(path))
            } else {
                Err(EspeakError::NotInstalled)
            };
        }
        let name = format!("espeak-ng{}", std::env::consts::EXE_SUFFIX);
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
            .filter(|p| p.is_file());
        if let Some(program) = beside {
            let data = program.with_file_name("espeak-ng-data");
            return Ok(Espeak {
                data: data.is_dir().then_some(data),
                ..Espeak::at(program)
            });
        }
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
            .map(|dir| dir.join(&name))
            .find(|p| p.is_file())
            .map(Espeak::at)
            .ok_or(EspeakError::NotInstalled)
    }

    pub fn at(program: impl Into<PathBuf>) -> Espeak {
        Espeak {
            program: program.into(),
            data: None,
            timeout: ESPEAK_TIMEOUT,
            stop: StopFlag::default(),
        }
    }

    /// The same program with another bound on one run.
    pub fn with_timeout(self, timeout: Duration) -> Espeak {
        Espeak { timeout, ..self }
    }

    /// The same program, its runs killed once `stop` is raised.
    pub fn with_stop(self, stop: StopFlag) -> Espeak {
        Espeak { stop, ..self }
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The IPA phonemes of each clause in espeak-ng's `voice` (`en-us`, `de`, ...),
    /// with espeak-ng's language-switch marks such as `(en)` removed. A clause with no
    /// letters or digits gets an empty string.
    pub fn phonemize(&self, voice: &str, clauses: &[&str]) -> Result<Vec<String>, EspeakError> {
        let cleaned: Vec<String> = clauses
            .iter()
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let spoken: Vec<usize> = (0..cleaned.len())
            .filter(|&i| cleaned[i].chars().any(char::is_alphanumeric))
            .collect();
        let mut out = vec![String::new(); clauses.len()];
        if spoken.is_empty() {
            return Ok(out);
        }
        let input: Vec<&str> = spoken.iter().map(|&i| cleaned[i].as_str()).collect();
        let groups = self.run(voice, &input.join("\n\n"))?;
        if groups.len() == spoken.len() {
            for (&i, phonemes) in spoken.iter().zip(groups) {
                out[i] = phonemes;
            }
        } else {
            // Some text made espeak-ng print a blank line of its own: fall back to a
            // process per clause, slower but unambiguous.
            tracing::debug!(
                clauses = spoken.len(),
                groups = groups.len(),
                "espeak-ng output did not align; phonemizing clause by clause"
            );
            for &i in &spoken {
                out[i] = self.run(voice, &cleaned[i])?.join(" ");
            }
        }
        Ok(out)
    }

    /// Runs espeak-ng on `text`; returns its output's groups of non-blank lines, each
    /// group's lines joined by a space.
    fn run(&self, voice: &str, text: &str) -> Result<Vec<String>, EspeakError> {
        let run_error = |source| EspeakError::Run {
            program: self.program.clone(),
            source,
        };
        let mut command = Command::new(&self.program);
        if let Some(data) = &self.data {
            command.env("ESPEAK_DATA_PATH", data);
        }
        let mut child = command
            .args(["-q", "--ipa", "-b", "1", "-v", voice])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => EspeakError::NotInstalled,
                _ => run_error(e),
            })?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // Written and read from other threads: espeak-ng answers as it reads, and a
        // full pipe would otherwise stop both sides.
        let input = format!("{text}\n");
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let stdout = read_all(child.stdout.take().expect("stdout is piped"));
        let stderr = read_all(child.stderr.take().expect("stderr is piped"));
        let status = self.wait(&mut child);
        // Once the process is gone its pipes are closed, so these threads end.
        let written = writer.join().unwrap_or(Ok(()));
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        let status = status?;
        let stdout = String::from_utf8_lossy(&stdout);
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr);
            let message = format!("{} {}", stdout.trim(), stderr.trim());
            if message.contains("voice does not exist") {
                return Err(EspeakError::UnknownVoice {
                    voice: voice.to_owned(),
                });
            }
            return Err(EspeakError::Failed(format!(
                "exit {status}: {}",
                message.trim()
            )));
        }
        written.map_err(run_error)?;
        let mut groups = Vec::new();
        let mut current: Vec<String> = Vec::new();
        for line in stdout.lines() {
            let line = strip_language_marks(line.trim());
            if line.is_empty() {
                if !current.is_empty() {
                    groups.push(current.join(" "));
                    current.clear();
                }
            } else {
                current.push(line);
            }
        }
        if !current.is_empty() {
            groups.push(current.join(" "));
        }
        Ok(groups)
    }
}

impl Espeak {
    /// Waits for `child` to exit; kills it (and reaps it) at the timeout or a stop.
    fn wait(&self, child: &mut Child) -> Result<std::process::ExitStatus, EspeakError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let status = child.try_wait().map_err(|source| EspeakError::Run {
                program: self.program.clone(),
                source,
            })?;
            if let Some(status) = status {
                return Ok(status);
            }
            let error = if self.stop.is_stopped() {
                EspeakError::Stopped
            } else if Instant::now() >= deadline {
                EspeakError::TimedOut {
                    program: self.program.clone(),
                    timeout: self.timeout,
                }
            } else {
                std::thread::sleep(POLL);
                continue;
            };
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    }
}

fn read_all(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        bytes
    })
}

/// Drops espeak-ng's `(en)`-style marks around words it reads in another language.
fn strip_language_marks(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut depth = 0usize;
    for c in line.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_marks_are_removed() {
        assert_eq!(strip_language_marks("ɛlˈo (en)wˈɜːld(fr)"), "ɛlˈo wˈɜːld");
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let espeak = Espeak::at("/nonexistent/espeak-ng");
        let err = espeak.phonemize("en-us", &["hello"]).unwrap_err();
        assert!(matches!(err, EspeakError::NotInstalled), "{err}");
        assert!(err.to_string().contains("apt install espeak-ng"));
        // Nothing to say needs no program.
        assert_eq!(espeak.phonemize("en-us", &["...", ""]).unwrap(), ["", ""]);
    }

    /// A stand-in espeak-ng that never answers; it writes its pid to `pid` first.
    #[cfg(unix)]
    fn hanging_program(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("espeak-ng");
        let script = format!(
            "#!/bin/sh\necho $$ > '{}'\nexec sleep 600\n",
            dir.join("pid").display()
        );
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        program
    }

    #[cfg(unix)]
    fn pid_of(dir: &Path) -> String {
        loop {
            if let Ok(pid) = std::fs::read_to_string(dir.join("pid")) {
                if !pid.trim().is_empty() {
                    return pid.trim().to_owned();
                }
            }
            std::thread::sleep(POLL);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_hung_espeak_is_killed_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let espeak =
            Espeak::at(hanging_program(dir.path())).with_timeout(Duration::from_secs(2));
        let err = espeak.phonemize("en-us", &["hello"]).unwrap_err();
        assert!(matches!(err, EspeakError::TimedOut { .. }), "{err}");
        assert!(err.to_string().contains("gave no answer"), "{err}");
        let pid = pid_of(dir.path());
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} lives");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stop_kills_a_running_espeak() {
        let dir = tempfile::tempdir().unwrap();
        let stop = StopFlag::default();
        let espeak = Espeak::at(hanging_program(dir.path())).with_stop(stop.clone());
        let run = std::thread::spawn(move || espeak.phonemize("en-us", &["hello"]));
        let pid = pid_of(dir.path());
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        stop.stop();
        let err = run.join().unwrap().unwrap_err();
        assert!(matches!(err, EspeakError::Stopped), "{err}");
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} lives");
    }
}
