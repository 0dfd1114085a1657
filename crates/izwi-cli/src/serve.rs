//! `izwi serve`: Izwi's OpenAI-compatible API (crates/izwi-server) until Ctrl+C or
//! SIGTERM.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use izwi_core::engine::BatchStrategy;
use izwi_runtime::{BackendChoice, RuntimeConfig};
use izwi_server::{ServerConfig, ServerEvents};

#[derive(Args)]
pub struct ServeArgs {
    /// The address to listen on. Anything but a loopback address needs --api-key.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Required from clients as `Authorization: Bearer KEY`.
    #[arg(long, env = "IZWI_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// A web page origin (e.g. http://localhost:5173) allowed to call the API from a
    /// browser; give it again for more. Pages of any other origin are refused.
    #[arg(long = "allow-origin")]
    allow_origins: Vec<String>,
    /// Requests served at once; more are answered 429 (busy) at once.
    #[arg(long, default_value_t = izwi_server::MAX_CONCURRENT_REQUESTS as u32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    max_requests: u32,
    /// Jobs (transcriptions, speech) run at once; the engine batches their work, the
    /// rest wait their turn.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    max_jobs: u32,
    /// How each engine step is shared between decoding running requests and reading
    /// new ones: decode-maximal, prefill-priority or balanced (default: each model's own,
    /// docs/engine.md).
    #[arg(long)]
    batch_strategy: Option<BatchStrategy>,
    /// Seconds a request may take, a streamed answer included; a request still running
    /// then gets 504 and its job is cancelled. 0: no limit.
    #[arg(long, default_value_t = izwi_server::DEFAULT_REQUEST_TIMEOUT.as_secs())]
    request_timeout: u64,
}

pub fn run(data_dir: Option<PathBuf>, args: ServeArgs) -> Result<()> {
    let events = Arc::new(ServerEvents::new());
    let config = RuntimeConfig {
        max_concurrent_jobs: args.max_jobs as usize,
        batch_strategy: args.batch_strategy,
        // The API serves this machine's models.
        backend: BackendChoice::Local,
        ..RuntimeConfig::new(data_dir.unwrap_or_else(RuntimeConfig::default_data_dir))
    };
    let (tokio, runtime) = crate::open_with(config, events.clone())?;
    let config = ServerConfig {
        addr: SocketAddr::new(args.host, args.port),
        api_key: args.api_key.filter(|k| !k.is_empty()),
        // Browsers send an origin without a trailing slash.
        allowed_origins: args
            .allow_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_owned())
            .collect(),
        max_requests: args.max_requests as usize,
        request_timeout: (args.request_timeout > 0)
            .then(|| std::time::Duration::from_secs(args.request_timeout)),
    };
    let runtime = Arc::new(runtime);
    let on_stop = runtime.clone();
    tokio.block_on(izwi_server::serve(
        runtime,
        events,
        config,
        |addr| {
            // Scripts wait for this line to know the server is up and on which port.
            println!("Izwi's API is listening on http://{addr}/v1");
        },
        async move {
            stopped().await;
            // Jobs in flight are cancelled (their requests answer at once), so stopping
            // does not wait for the longest of them.
            on_stop.shutdown().await;
        },
    ))?;
    Ok(())
}

/// Ctrl+C, or (on Unix) SIGTERM as service managers send.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
