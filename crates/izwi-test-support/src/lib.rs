//! What Izwi's tests share across crates, as a dev-dependency: a small Hugging Face hub
//! served on 127.0.0.1 ([`hub`]) and the real models and speech that
//! scripts/fetch-assets.sh puts under `.assets/` ([`asset`]), and a PulseAudio server
//! with null sinks for the microphone and speaker paths ([`pulse`]).

pub mod hub;
pub mod pulse;

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
