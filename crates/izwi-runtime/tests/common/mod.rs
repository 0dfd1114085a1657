//! What the runtime's integration tests share: a runtime on a scratch folder that
//! records its events and never reaches a real hub.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::sync::{Arc, Mutex};

use izwi_runtime::{Event, Runtime, RuntimeConfig};

pub type Events = Arc<Mutex<Vec<Event>>>;

/// The config of a runtime under `dir`: data in `data/`, an empty HF cache in `hf/`,
/// and a hub endpoint nothing answers on.
pub fn config(dir: &Path) -> RuntimeConfig {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    config
}

/// A runtime with `config`, and every event it sends.
pub async fn open_recording(config: RuntimeConfig) -> (Runtime, Events) {
    let events: Events = Arc::default();
    let sink = events.clone();
    let runtime = Runtime::open(
        config,
        Arc::new(move |e: Event| sink.lock().unwrap().push(e)),
    )
    .await
    .unwrap();
    (runtime, events)
}
