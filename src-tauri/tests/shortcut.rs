//! The global dictation shortcut in the real app, from outside it: the app runs on an X
//! screen of the test's own (Xvfb) with a PulseAudio server of its own as the
//! microphone; the test presses Ctrl+Shift+Space through XTest as a keyboard would, plays
//! jfk.wav into the microphone, presses it again, and finds the dictation saved to the
//! history and its text on the clipboard. The app is the test build (its page is not
//! served: only its Rust side matters here). Needs Xvfb and PulseAudio
//! (`scripts/system-packages.sh --test`); says so and skips without Xvfb.

use std::ffi::CString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use izwi_core::word_errors::{word_errors, words};
use izwi_runtime::{JobDetail, JobFilter, JobStatus, NoEvents, Runtime, RuntimeConfig};
use izwi_test_support::pulse::{PulseAudio, MIC_SINK};
use izwi_test_support::{asset, install_vad};
use x11_dl::keysym::{XK_Control_L, XK_Shift_L, XK_space};
use x11_dl::xlib::Xlib;
use x11_dl::xtest::Xf86vmode as XTest;

const SAID: &str =
    "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";

/// An X server of the test's own; its display is `:N`.
struct Screen {
    server: Child,
    display: String,
}

impl Screen {
    fn start() -> Screen {
        let mut server = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb runs");
        // Xvfb writes the display number it took once it accepts clients.
        let mut number = String::new();
        BufReader::new(server.stdout.take().expect("stdout"))
            .read_line(&mut number)
            .expect("a display number");
        Screen {
            server,
            display: format!(":{}", number.trim()),
        }
    }

    /// Presses Ctrl+Shift+Space and lets go, as a keyboard would.
    fn press_shortcut(&self) {
        let xlib = Xlib::open().expect("libX11");
        let xtest = XTest::open().expect("libXtst");
        let name = CString::new(self.display.as_str()).expect("display name");
        // SAFETY: plain Xlib calls on a display this function opens and closes.
        unsafe {
            let display = (xlib.XOpenDisplay)(name.as_ptr());
            assert!(!display.is_null(), "the X screen answers");
            let keys = [XK_Control_L, XK_Shift_L, XK_space]
                .map(|k| u32::from((xlib.XKeysymToKeycode)(display, u64::from(k))));
            for key in keys {
                (xtest.XTestFakeKeyEvent)(display, key, 1, 0);
            }
            for key in keys.iter().rev() {
                (xtest.XTestFakeKeyEvent)(display, *key, 0, 0);
            }
            (xlib.XFlush)(display);
            (xlib.XCloseDisplay)(display);
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Waits until `done` holds, for at most `within`.
async fn wait_until<T>(
    within: Duration,
    what: &str,
    mut done: impl AsyncFnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = done().await {
            return value;
        }
        assert!(started.elapsed() < within, "waited in vain for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Seconds of audio a dictation's recording holds, as its header says.
fn recorded_seconds(data: &Path) -> f64 {
    let Ok(dir) = std::fs::read_dir(data.join("recordings")) else {
        return 0.0;
    };
    dir.filter_map(|e| hound::WavReader::open(e.ok()?.path()).ok())
        .map(|w| f64::from(w.duration()) / 16_000.0)
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shortcut_dictates_from_outside_the_app_to_the_clipboard() {
    if Command::new("Xvfb").arg("-help").output().is_err() {
        eprintln!("skipped: no Xvfb here (scripts/system-packages.sh --test installs it)");
        return;
    }
    let screen = Screen::start();
    let pulse = PulseAudio::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    install_vad(&izwi_runtime::vad_path(&data));
    let mut config = RuntimeConfig::new(&data);
    config.hf_cache_dir = Some(dir.path().join("hf"));
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    // What the shortcut dictates with: the default transcription model.
    let tiny = runtime
        .import_model(&asset("models/whisper-tiny.en"), None)
        .unwrap()
        .id;
    runtime
        .set_default_transcribe_model(Some(tiny.as_str()))
        .await
        .unwrap();

    let mut app = Command::new(env!("CARGO_BIN_EXE_izwi-desktop"))
        .env("DISPLAY", &screen.display)
        .env("IZWI_DATA_DIR", &data)
        .env("HF_HOME", dir.path().join("hf"))
        .env("RUST_LOG", "info")
        .envs(pulse.env())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the app runs");
    let mut log = BufReader::new(app.stdout.take().unwrap()).lines();
    loop {
        let line = log.next().expect("the app says it listens").unwrap();
        assert!(!line.contains("is not listened for"), "{line}");
        if line.contains("listening for the dictation shortcut") {
            break;
        }
    }
    std::thread::spawn(move || log.for_each(|l| eprintln!("app: {}", l.unwrap_or_default())));

    screen.press_shortcut();
    // Dictating: the recording grows.
    wait_until(Duration::from_secs(60), "the recording", async || {
        (recorded_seconds(&data) > 0.5).then_some(())
    })
    .await;
    let played = tokio::task::spawn_blocking(move || {
        pulse.play(MIC_SINK, &asset("speech/jfk.wav"));
        pulse
    });
    let _pulse = played.await.unwrap();
    screen.press_shortcut();

    let job = wait_until(Duration::from_secs(60), "the saved dictation", async || {
        let jobs = runtime.jobs(&JobFilter::default()).await.ok()?;
        jobs.into_iter().find(|j| j.status.is_finished())
    })
    .await;
    assert_eq!(job.status, JobStatus::Done, "{job:?}");
    let JobDetail::Transcript(detail) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("a transcription job")
    };
    let text: Vec<&str> = detail.segments.iter().map(|s| s.text.as_str()).collect();
    let text = text.join(" ");
    let errors = word_errors(&words(SAID), &words(&text));
    assert!(errors <= 2, "{errors} errors: {text}");

    // The text is on the clipboard (the app holds it: read while it runs).
    std::env::set_var("DISPLAY", &screen.display);
    let clipboard = wait_until(Duration::from_secs(10), "the clipboard", async || {
        arboard::Clipboard::new()
            .ok()?
            .get_text()
            .ok()
            .filter(|t| !t.is_empty())
    })
    .await;
    assert_eq!(clipboard, text);

    let _ = app.kill();
    let _ = app.wait();
}
