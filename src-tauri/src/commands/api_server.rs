//! The OpenAI-compatible API (izwi-server, as `izwi serve` runs it) started and stopped
//! from Settings, in the app's own process and on its runtime: programs on this machine
//! use the app's models while it is open. Where it listens and its key are remembered
//! in the app's settings.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use izwi_server::{ServeError, ServerConfig};
use serde::{Deserialize, Serialize};
use tauri::State;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{AppError, AppResult};
use crate::state::AppState;

/// The setting holding [`ApiServerSettings`].
pub const API_SERVER: &str = "api_server";

/// How long stopping waits for the requests under way before it lets them finish on
/// their own (the listener is closed at once either way).
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Where the API listens and the key it asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct ApiServerSettings {
    /// An IP address: 127.0.0.1 (this machine only) unless another is chosen, which
    /// needs a key.
    pub host: String,
    pub port: u16,
    /// Required from clients as `Authorization: Bearer KEY` when set.
    pub api_key: Option<String>,
}

impl Default for ApiServerSettings {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 8080,
            api_key: None,
        }
    }
}

/// The remembered settings, and whether the server runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct ApiServerStatus {
    pub settings: ApiServerSettings,
    /// The API's base URL while it runs (`http://127.0.0.1:8080/v1`); None when stopped.
    pub url: Option<String>,
}

/// The server while it runs.
pub(crate) struct RunningServer {
    url: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServeError>>,
}

pub(crate) type ApiServerSlot = tokio::sync::Mutex<Option<RunningServer>>;

impl AppState {
    pub async fn api_server_status(&self) -> AppResult<ApiServerStatus> {
        let mut running = self.api_server.lock().await;
        // A server that stopped by itself (its listener failed) no longer runs.
        if running.as_ref().is_some_and(|r| r.task.is_finished()) {
            *running = None;
        }
        Ok(ApiServerStatus {
            settings: self.api_server_settings().await?,
            url: running.as_ref().map(|r| r.url.clone()),
        })
    }

    /// Remembers `settings` and starts the API with them; an address that cannot be
    /// listened on (a port in use) is the error, and nothing runs.
    pub async fn start_api_server(
        &self,
        settings: ApiServerSettings,
    ) -> AppResult<ApiServerStatus> {
        let host: IpAddr = settings.host.trim().parse().map_err(|_| {
            AppError::invalid(format!(
                "{:?} is not an IP address: 127.0.0.1 is this machine only",
                settings.host
            ))
        })?;
        if !host.is_loopback()
            && settings
                .api_key
                .as_deref()
                .is_none_or(|k| k.trim().is_empty())
        {
            return Err(AppError::invalid(format!(
                "{host} can be reached from other machines: set an API key to listen there"
            )));
        }
        let settings = ApiServerSettings {
            host: host.to_string(),
            api_key: settings.api_key.filter(|k| !k.trim().is_empty()),
            ..settings
        };
        let mut running = self.api_server.lock().await;
        if let Some(server) = running.as_ref().filter(|r| !r.task.is_finished()) {
            return Err(AppError::invalid(format!(
                "the API is already running at {}: stop it first",
                server.url
            )));
        }
        self.runtime.set_setting(API_SERVER, &settings).await?;
        let config = ServerConfig {
            addr: SocketAddr::new(host, settings.port),
            api_key: settings.api_key.clone(),
            allowed_origins: Vec::new(),
            max_requests: izwi_server::MAX_CONCURRENT_REQUESTS,
            request_timeout: Some(izwi_server::DEFAULT_REQUEST_TIMEOUT),
        };
        let (bound_tx, bound) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(izwi_server::serve(
            Arc::new(self.runtime.clone()),
            self.api_events.clone(),
            config,
            move |addr| {
                let _ = bound_tx.send(addr);
            },
            async move {
                let _ = stopped.await;
            },
        ));
        let addr = match bound.await {
            Ok(addr) => addr,
            // It ended before listening: why is the task's answer.
            Err(_) => {
                return Err(match task.await {
                    Ok(Err(e)) => AppError::invalid(e.to_string()),
                    Ok(Ok(())) => AppError::internal("the API stopped as it started"),
                    Err(e) => AppError::internal(format!("the API stopped: {e}")),
                })
            }
        };
        let url = format!("http://{addr}/v1");
        tracing::info!(%url, "the API is listening");
        *running = Some(RunningServer { url, stop, task });
        drop(running);
        self.api_server_status().await
    }

    /// Stops the API: it listens no more at once; requests under way are let finish.
    pub async fn stop_api_server(&self) -> AppResult<ApiServerStatus> {
        let server = self.api_server.lock().await.take();
        if let Some(server) = server {
            let _ = server.stop.send(());
            if let Ok(Ok(Err(e))) = tokio::time::timeout(STOP_WAIT, server.task).await {
                tracing::warn!(error = %e, "the API stopped with an error");
            }
            tracing::info!(url = server.url, "the API stopped");
        }
        self.api_server_status().await
    }

    async fn api_server_settings(&self) -> AppResult<ApiServerSettings> {
        // Settings this build cannot read are the defaults.
        Ok(self
            .runtime
            .setting(API_SERVER)
            .await
            .ok()
            .flatten()
            .unwrap_or_default())
    }
}

#[tauri::command]
#[specta::specta]
pub async fn get_api_server(state: State<'_, AppState>) -> AppResult<ApiServerStatus> {
    state.api_server_status().await
}

#[tauri::command]
#[specta::specta]
pub async fn start_api_server(
    state: State<'_, AppState>,
    settings: ApiServerSettings,
) -> AppResult<ApiServerStatus> {
    state.start_api_server(settings).await
}

#[tauri::command]
#[specta::specta]
pub async fn stop_api_server(state: State<'_, AppState>) -> AppResult<ApiServerStatus> {
    state.stop_api_server().await
}
