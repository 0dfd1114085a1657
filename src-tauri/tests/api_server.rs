//! The API started and stopped from Settings: in the app's process, answering on
//! 127.0.0.1 while it runs, its settings remembered, a port in use said plainly.

use std::path::Path;
use std::sync::Arc;

use izwi_desktop::commands::api_server::ApiServerSettings;
use izwi_desktop::error::ErrorKind;
use izwi_desktop::state::AppState;
use izwi_runtime::{NoEvents, Runtime, RuntimeConfig};

async fn state(dir: &Path) -> AppState {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    AppState::new(runtime, Arc::default(), vec![], Box::new(|_| {}))
}

fn on_port(port: u16) -> ApiServerSettings {
    ApiServerSettings {
        port,
        ..ApiServerSettings::default()
    }
}

#[tokio::test]
async fn the_api_starts_answers_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    let status = state.api_server_status().await.unwrap();
    assert_eq!(status.url, None);
    assert_eq!(status.settings, ApiServerSettings::default());
    assert_eq!(status.settings.host, "127.0.0.1");

    let status = state
        .start_api_server(ApiServerSettings {
            api_key: Some("s3cret".into()),
            ..on_port(0)
        })
        .await
        .unwrap();
    let url = status.url.expect("it runs");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let client = reqwest::Client::new();
    let models: serde_json::Value = client
        .get(format!("{url}/models"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list", "{models}");
    let unauthorized = client.get(format!("{url}/models")).send().await.unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401);

    let again = state.start_api_server(on_port(0)).await.unwrap_err();
    assert_eq!(again.kind, ErrorKind::Invalid);
    assert!(
        again.message.contains("already running"),
        "{}",
        again.message
    );

    let status = state.stop_api_server().await.unwrap();
    assert_eq!(status.url, None);
    assert!(
        client.get(format!("{url}/models")).send().await.is_err(),
        "nothing listens once stopped"
    );
    // Remembered, key and all, for the next start.
    assert_eq!(status.settings.api_key.as_deref(), Some("s3cret"));
}

#[tokio::test]
async fn a_port_in_use_or_an_open_address_without_a_key_is_refused_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let err = state.start_api_server(on_port(port)).await.unwrap_err();
    assert!(
        err.message
            .contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        err.message
    );
    assert_eq!(state.api_server_status().await.unwrap().url, None);

    let err = state
        .start_api_server(ApiServerSettings {
            host: "0.0.0.0".into(),
            ..on_port(0)
        })
        .await
        .unwrap_err();
    assert!(err.message.contains("set an API key"), "{}", err.message);
    let err = state
        .start_api_server(ApiServerSettings {
            host: "my laptop".into(),
            ..on_port(0)
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Invalid);
    assert!(err.message.contains("not an IP address"), "{}", err.message);
}
