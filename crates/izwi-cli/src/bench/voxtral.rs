//! `izwi bench voxtral`: Voxtral Realtime transcription throughput on the engine, in
//! seconds of audio per second with 1, 4, ... streams at once, beside transformers on
//! the same checkpoint in the same run. With `--python`, the reference side
//! (tests/fixtures/bench_voxtral_transformers.py) makes a random-weight checkpoint of
//! the real 4B shape first; `--checkpoint` measures a folder on the engine alone.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use izwi_core::bench::voxtral_throughput;
use serde::Deserialize;

#[derive(Args)]
pub struct VoxtralBenchArgs {
    /// Streams transcribed at once, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    streams: Vec<usize>,
    /// Seconds of the audio each stream transcribes.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// A 16 kHz mono 16-bit WAV (the reference side reads it as it is). Default: the
    /// repository's .assets/speech/jfk.wav (scripts/fetch-assets.sh).
    #[arg(long)]
    audio: Option<PathBuf>,
    /// A Python with torch, transformers 5.x and mistral-common: it makes a random
    /// checkpoint of Voxtral-Mini-4B-Realtime's shape (8.6 GB in bf16, 17 GB of memory
    /// in f32 while each side runs) and times transformers on it.
    #[arg(long, env = "IZWI_BENCH_PYTHON", conflicts_with = "checkpoint")]
    python: Option<PathBuf>,
    /// Measure this Voxtral Realtime folder on the engine alone.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Reference {
    rows: Vec<ReferenceRow>,
    threads: usize,
}

#[derive(Deserialize)]
struct ReferenceRow {
    streams: usize,
    audio_seconds_per_second: f64,
}

pub fn run(args: VoxtralBenchArgs) -> Result<()> {
    ensure!(
        !args.streams.is_empty() && !args.streams.contains(&0),
        "--streams must be at least 1"
    );
    ensure!(
        args.seconds > 0.0 && args.seconds.is_finite(),
        "--seconds must be a positive number"
    );
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let audio_path = args
        .audio
        .clone()
        .unwrap_or_else(|| repo.join(".assets/speech/jfk.wav"));
    let samples = izwi_runtime::load_for_asr(&audio_path)
        .with_context(|| format!("reading {}", audio_path.display()))?;
    let wanted = (args.seconds * 16_000.0) as usize;
    ensure!(
        samples.len() >= wanted,
        "{} is shorter than --seconds {}",
        audio_path.display(),
        args.seconds
    );
    let audio = &samples[..wanted];
    let scratch = tempfile::tempdir()?;
    let streams: Vec<String> = args.streams.iter().map(|s| s.to_string()).collect();
    let (checkpoint, reference) = match (&args.python, &args.checkpoint) {
        (Some(python), _) => {
            eprintln!("transformers: making the checkpoint and transcribing with it");
            let mut command = Command::new(python);
            command
                .arg(repo.join("tests/fixtures/bench_voxtral_transformers.py"))
                .arg("--out")
                .arg(scratch.path())
                .arg("--audio")
                .arg(&audio_path)
                .args(["--seconds", &args.seconds.to_string()])
                .args(["--streams", &streams.join(",")]);
            let reference: Reference = super::process::reference_json(command)?;
            (scratch.path().to_path_buf(), Some(reference))
        }
        (None, Some(dir)) => (dir.clone(), None),
        (None, None) => bail!(
            "give --python (a venv with torch, transformers 5.x and mistral-common, which \
             makes a random checkpoint of the real shape and times transformers beside us) \
             or --checkpoint DIR (a Voxtral Realtime folder, measured on the engine alone)"
        ),
    };
    eprintln!("izwi: transcribing on the engine");
    let rows = voxtral_throughput(&checkpoint, &args.streams, audio)?;
    println!(
        "Voxtral Realtime, {}, f32, CPU, {} threads{}; {} s of {} per stream\n",
        if reference.is_some() {
            "random weights of the 4B shape".to_string()
        } else {
            checkpoint.display().to_string()
        },
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        reference
            .as_ref()
            .map_or(String::new(), |r| format!(" (torch: {})", r.threads)),
        args.seconds,
        audio_path.display()
    );
    println!(
        "{:<8} {:>18} {:>26} {:>8}",
        "streams", "izwi audio s/s", "transformers audio s/s", "ratio"
    );
    for row in &rows {
        let theirs = reference.as_ref().and_then(|r| {
            r.rows
                .iter()
                .find(|t| t.streams == row.streams)
                .map(|t| t.audio_seconds_per_second)
        });
        super::print_beside(
            row.streams,
            row.audio_seconds_per_second,
            theirs,
            (18, 26),
            3,
        );
    }
    Ok(())
}
