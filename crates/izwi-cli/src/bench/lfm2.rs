//! `izwi bench lfm2`: LFM2 decode throughput on the engine, random weights of
//! LFM2-350M's shape, beside transformers decoding the same checkpoint on the same CPU
//! in the same run (tests/fixtures/bench_lfm2_transformers.py makes it and times
//! transformers).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{ensure, Result};
use clap::Args;
use izwi_core::bench::lfm2_decode_throughput;
use serde::Deserialize;

#[derive(Args)]
pub struct Lfm2BenchArgs {
    /// Batch sizes to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    batch_sizes: Vec<usize>,
    /// Prompt length of each sequence.
    #[arg(long, default_value_t = 32)]
    prompt: usize,
    /// Tokens each sequence decodes.
    #[arg(long, default_value_t = 32)]
    tokens: usize,
    /// A Python with torch and transformers (>= 4.54) for the reference side; without
    /// it only the engine is measured, on random weights made here.
    #[arg(long, env = "IZWI_BENCH_PYTHON")]
    python: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Reference {
    rows: Vec<ReferenceRow>,
    threads: usize,
}

#[derive(Deserialize)]
struct ReferenceRow {
    batch_size: usize,
    tokens_per_sec: f64,
}

pub fn run(args: Lfm2BenchArgs) -> Result<()> {
    ensure!(
        !args.batch_sizes.is_empty() && !args.batch_sizes.contains(&0),
        "batch sizes must be at least 1"
    );
    ensure!(
        args.tokens > 0 && args.prompt > 0,
        "--tokens and --prompt must be at least 1"
    );
    let scratch = tempfile::tempdir()?;
    let reference = match &args.python {
        Some(python) => {
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/bench_lfm2_transformers.py");
            eprintln!("transformers: making the checkpoint and decoding it");
            let sizes: Vec<String> = args.batch_sizes.iter().map(|b| b.to_string()).collect();
            let mut command = Command::new(python);
            command
                .arg(&script)
                .arg("--out")
                .arg(scratch.path())
                .args(["--batch-sizes", &sizes.join(",")])
                .args(["--prompt", &args.prompt.to_string()])
                .args(["--tokens", &args.tokens.to_string()]);
            Some(super::process::reference_json::<Reference>(command)?)
        }
        None => None,
    };
    eprintln!("izwi: decoding on the engine");
    let checkpoint = reference.as_ref().map(|_| scratch.path());
    let rows = lfm2_decode_throughput(checkpoint, &args.batch_sizes, args.prompt, args.tokens)?;
    println!(
        "LFM2-350M shape, random weights, f32, CPU, {} threads{}; prompt {} tokens, {} decoded per sequence\n",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        reference
            .as_ref()
            .map_or(String::new(), |r| format!(" (torch: {})", r.threads)),
        args.prompt,
        args.tokens
    );
    println!(
        "{:<8} {:>16} {:>22} {:>8}",
        "batch", "izwi tokens/s", "transformers tokens/s", "ratio"
    );
    for row in &rows {
        let theirs = reference.as_ref().and_then(|r| {
            r.rows
                .iter()
                .find(|t| t.batch_size == row.batch_size)
                .map(|t| t.tokens_per_sec)
        });
        super::print_beside(row.batch_size, row.tokens_per_sec, theirs, (16, 22), 1);
    }
    Ok(())
}
