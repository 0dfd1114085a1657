//! Download speed through the hub (ranged chunks streamed to disk, progress and the
//! sha256 check) against a plain streamed HTTP GET of the same file to disk, from a hub
//! served on 127.0.0.1, so the figure is the client's cost, not the network's.
//!
//! `cargo bench -p izwi-hub --bench download` (set IZWI_BENCH_MB for the file size).

use std::collections::BTreeMap;
use std::time::Instant;

use futures::StreamExt;
use izwi_hub::{CancellationToken, Family, Hub, HubConfig};
use izwi_test_support::hub::{self as support, bytes, HubServer, ServedFile, COMMIT};
use tokio::io::AsyncWriteExt;

fn main() {
    let mb: usize = std::env::var("IZWI_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let git = |s: &str| ServedFile {
        bytes: s.as_bytes().to_vec(),
        lfs: false,
    };
    let files = BTreeMap::from([
        ("config.json".to_string(), git("{}")),
        ("generation_config.json".to_string(), git("{}")),
        ("tokenizer.json".to_string(), git("{}")),
        (
            "model.safetensors".to_string(),
            ServedFile {
                bytes: bytes(mb << 20, 1),
                lfs: true,
            },
        ),
    ]);
    let entry = support::entry(
        "whisper-base",
        Family::Whisper,
        "openai/whisper-base",
        &files,
        &[
            "config.json",
            "generation_config.json",
            "model.safetensors",
            "tokenizer.json",
        ],
    );
    let server = HubServer::start("openai/whisper-base", files);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let megabytes = mb as f64 * 1.048_576;

    println!("download of a {mb} MiB model file from 127.0.0.1 (best of 3)");
    let baseline = best_of_3(|| {
        runtime.block_on(plain_get(&format!(
            "{}/openai/whisper-base/resolve/{COMMIT}/model.safetensors",
            server.endpoint
        )))
    });
    println!(
        "  baseline: one streamed GET to disk     {:7.1} MB/s",
        megabytes / baseline
    );
    let hub = best_of_3(|| {
        let dir = tempfile::tempdir().unwrap();
        let hub = Hub::new(HubConfig {
            cache_dir: Some(dir.path().join("hf")),
            endpoint: Some(server.endpoint.clone()),
            chunk_size: std::env::var("IZWI_BENCH_CHUNK")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10_000_000),
            local_dir: dir.path().join("models"),
            catalog: Some(vec![entry.clone()]),
        });
        let started = Instant::now();
        runtime
            .block_on(hub.download("whisper-base", |_| {}, CancellationToken::new()))
            .unwrap();
        started.elapsed().as_secs_f64()
    });
    println!(
        "  izwi-hub: ranged chunks + sha256 check {:7.1} MB/s  (x{:.2} of baseline)",
        megabytes / hub,
        baseline / hub
    );
}

async fn plain_get(url: &str) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let response = reqwest::get(url).await.unwrap().error_for_status().unwrap();
    let mut file = tokio::fs::File::create(dir.path().join("f")).await.unwrap();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        file.write_all(&chunk.unwrap()).await.unwrap();
    }
    file.flush().await.unwrap();
    started.elapsed().as_secs_f64()
}

fn best_of_3(mut run: impl FnMut() -> f64) -> f64 {
    (0..3).map(|_| run()).fold(f64::INFINITY, f64::min)
}
