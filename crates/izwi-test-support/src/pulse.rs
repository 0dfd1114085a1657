//! A PulseAudio server of the test's own, with two null sinks: `izwi_mic`, whose monitor
//! is the default source (what is played into it is what the "microphone" captures, in
//! real time), and `izwi_out`, the default sink (what is played is captured from its
//! monitor). ALSA's `default` device goes to PulseAudio while one runs (Debian's
//! libasound2-plugins), so cpal reaches these sinks through its ALSA host. Programs see
//! this server through [`PulseAudio::env`]; the machine's own sound is untouched.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const MIC_SINK: &str = "izwi_mic";
pub const OUT_SINK: &str = "izwi_out";

pub struct PulseAudio {
    dir: tempfile::TempDir,
    daemon: Child,
}

impl PulseAudio {
    /// Starts the server and waits until it answers; panics, naming the packages, when
    /// PulseAudio is not installed.
    pub fn start() -> PulseAudio {
        let dir = tempfile::Builder::new()
            .prefix("izwi-pulse")
            .tempdir()
            .expect("a folder for PulseAudio");
        let mut command = Command::new("pulseaudio");
        command
            .args([
                "--daemonize=no",
                "--exit-idle-time=-1",
                // A test server needs no real-time priority (as root it would take it).
                "--realtime=no",
                "--high-priority=no",
                "-n",
                "--load=module-native-protocol-unix auth-anonymous=1",
                &format!("--load=module-null-sink sink_name={MIC_SINK}"),
                &format!("--load=module-null-sink sink_name={OUT_SINK}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut pulse = PulseAudio {
            daemon: with_env(&mut command, dir.path()).spawn().expect(
                "pulseaudio runs (apt install pulseaudio pulseaudio-utils libasound2-plugins)",
            ),
            dir,
        };
        let started = Instant::now();
        while !pulse.pactl(&["info"]) {
            if let Ok(Some(status)) = pulse.daemon.try_wait() {
                panic!("pulseaudio exited: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "pulseaudio did not answer"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(pulse.pactl(&["set-default-source", &format!("{MIC_SINK}.monitor")]));
        assert!(pulse.pactl(&["set-default-sink", OUT_SINK]));
        pulse
    }

    /// What a program needs in its environment to use this server.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("XDG_RUNTIME_DIR", self.dir.path().into()),
            ("PULSE_RUNTIME_PATH", self.dir.path().join("pulse").into()),
        ]
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        with_env(&mut command, self.dir.path());
        command
    }

    fn pactl(&self, args: &[&str]) -> bool {
        self.command("pactl")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Plays a WAV file into `sink`, in real time; returns when it has played.
    pub fn play(&self, sink: &str, wav: &Path) {
        let status = self
            .command("paplay")
            .arg("-d")
            .arg(sink)
            .arg(wav)
            .status()
            .expect("paplay runs");
        assert!(status.success(), "paplay failed");
    }

    /// Starts recording what plays on `sink` into a WAV file, until [`Recording::finish`].
    pub fn record(&self, sink: &str, wav: &Path) -> Recording {
        Recording(
            self.command("parecord")
                .arg("-d")
                .arg(format!("{sink}.monitor"))
                .arg("--file-format=wav")
                .arg(wav)
                .spawn()
                .expect("parecord runs"),
        )
    }
}

/// A running `parecord`.
pub struct Recording(Child);

impl Recording {
    /// Stops the recording the way Ctrl-C would, so the WAV header is completed.
    pub fn finish(mut self) {
        let status = Command::new("kill")
            .arg("-INT")
            .arg(self.0.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
        let _ = self.0.wait();
    }
}

fn with_env<'a>(command: &'a mut Command, dir: &Path) -> &'a mut Command {
    command
        .env("XDG_RUNTIME_DIR", dir)
        .env("PULSE_RUNTIME_PATH", dir.join("pulse"))
        .env("HOME", dir)
}

impl Drop for PulseAudio {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
