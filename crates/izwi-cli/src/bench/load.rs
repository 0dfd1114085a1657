//! `izwi bench load`: many clients transcribing one clip at once through a real
//! `izwi serve` on 127.0.0.1, once per batch strategy: every answer checked against a
//! lone request's, latency percentiles and throughput side by side.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use izwi_core::bench::percentile;
use izwi_core::engine::BatchStrategy;
use reqwest::blocking::{multipart, Client};
use serde::Serialize;

#[derive(Args)]
pub struct LoadBenchArgs {
    /// The Whisper model the server transcribes with (an id `izwi models list` shows).
    #[arg(long)]
    model: String,
    /// The clip every client sends.
    #[arg(long)]
    audio: PathBuf,
    /// Clients sending at the same moment.
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// Strategies to measure, comma separated (default: all).
    #[arg(long, value_delimiter = ',')]
    strategies: Vec<BatchStrategy>,
    /// Jobs the server runs at once (`izwi serve --max-jobs`).
    #[arg(long, default_value_t = 16)]
    max_jobs: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Row {
    strategy: &'static str,
    clients: usize,
    /// Answered 200 with a transcript.
    answered: usize,
    /// Answered with the same text as a lone request.
    correct: usize,
    /// Other answers: status and body, as the server gave them.
    failures: Vec<String>,
    p50_s: f64,
    p99_s: f64,
    max_s: f64,
    wall_s: f64,
    requests_per_s: f64,
}

pub fn run(data_dir: Option<PathBuf>, args: LoadBenchArgs) -> Result<()> {
    ensure!(args.clients > 0, "--clients must be at least 1");
    let clip =
        std::fs::read(&args.audio).with_context(|| format!("reading {}", args.audio.display()))?;
    let name = args
        .audio
        .file_name()
        .map_or("clip.wav".into(), |n| n.to_string_lossy().into_owned());
    let strategies = if args.strategies.is_empty() {
        BatchStrategy::ALL.to_vec()
    } else {
        args.strategies.clone()
    };
    let mut rows = Vec::new();
    for strategy in strategies {
        let server = Server::start(data_dir.as_deref(), strategy, args.max_jobs)?;
        let client = Client::builder().timeout(None).build()?;
        // A lone request first: it loads the model and gives the expected text.
        let (status, expected) = transcribe(&client, &server.base, &args.model, &clip, &name)?;
        if status != 200 {
            bail!("the server refused a lone request ({status}): {expected}");
        }
        rows.push(load(
            &server.base,
            &args,
            &clip,
            &name,
            strategy,
            &expected,
        )?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{} clients at once, {} with {}, {} jobs at a time (izwi serve on 127.0.0.1)",
        args.clients,
        args.audio.display(),
        args.model,
        args.max_jobs
    );
    println!(
        "{:<18} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7} {:>10}",
        "strategy", "answered", "correct", "p50 s", "p99 s", "max s", "wall s", "requests/s"
    );
    for r in &rows {
        println!(
            "{:<18} {:>9} {:>8} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>10.2}",
            r.strategy,
            format!("{}/{}", r.answered, r.clients),
            r.correct,
            r.p50_s,
            r.p99_s,
            r.max_s,
            r.wall_s,
            r.requests_per_s
        );
        for failure in &r.failures {
            println!("  {failure}");
        }
    }
    Ok(())
}

fn load(
    base: &str,
    args: &LoadBenchArgs,
    clip: &[u8],
    name: &str,
    strategy: BatchStrategy,
    expected: &str,
) -> Result<Row> {
    let start = Arc::new(Barrier::new(args.clients + 1));
    let threads: Vec<_> = (0..args.clients)
        .map(|_| {
            let (start, base, model) = (start.clone(), base.to_owned(), args.model.clone());
            let (clip, name) = (clip.to_vec(), name.to_owned());
            std::thread::spawn(move || -> Result<(u16, String, f64)> {
                let client = Client::builder().timeout(None).build()?;
                start.wait();
                let began = Instant::now();
                let (status, text) = transcribe(&client, &base, &model, &clip, &name)?;
                Ok((status, text, began.elapsed().as_secs_f64()))
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let mut latencies = Vec::new();
    let (mut correct, mut failures) = (0, Vec::new());
    for thread in threads {
        let answer = thread
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        match answer {
            Ok((200, text, seconds)) => {
                latencies.push(seconds);
                if text == expected {
                    correct += 1;
                } else {
                    failures.push(format!("200 with other text: {text}"));
                }
            }
            Ok((status, body, _)) => failures.push(format!("{status}: {body}")),
            Err(e) => failures.push(format!("no answer: {e:#}")),
        }
    }
    let wall_s = began.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    Ok(Row {
        strategy: strategy.name(),
        clients: args.clients,
        answered: latencies.len(),
        correct,
        failures,
        p50_s: percentile(&latencies, 0.50),
        p99_s: percentile(&latencies, 0.99),
        max_s: latencies.last().copied().unwrap_or(f64::NAN),
        wall_s,
        requests_per_s: latencies.len() as f64 / wall_s,
    })
}

/// One transcription request: the status and the text (or the error body).
fn transcribe(
    client: &Client,
    base: &str,
    model: &str,
    clip: &[u8],
    name: &str,
) -> Result<(u16, String)> {
    let form = multipart::Form::new()
        .text("model", model.to_owned())
        .text("response_format", "text")
        .part(
            "file",
            multipart::Part::bytes(clip.to_vec()).file_name(name.to_owned()),
        );
    let response = client
        .post(format!("{base}/audio/transcriptions"))
        .multipart(form)
        .send()?;
    let status = response.status().as_u16();
    Ok((status, response.text()?.trim().to_owned()))
}

/// `izwi serve` from this executable on a free port, stopped when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(
        data_dir: Option<&std::path::Path>,
        strategy: BatchStrategy,
        max_jobs: u32,
    ) -> Result<Self> {
        let mut command = Command::new(std::env::current_exe()?);
        if let Some(dir) = data_dir {
            command.arg("--data-dir").arg(dir);
        }
        let max_requests = 4096.to_string();
        let mut child = command
            .args(["serve", "--port", "0", "--max-requests", &max_requests])
            .args(["--max-jobs", &max_jobs.to_string()])
            .args(["--batch-strategy", strategy.name()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting izwi serve")?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("izwi serve's output")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(base) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = child.kill();
            bail!("izwi serve did not start (it printed {line:?})");
        };
        Ok(Self {
            base: base.to_owned(),
            child,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
