//! Settings → Backend: the remote server's address and key remembered, the key kept
//! when the same server is saved again without one, and never given back to the UI.

use std::path::Path;
use std::sync::Arc;

use izwi_desktop::state::AppState;
use izwi_runtime::{NoEvents, RemoteInfo, RemoteSettings, Runtime, RuntimeConfig, REMOTE_BACKEND};

async fn state(dir: &Path) -> AppState {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    AppState::new(runtime, Arc::default(), vec![], Box::new(|_| {}))
}

#[tokio::test]
async fn the_backend_is_remembered_and_its_key_kept_but_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    assert_eq!(state.remote_backend().await.unwrap(), None);

    let url = "http://gpu-box:8000/v1";
    let shown = state
        .set_remote_backend(Some(format!("{url}/")), Some("sk-secret".into()))
        .await
        .unwrap();
    let remote = Some(RemoteInfo {
        url: url.into(),
        has_key: true,
    });
    assert_eq!(shown, remote);
    assert_eq!(state.runtime.remote_backend(), remote, "in use at once");
    assert!(!serde_json::to_string(&shown).unwrap().contains("sk-secret"));

    // Saved again without a key: the same server keeps it, another gets none.
    let shown = state
        .set_remote_backend(Some(url.into()), Some(String::new()))
        .await;
    assert_eq!(shown.unwrap(), remote);
    let stored: RemoteSettings = state
        .runtime
        .setting(REMOTE_BACKEND)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.api_key.as_deref(), Some("sk-secret"));
    let other = state
        .set_remote_backend(Some("http://other:8000/v1".into()), None)
        .await
        .unwrap()
        .unwrap();
    assert!(!other.has_key);

    let error = state
        .set_remote_backend(Some("gpu-box".into()), None)
        .await
        .unwrap_err();
    assert!(
        error.message.contains("not a server's address"),
        "{}",
        error.message
    );

    assert_eq!(state.set_remote_backend(None, None).await.unwrap(), None);
    assert_eq!(state.runtime.remote_backend(), None);
}
