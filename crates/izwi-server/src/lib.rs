//! Izwi's OpenAI-compatible HTTP API, served by `izwi serve`: other programs (editors,
//! scripts, agents) that speak OpenAI's audio and chat API use Izwi's local models
//! through it. Each handler parses the request, calls izwi-runtime and shapes the answer
//! as OpenAI does; transcriptions and speech are jobs in the history like the app's.
//!
//! Safe by default (see [`guard`]): it binds 127.0.0.1, answers only requests addressed
//! to the address it is bound to and none from a web page of another origin, needs an API
//! key when bound anywhere else, limits uploads, and refuses work beyond a bounded number
//! of requests at once (429) instead of queueing without end.

mod chat;
mod deadline;
mod error;
mod events;
mod guard;
mod job;
mod models;
mod request_voice;
mod speech;
mod transcript_stream;
mod transcriptions;
mod voices;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use izwi_runtime::Runtime;
use tokio::sync::Semaphore;

pub use error::ApiError;
pub use events::ServerEvents;
pub use guard::Access;
use guard::Limits;

/// Largest audio upload, as OpenAI's own limit.
pub const MAX_UPLOAD_BYTES: usize = 25 * 1024 * 1024;
/// How long a request may take unless configured otherwise: ten minutes, as the
/// `openai` clients wait by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Requests served at once unless configured otherwise; more are refused with 429 (the
/// engine batches those it has).
pub const MAX_CONCURRENT_REQUESTS: usize = 64;

/// How the server is reached and who may use it.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub addr: SocketAddr,
    /// Required as `Authorization: Bearer KEY` when set; must be set to bind beyond
    /// loopback.
    pub api_key: Option<String>,
    /// Web page origins (`http://localhost:5173`) allowed to call the API from a browser.
    pub allowed_origins: Vec<String>,
    /// Requests served at once (a streamed answer counts until it is sent).
    pub max_requests: usize,
    /// How long a request may take, streamed answer included; None: as long as it needs.
    pub request_timeout: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0} is reachable from other machines: give an API key (--api-key) to bind there")]
    NeedsKey(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub runtime: Arc<Runtime>,
    pub events: Arc<ServerEvents>,
}

/// The API's routes over `runtime`, whose events go to `events`, with `access`'s
/// checks and `config`'s limits in front of them.
fn router(
    runtime: Arc<Runtime>,
    events: Arc<ServerEvents>,
    access: Access,
    config: &ServerConfig,
) -> Router {
    let state = AppState { runtime, events };
    let limits = Limits {
        busy: Arc::new(Semaphore::new(config.max_requests)),
        timeout: config.request_timeout,
    };
    Router::new()
        .route("/v1/models", get(models::list))
        .route("/v1/models/{*id}", get(models::retrieve))
        .route("/v1/audio/transcriptions", post(transcriptions::transcribe))
        .route("/v1/audio/translations", post(transcriptions::translate))
        .route("/v1/audio/speech", post(speech::speak))
        .route("/v1/audio/voices", get(voices::list).post(voices::create))
        .route("/v1/chat/completions", post(chat::complete))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        // The upload, and room for the form's other fields and its boundaries.
        .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES + 64 * 1024))
        .layer(axum::middleware::from_fn(move |request, next| {
            guard::check(access.clone(), limits.clone(), request, next)
        }))
        .with_state(state)
}

/// Serves the API on `config.addr` until `shutdown` resolves; returns the address it
/// listened on once bound through `bound` (port 0 picks a free port). `runtime` must
/// have been opened with `events` as its event sink.
pub async fn serve(
    runtime: Arc<Runtime>,
    events: Arc<ServerEvents>,
    config: ServerConfig,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    if !config.addr.ip().is_loopback() && config.api_key.is_none() {
        return Err(ServeError::NeedsKey(config.addr));
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.addr,
            source,
        })?;
    let addr = listener.local_addr()?;
    let access = Access::new(addr, config.api_key.clone(), config.allowed_origins.clone());
    bound(addr);
    axum::serve(listener, router(runtime, events, access, &config))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
