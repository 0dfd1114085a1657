//! Izwi uses the cache other tools use: `HF_HOME/hub`. (Its own test binary: it sets a
//! process-wide variable.)

use izwi_hub::{Hub, HubConfig};

#[test]
fn hf_home_decides_where_models_live() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("HF_HOME", dir.path());
    let hub = Hub::new(HubConfig::new(dir.path().join("models")));
    assert_eq!(hub.cache_dir(), dir.path().join("hub"));
}
