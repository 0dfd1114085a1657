//! `izwi bench whisper`: `izwi transcribe` with its defaults, timed as a whole process
//! (start, model load, decoding the file, transcription, exit), beside faster-whisper
//! doing the same in a process of its own (tests/fixtures/bench_faster_whisper.py) on
//! the same CTranslate2 weights our checkpoints were converted from. Runs alternate
//! between the two sides; medians are printed with word errors against the reference
//! text and peak memory.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};
use clap::Args;
use izwi_core::word_errors::{word_errors, words};
use serde_json::json;

use super::process::{self, Measured};

#[derive(Args)]
pub struct WhisperBenchArgs {
    /// Whisper model folders in Hugging Face layout, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = ".assets/models/whisper-tiny.en,.assets/models/whisper-base"
    )]
    models: Vec<PathBuf>,
    /// Where the CTranslate2 originals are, one folder per model named as ours.
    #[arg(long, default_value = ".assets/ct2")]
    ct2: PathBuf,
    /// The folder holding librivox/*.wav (with .txt transcripts) and jfk.wav.
    #[arg(long, default_value = ".assets/speech")]
    speech: PathBuf,
    /// The Silero VAD weights `izwi transcribe` finds in its data folder.
    #[arg(
        long,
        default_value = ".assets/models/silero-vad/silero_vad_16k_op15.onnx"
    )]
    vad: PathBuf,
    /// Runs of each side per row; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The Python with faster-whisper (`pip install faster-whisper`).
    #[arg(long, env = "IZWI_BENCH_PYTHON", default_value = "python3")]
    python: PathBuf,
    /// Print JSON (with the transcripts) instead of a table.
    #[arg(long)]
    json: bool,
    /// Instead of the comparison, where `izwi transcribe`'s time goes on the long
    /// file, stage by stage (from its debug log).
    #[arg(long)]
    stages: bool,
}

const JFK_TEXT: &str = "And so my fellow Americans, ask not what your country can do for \
you, ask what you can do for your country.";
/// The long input is the LibriVox clips joined and repeated this often (74 s).
const LONG_REPEATS: usize = 3;

/// One recording and how the peer is run on it.
struct Input {
    name: String,
    path: PathBuf,
    reference: String,
    seconds: f64,
    /// faster-whisper's batched pipeline for long files, its sequential loop for
    /// short ones, as a user of it would choose.
    peer_mode: &'static str,
}

struct Side {
    runs: Vec<Measured>,
}

impl Side {
    fn median(&self) -> f64 {
        let mut seconds: Vec<f64> = self.runs.iter().map(|r| r.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        seconds[seconds.len() / 2]
    }

    fn peak_mib(&self) -> Option<f64> {
        self.runs
            .iter()
            .filter_map(|r| r.peak_mib)
            .max_by(f64::total_cmp)
    }

    fn text(&self) -> &str {
        self.runs.last().map_or("", |r| r.stdout.trim())
    }
}

struct Row {
    model: String,
    input: String,
    audio_seconds: f64,
    reference_words: usize,
    ours: Side,
    ours_errors: usize,
    /// The peer's runs, word errors, name and versions, and text.
    peer: Result<(Side, usize, String, String)>,
}

pub fn run(args: WhisperBenchArgs) -> Result<()> {
    ensure!(
        !args.models.is_empty(),
        "--models needs at least one folder"
    );
    let scratch = tempfile::tempdir()?;
    let inputs = inputs(&args.speech, scratch.path())?;
    let data = scratch.path().join("data");
    install_vad(&args.vad, &data)?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bench_faster_whisper.py");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let izwi = std::env::current_exe()?;
    let runs = args.runs.max(1);
    if args.stages {
        return print_stages(&args, &izwi, &data, &inputs[0]);
    }

    let mut rows = Vec::new();
    for model in &args.models {
        let name = model.file_name().map_or_else(
            || model.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let ct2 = args.ct2.join(&name);
        for input in &inputs {
            eprintln!("{name}: {} ({runs} runs each side)", input.name);
            let reference = words(&input.reference);
            let mut ours = Side { runs: Vec::new() };
            let mut peer: Result<Side> = Ok(Side { runs: Vec::new() });
            for _ in 0..runs {
                let mut command = Command::new(&izwi);
                command
                    .arg("transcribe")
                    .arg("--data-dir")
                    .arg(&data)
                    .arg("--model")
                    .arg(model)
                    .arg(&input.path);
                ours.runs.push(process::run(command)?);
                if let Ok(side) = &mut peer {
                    let mut command = Command::new(&args.python);
                    command
                        .arg(&script)
                        .arg(&ct2)
                        .arg(&input.path)
                        .arg(input.peer_mode)
                        .arg(threads.to_string());
                    match process::run(command) {
                        Ok(run) => side.runs.push(run),
                        Err(e) => peer = Err(e),
                    }
                }
            }
            let ours_errors = word_errors(&reference, &words(ours.text()));
            let peer = peer.and_then(|side| {
                let result: serde_json::Value =
                    serde_json::from_str(side.text()).context("reading faster-whisper's output")?;
                let text = result["text"].as_str().unwrap_or_default().to_string();
                let errors = word_errors(&reference, &words(&text));
                let version = format!(
                    "faster-whisper {}, CTranslate2 {}",
                    result["faster_whisper"].as_str().unwrap_or("?"),
                    result["ctranslate2"].as_str().unwrap_or("?")
                );
                Ok((side, errors, version, text))
            });
            rows.push(Row {
                model: name.clone(),
                input: input.name.clone(),
                audio_seconds: input.seconds,
                reference_words: reference.len(),
                ours,
                ours_errors,
                peer,
            });
        }
    }
    if args.json {
        print_json(&rows)
    } else {
        print_table(&rows, &args, threads);
        Ok(())
    }
}

/// The long LibriVox file (written into `scratch`) and jfk.wav.
fn inputs(speech: &Path, scratch: &Path) -> Result<Vec<Input>> {
    let librivox = speech.join("librivox");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&librivox)
        .with_context(|| {
            format!(
                "reading {} (run scripts/fetch-assets.sh, or pass --speech)",
                librivox.display()
            )
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("wav")))
        .collect();
    paths.sort();
    ensure!(!paths.is_empty(), "no .wav files in {}", librivox.display());
    let mut samples = Vec::new();
    let mut reference = Vec::new();
    for path in &paths {
        samples.extend(
            izwi_audio::load_for_asr(path)
                .with_context(|| format!("decoding {}", path.display()))?,
        );
        let text = path.with_extension("txt");
        reference.push(
            std::fs::read_to_string(&text)
                .with_context(|| format!("reading {}", text.display()))?,
        );
    }
    let long = samples.repeat(LONG_REPEATS);
    let long_path = scratch.join("librivox-long.wav");
    izwi_audio::write_wav(&long_path, &long, izwi_audio::ASR_SAMPLE_RATE)?;
    let jfk = speech.join("jfk.wav");
    let jfk_seconds = izwi_audio::load_for_asr(&jfk)
        .with_context(|| format!("decoding {}", jfk.display()))?
        .len() as f64
        / f64::from(izwi_audio::ASR_SAMPLE_RATE);
    Ok(vec![
        Input {
            name: format!("{} LibriVox clips joined x{LONG_REPEATS}", paths.len()),
            path: long_path,
            reference: reference.join(" ").repeat(LONG_REPEATS),
            seconds: long.len() as f64 / f64::from(izwi_audio::ASR_SAMPLE_RATE),
            peer_mode: "batched",
        },
        Input {
            name: "jfk.wav".into(),
            path: jfk,
            reference: JFK_TEXT.into(),
            seconds: jfk_seconds,
            peer_mode: "sequential",
        },
    ])
}

/// Puts the VAD where `izwi transcribe` looks for it in a data folder, as the setup
/// script does for a user; without it our side runs without a VAD, and says so.
fn install_vad(vad: &Path, data: &Path) -> Result<()> {
    if !vad.is_file() {
        eprintln!(
            "no Silero VAD at {} (scripts/fetch-assets.sh fetches it): izwi runs without one",
            vad.display()
        );
        return Ok(());
    }
    let target = izwi_runtime::vad_path(data);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::copy(vad, &target)
        .with_context(|| format!("copying {} to {}", vad.display(), target.display()))?;
    Ok(())
}

/// Seconds per stage of one `izwi transcribe` run, read from its debug log.
#[derive(Default)]
struct Stages {
    load: f64,
    decode: f64,
    vad: f64,
    mel: f64,
    encoder: f64,
    decoder: f64,
    steps: usize,
}

impl Stages {
    fn read(log: &str) -> Self {
        let mut stages = Self::default();
        for line in log.lines() {
            let line = strip_ansi(line);
            let Some(seconds) = field(&line, "seconds") else {
                continue;
            };
            if line.ends_with("model loaded") || line.contains(": model loaded") {
                stages.load += seconds;
            } else if line.contains(": audio decoded") {
                stages.decode += seconds;
            } else if line.contains(": speech found") {
                stages.vad += seconds;
            } else if line.contains("executor: mel") {
                stages.mel += seconds;
            } else if line.contains("executor: encoded") {
                stages.encoder += seconds;
            } else if line.contains("executor: decoded") {
                stages.decoder += seconds;
                stages.steps += 1;
            }
        }
        stages
    }
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of ` name=NUMBER` in a log line.
fn field(line: &str, name: &str) -> Option<f64> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &line[start..];
    let end = rest.find(' ').unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn print_stages(args: &WhisperBenchArgs, izwi: &Path, data: &Path, input: &Input) -> Result<()> {
    println!(
        "izwi transcribe, stage by stage: {} ({:.1} s), CPU, {} threads, one run each",
        input.name,
        input.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:<16} {:>7} {:>7} {:>7} {:>7} {:>8} {:>14} {:>7} {:>7}",
        "model", "load", "decode", "VAD", "mel", "encoder", "decoder/steps", "other", "total"
    );
    for model in &args.models {
        let mut command = Command::new(izwi);
        command
            .env(
                "RUST_LOG",
                "izwi_runtime=debug,izwi_core::models::whisper::executor=debug",
            )
            .arg("transcribe")
            .arg("--data-dir")
            .arg(data)
            .arg("--model")
            .arg(model)
            .arg(&input.path);
        let (total, log) = process::run_with_stderr(command)?;
        let s = Stages::read(&log);
        // The file is decoded and its speech found while the model loads.
        let before_mel = s.load.max(s.decode + s.vad);
        let other = total - before_mel - s.mel - s.encoder - s.decoder;
        println!(
            "{:<16} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>8.2} {:>8.2}/{:<5} {:>7.2} {:>7.2}",
            model.file_name().map_or_else(
                || model.display().to_string(),
                |n| n.to_string_lossy().into()
            ),
            s.load,
            s.decode,
            s.vad,
            s.mel,
            s.encoder,
            s.decoder,
            s.steps,
            other,
            total
        );
    }
    println!("\nload: weights into memory; decode: the file to 16 kHz mono; VAD: Silero over the file (decode and VAD run while the model loads); mel, encoder: every chunk; decoder: every engine step (sampling and the decoding rules included); other: the rest of the process (start-up, scheduling, the store, exit)");
    Ok(())
}

fn print_table(rows: &[Row], args: &WhisperBenchArgs, threads: usize) {
    let peer_name = rows
        .iter()
        .find_map(|r| r.peer.as_ref().ok().map(|p| p.2.clone()))
        .unwrap_or_else(|| "faster-whisper".into());
    println!(
        "izwi bench whisper: whole process (start, load, decode, transcribe, exit), CPU, {threads} threads, median of {} runs",
        args.runs.max(1)
    );
    println!("izwi: `izwi transcribe --model DIR FILE` with its defaults");
    println!(
        "peer: {peer_name}, float32, greedy; batched pipeline on the long file, sequential on jfk.wav\n"
    );
    println!(
        "{:<16} {:<30} {:>7} {:>9} {:>9} {:>7} {:>11} {:>11} {:>15}",
        "model",
        "input",
        "audio s",
        "izwi s",
        "peer s",
        "ratio",
        "izwi errs",
        "peer errs",
        "peak MiB i/p"
    );
    for row in rows {
        let ours = row.ours.median();
        let (peer_s, ratio, peer_errors, peer_peak) = match &row.peer {
            Ok((side, errors, _, _)) => (
                format!("{:.2}", side.median()),
                format!("{:.2}x", ours / side.median()),
                format!("{errors}/{}", row.reference_words),
                side.peak_mib().map_or("?".into(), |m| format!("{m:.0}")),
            ),
            Err(_) => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:<16} {:<30} {:>7.1} {:>9.2} {:>9} {:>7} {:>11} {:>11} {:>15}",
            row.model,
            row.input,
            row.audio_seconds,
            ours,
            peer_s,
            ratio,
            format!("{}/{}", row.ours_errors, row.reference_words),
            peer_errors,
            format!(
                "{}/{}",
                row.ours
                    .peak_mib()
                    .map_or("?".into(), |m| format!("{m:.0}")),
                peer_peak
            ),
        );
    }
    if let Some(Err(e)) = rows.iter().map(|r| &r.peer).find(|p| p.is_err()) {
        println!(
            "\nfaster-whisper was not run: {e:#}\nInstall it with `python3 -m venv ~/.venvs/peers && ~/.venvs/peers/bin/pip install faster-whisper`, then pass --python ~/.venvs/peers/bin/python (or set IZWI_BENCH_PYTHON)."
        );
    }
    println!("\nratio = izwi's time / the peer's; errors = word errors against the reference text");
}

fn print_json(rows: &[Row]) -> Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|row| {
            let peer = match &row.peer {
                Ok((side, errors, version, text)) => json!({
                    "name": version,
                    "median_seconds": side.median(),
                    "seconds": side.runs.iter().map(|r| r.seconds).collect::<Vec<_>>(),
                    "peak_mib": side.peak_mib(),
                    "word_errors": errors,
                    "text": text,
                }),
                Err(e) => json!({ "error": format!("{e:#}") }),
            };
            json!({
                "model": row.model,
                "input": row.input,
                "audio_seconds": row.audio_seconds,
                "reference_words": row.reference_words,
                "izwi": {
                    "median_seconds": row.ours.median(),
                    "seconds": row.ours.runs.iter().map(|r| r.seconds).collect::<Vec<_>>(),
                    "peak_mib": row.ours.peak_mib(),
                    "word_errors": row.ours_errors,
                    "text": row.ours.text(),
                },
                "peer": peer,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}
