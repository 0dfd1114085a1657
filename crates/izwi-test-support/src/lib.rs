//! What Izwi's tests share across crates, as a dev-dependency: a small Hugging Face hub
//! served on 127.0.0.1 ([`hub`]) and the real models and speech that
//! scripts/fetch-assets.sh puts under `.assets/` ([`asset`]), questions spoken by
//! espeak-ng ([`spoken`]), the committed tiny checkpoints and changed copies of them
//! ([`fixtures`]), a PulseAudio server with null sinks for the microphone and
//! speaker paths ([`pulse`]), the `izwi` command on a data folder of its own ([`cli`]),
//! and a running `izwi serve` ([`serve`]).

pub mod cli;
pub mod fixtures;
pub mod hub;
pub mod pulse;
pub mod serve;

use std::path::{Path, PathBuf};

/// A file or folder under the repository's `.assets/`; panics, naming the script to
/// run, when it is missing.
pub fn asset(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.assets")
        .join(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/fetch-assets.sh first",
        path.display()
    );
    path
}

/// `text` spoken by espeak-ng (American English) into the WAV file `path`; returns it.
pub fn spoken(path: &Path, text: &str) -> PathBuf {
    let status = std::process::Command::new("espeak-ng")
        .args(["-v", "en-us", "-w"])
        .arg(path)
        .arg(text)
        .status()
        .expect("espeak-ng runs (apt install espeak-ng)");
    assert!(status.success(), "espeak-ng could not say {text:?}");
    path.to_path_buf()
}

/// The Silero VAD of `.assets/` copied to `to` (`izwi_runtime::vad_path(data)`), as
/// `izwi models vad` installs it; nothing when it is there already.
pub fn install_vad(to: &Path) {
    if to.exists() {
        return;
    }
    std::fs::create_dir_all(to.parent().expect("a folder")).expect("the VAD's folder");
    std::fs::copy(asset("models/silero-vad/silero_vad_16k_op15.onnx"), to).expect("the VAD");
}

/// Waits until an event `wanted` is among those `seen` so far (a listener pushes them),
/// for at most `within`; panics listing them when it does not come.
pub async fn wait_for<E: Clone + std::fmt::Debug>(
    seen: &std::sync::Mutex<Vec<E>>,
    within: std::time::Duration,
    wanted: impl Fn(&E) -> bool,
) -> E {
    let started = std::time::Instant::now();
    loop {
        if let Some(event) = seen.lock().unwrap().iter().find(|e| wanted(e)) {
            return event.clone();
        }
        assert!(
            started.elapsed() < within,
            "waited in vain; events: {:?}",
            seen.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// jfk.wav said `times` times over into the WAV file `path` (60 times: 11 minutes, a
/// job long enough to be caught mid-way); returns it.
pub fn jfk_repeated(path: &Path, times: usize) -> PathBuf {
    let mut reader = hound::WavReader::open(asset("speech/jfk.wav")).expect("jfk.wav");
    let spec = reader.spec();
    let samples: Vec<i16> = reader
        .samples::<i16>()
        .collect::<Result<_, _>>()
        .expect("jfk.wav's samples");
    let mut writer = hound::WavWriter::create(path, spec).expect("a WAV file");
    for _ in 0..times {
        for &s in &samples {
            writer.write_sample(s).expect("written");
        }
    }
    writer.finalize().expect("written");
    path.to_path_buf()
}
