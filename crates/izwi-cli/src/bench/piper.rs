//! `izwi bench piper`: our VITS (candle) against piper's own runtime (onnxruntime via
//! tests/fixtures/bench_piper.py) on the same voice, the same phoneme ids and the same
//! scales, in one run. Both sides: voice loaded first and not timed, one warm-up
//! sentence, then each sentence synthesized on its own; RTF = wall time / audio time.
//! Then the whole process as a user runs it: `izwi speak --file` against piper-tts's
//! `python -m piper`, the paragraph (times the rounds) to a WAV, start to exit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use izwi_core::models::vits::{phonemize, ModuleTimings, Scales, Vits};
use izwi_core::text::{split_sentences, Espeak};
use izwi_core::Device;

use super::process;

/// A paragraph of ordinary sentences of mixed length.
const TEXT: &str = "Thank you for calling. Your appointment is confirmed for Tuesday morning at \
nine. Please remember to bring your passport, and a printed copy of your ticket. The weather \
today will be sunny, with a light breeze in the afternoon and a chance of rain later in the \
evening. She opened the window and listened to the birds. Our team finished the project two \
weeks earlier than we had planned, which gave everyone time to rest. Goodbye!";

#[derive(Args)]
pub struct PiperBenchArgs {
    /// The voice's .onnx (its .onnx.json beside it).
    #[arg(
        long,
        default_value = ".assets/voices/en_US-joe-medium/en_US-joe-medium.onnx"
    )]
    voice: PathBuf,
    /// Times through the paragraph, each side.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The Python with onnxruntime and numpy for the baseline.
    #[arg(long, env = "IZWI_BENCH_PYTHON", default_value = "python3")]
    python: PathBuf,
    /// Runs of each side for the whole-process comparison; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads for onnxruntime (candle uses one per core).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get()))]
    threads: usize,
}

pub fn run(args: PiperBenchArgs) -> Result<()> {
    let mut json = args.voice.clone().into_os_string();
    json.push(".json");
    // Loaded as the runtime loads a voice for a user.
    let vits = Vits::from_onnx(&args.voice, &PathBuf::from(json), &Device::Cpu)
        .and_then(Vits::with_bf16_vocoder)
        .with_context(|| format!("loading {}", args.voice.display()))?;
    let espeak = Espeak::find()?;
    let sentences = phonemize(&espeak, vits.config(), &split_sentences(TEXT))?;
    let ids: Vec<Vec<i64>> = sentences.into_iter().map(|s| s.ids).collect();
    // The voice's own defaults, noise included, as a user hears it; fixed seeds.
    let scales = vits.config().inference;
    let rounds = args.rounds.max(1);

    vits.synthesize(&ids[0], None, scales, 0)?; // warm-up
    let mut wall = 0.0;
    let mut samples = 0usize;
    let mut modules = ModuleTimings::default();
    for round in 0..rounds {
        for (i, sentence) in ids.iter().enumerate() {
            let started = Instant::now();
            let seed = (round * 1000 + i) as u64;
            let made = vits.synthesize_batch(&[sentence.as_slice()], None, scales, seed)?;
            wall += started.elapsed().as_secs_f64();
            for s in made {
                samples += s.audio.len();
                modules.text_encoder += s.timings.text_encoder;
                modules.durations += s.timings.durations;
                modules.flow += s.timings.flow;
                modules.vocoder += s.timings.vocoder;
            }
        }
    }
    let audio = samples as f64 / f64::from(vits.sample_rate());
    let ours = wall / audio;

    println!(
        "izwi bench piper: {} · {} sentences × {rounds} rounds · CPU, {} threads",
        args.voice.display(),
        ids.len(),
        args.threads
    );
    println!("  izwi (candle)          RTF {ours:.3}  ({audio:.1} s of audio in {wall:.2} s)");
    println!(
        "    by module: text encoder {:.2} s, durations {:.2} s, flow {:.2} s, vocoder {:.2} s",
        modules.text_encoder, modules.durations, modules.flow, modules.vocoder
    );
    match baseline(&args, &ids, scales, rounds) {
        Ok((piper, version)) => {
            println!("  piper (onnxruntime {version}) RTF {piper:.3}");
            println!(
                "  ratio: izwi takes {:.2}x piper's time ({})",
                ours / piper,
                if ours <= piper {
                    "faster or equal"
                } else {
                    "slower"
                }
            );
        }
        Err(e) => println!("  piper baseline not run: {e:#}"),
    }
    whole_process(&args, rounds)
}

/// `izwi speak --file` against `python -m piper` on the paragraph `rounds` times over,
/// each a new process per run, alternating; medians and peak memory.
fn whole_process(args: &PiperBenchArgs, rounds: usize) -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let paragraph = scratch.path().join("paragraph.txt");
    std::fs::write(&paragraph, vec![TEXT; rounds].join(" "))?;
    let words = TEXT.split_whitespace().count() * rounds;
    let izwi = std::env::current_exe()?;
    let data = scratch.path().join("data");
    let voice = args.voice.canonicalize()?;
    let mut ours = Vec::new();
    let mut peer: Result<Vec<process::Measured>> = Ok(Vec::new());
    for run in 0..args.runs.max(1) {
        let out = |side: &str| scratch.path().join(format!("{side}-{run}.wav"));
        let mut command = Command::new(&izwi);
        command
            .arg("--data-dir")
            .arg(&data)
            .arg("speak")
            .arg("--voice")
            .arg(&voice)
            .arg("--file")
            .arg(&paragraph)
            .arg("--output")
            .arg(out("izwi"));
        ours.push(process::run(command)?);
        if let Ok(runs) = &mut peer {
            match piper_tts(&args.python, &voice, &paragraph, &out("piper")) {
                Ok(measured) => runs.push(measured),
                Err(e) => peer = Err(e),
            }
        }
    }
    let median = |runs: &[process::Measured]| {
        let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        seconds[seconds.len() / 2]
    };
    let peak = |runs: &[process::Measured]| {
        runs.iter()
            .filter_map(|r| r.peak_mib)
            .max_by(f64::total_cmp)
            .map_or("?".into(), |m| format!("{m:.0} MiB"))
    };
    println!(
        "whole process, the paragraph x{rounds} ({words} words) to a WAV, median of {}:",
        ours.len()
    );
    println!(
        "  izwi speak --file      {:.2} s  (peak {})",
        median(&ours),
        peak(&ours)
    );
    match peer {
        Ok(runs) => {
            println!(
                "  python -m piper        {:.2} s  (peak {})",
                median(&runs),
                peak(&runs)
            );
            println!("  ratio: {:.2}x", median(&ours) / median(&runs));
        }
        Err(e) => println!("  piper-tts not run ({e:#}); `pip install piper-tts` into --python"),
    }
    Ok(())
}

/// One `python -m piper` run, as its own command line reads a text file to a WAV.
fn piper_tts(python: &Path, voice: &Path, text: &Path, out: &Path) -> Result<process::Measured> {
    let mut command = Command::new(python);
    command
        .args(["-m", "piper", "-m"])
        .arg(voice)
        .arg("-i")
        .arg(text)
        .arg("-f")
        .arg(out);
    process::run(command)
}

/// Runs the Python baseline; returns its RTF and onnxruntime's version.
fn baseline(
    args: &PiperBenchArgs,
    ids: &[Vec<i64>],
    scales: Scales,
    rounds: usize,
) -> Result<(f64, String)> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bench_piper.py");
    let job = serde_json::json!({
        "voice": args.voice.canonicalize()?,
        "threads": args.threads,
        "scales": [scales.noise_scale, scales.length_scale, scales.noise_w],
        "sentences": ids,
        "rounds": rounds,
    });
    let mut child = Command::new(&args.python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", args.python.display()))?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(job.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "{} failed (it needs `pip install onnxruntime numpy`; --python picks another \
             Python): {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let wall = result["wall_seconds"].as_f64().context("wall_seconds")?;
    let audio = result["audio_seconds"].as_f64().context("audio_seconds")?;
    Ok((
        wall / audio,
        result["onnxruntime"].as_str().unwrap_or("?").to_string(),
    ))
}
