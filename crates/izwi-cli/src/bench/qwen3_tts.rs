//! `izwi bench qwen3-tts`: Qwen3-TTS codec frames per second on the engine at several
//! batch sizes and the time to the first audio, beside qwen-tts on the same random
//! checkpoint in the same run (tests/fixtures/bench_qwen3_tts_reference.py makes it and
//! times qwen-tts). Both sides greedy, every utterance the same number of frames.
//! `--checkpoint DIR` times ours alone on a folder the reference side made before.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::{Args, ValueEnum};
use izwi_core::engine::{EngineCore, EngineCoreConfig, FinishReason, GenerationParams};
use izwi_core::models::qwen3_tts::codec::{CodecDecoder, CodecStream};
use izwi_core::models::qwen3_tts::{
    Frame, Qwen3TtsExecutor, Qwen3TtsRequests, SpeechPrompt, FRAME_SECONDS, STREAM_CHUNK_FRAMES,
};
use izwi_core::models::shared::bf16_weights;
use izwi_core::{DType, Device};
use serde::Deserialize;

#[derive(Clone, Copy, ValueEnum)]
enum Shape {
    /// Qwen3-TTS-12Hz-0.6B-Base's shape (a ~1.8 GB checkpoint is written).
    #[value(name = "0.6b")]
    Base06b,
    /// A tiny checkpoint, to try the bench.
    Tiny,
}

#[derive(Args)]
pub struct Qwen3TtsBenchArgs {
    /// A Python with qwen-tts 0.1.1 (it makes the random checkpoint and times the
    /// reference).
    #[arg(
        long,
        env = "IZWI_BENCH_PYTHON",
        required_unless_present = "checkpoint"
    )]
    python: Option<PathBuf>,
    /// Time izwi alone on a checkpoint the reference side made before
    /// (tests/fixtures/bench_qwen3_tts_reference.py --out DIR; DIR holds its
    /// bench_prompt.json), instead of making one and timing qwen-tts.
    #[arg(long, conflicts_with = "python")]
    checkpoint: Option<PathBuf>,
    /// The checkpoint's shape.
    #[arg(long, value_enum, default_value = "0.6b")]
    shape: Shape,
    /// Batch sizes to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8")]
    batch_sizes: Vec<usize>,
    /// Frames (80 ms each) every utterance says.
    #[arg(long, default_value_t = 48)]
    frames: usize,
    /// Text tokens of the prompt.
    #[arg(long, default_value_t = 24)]
    text_tokens: usize,
}

#[derive(Deserialize)]
struct Reference {
    rows: Vec<ReferenceRow>,
    first_audio_s: f64,
    threads: usize,
}

#[derive(Deserialize)]
struct ReferenceRow {
    batch_size: usize,
    frames_per_sec: f64,
}

/// The prompt the reference side spoke (bench_prompt.json).
#[derive(Clone, Deserialize)]
struct BenchPrompt {
    text_ids: Vec<u32>,
    language: String,
    frames: usize,
    repetition_penalty: f32,
}

pub fn run(args: Qwen3TtsBenchArgs) -> Result<()> {
    ensure!(
        !args.batch_sizes.is_empty() && !args.batch_sizes.contains(&0),
        "batch sizes must be at least 1"
    );
    ensure!(
        args.frames > 0 && args.text_tokens > 0,
        "--frames and --text-tokens must be at least 1"
    );
    let scratch = tempfile::tempdir()?;
    let shape = match args.shape {
        Shape::Base06b => "0.6b",
        Shape::Tiny => "tiny",
    };
    let (dir, reference) = match (&args.checkpoint, &args.python) {
        (Some(dir), _) => (dir.as_path(), None),
        (None, Some(python)) => (
            scratch.path(),
            Some(reference_run(python, scratch.path(), shape, &args)?),
        ),
        (None, None) => bail!("give --python PY (qwen-tts 0.1.1) or --checkpoint DIR"),
    };
    let path = dir.join("bench_prompt.json");
    let prompt: BenchPrompt = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("reading {}", path.display()))?;
    // The reference spoke the frames asked for; a kept checkpoint's prompt says what it
    // last spoke.
    let prompt = BenchPrompt {
        frames: args.frames,
        ..prompt
    };

    eprintln!("izwi: speaking on the engine");
    // Warm-up, as on the reference side: a short utterance first.
    let short = BenchPrompt {
        frames: 2,
        ..prompt.clone()
    };
    frames_per_sec(dir, &short, 1)?;
    let mut rows = Vec::new();
    for &batch in &args.batch_sizes {
        rows.push((batch, frames_per_sec(dir, &prompt, batch)?));
    }
    let (first_audio, whole, said, products) = first_audio(dir, &prompt)?;

    println!(
        "Qwen3-TTS {} shape, random weights, CPU, {} threads (torch: {}); products in {} \
         (qwen-tts: {}); greedy, {} frames ({:.1} s of audio) per utterance, prompt of {} \
         text tokens\n",
        if args.checkpoint.is_some() {
            "kept"
        } else {
            shape
        },
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        reference
            .as_ref()
            .map_or("-".to_string(), |r| r.threads.to_string()),
        dtype_name(products),
        reference.as_ref().map_or("-", |_| reference_dtype()),
        prompt.frames,
        prompt.frames as f64 * FRAME_SECONDS,
        args.text_tokens
    );
    println!(
        "{:<8} {:>16} {:>18} {:>8} {:>14}",
        "batch", "izwi frames/s", "qwen-tts frames/s", "ratio", "vs batch 1"
    );
    let base = rows
        .iter()
        .find(|r| r.0 == 1)
        .or(rows.first())
        .map_or(1.0, |r| r.1);
    for (batch, ours) in &rows {
        let theirs = reference.as_ref().and_then(|r| {
            r.rows
                .iter()
                .find(|r| r.batch_size == *batch)
                .map(|r| r.frames_per_sec)
        });
        let ratio = theirs.map_or("-".to_string(), |t| format!("{:.2}x", ours / t));
        let theirs = theirs.map_or("-".to_string(), |t| format!("{t:.1}"));
        println!(
            "{:<8} {:>16.1} {:>18} {:>8} {:>13.2}x",
            batch,
            ours,
            theirs,
            ratio,
            ours / base
        );
    }
    let Some(reference) = reference else {
        println!(
            "\nfirst audio at batch 1: izwi {first_audio:.2} s (the first {} frames decoded; \
             the whole utterance {whole:.2} s)",
            STREAM_CHUNK_FRAMES.min(prompt.frames)
        );
        return Ok(());
    };
    println!(
        "\nfirst audio at batch 1: izwi {:.2} s (the first {} frames decoded; the whole \
         utterance {:.2} s), qwen-tts {:.2} s (it gives audio once the utterance is whole); \
         izwi's first audio takes {:.2}x qwen-tts's time",
        first_audio,
        STREAM_CHUNK_FRAMES.min(prompt.frames),
        whole,
        reference.first_audio_s,
        first_audio / reference.first_audio_s
    );
    let path = dir.join("bench_frames.json");
    let theirs: Vec<Frame> = serde_json::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| format!("reading {}", path.display()))?;
    println!(
        "the same frames as qwen-tts at batch 1: {}",
        if said == theirs {
            "yes".to_string()
        } else {
            let same = said.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
            format!("no, they part after {same} frames")
        }
    );
    Ok(())
}

/// The torch dtype qwen-tts runs in: the one the engine multiplies the bf16
/// checkpoint it makes in on this CPU ([`Qwen3TtsExecutor::products_dtype`]).
fn reference_dtype() -> &'static str {
    if bf16_weights::available() {
        "bfloat16"
    } else {
        "float32"
    }
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::BF16 => "bfloat16 (sums in float32)",
        _ => "float32",
    }
}

/// Makes the checkpoint in `out` and times qwen-tts on it.
fn reference_run(
    python: &Path,
    out: &Path,
    shape: &str,
    args: &Qwen3TtsBenchArgs,
) -> Result<Reference> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bench_qwen3_tts_reference.py");
    eprintln!("qwen-tts: making the checkpoint and speaking with it");
    let sizes: Vec<String> = args.batch_sizes.iter().map(|b| b.to_string()).collect();
    let mut command = Command::new(python);
    command
        .arg(&script)
        .arg("--out")
        .arg(out)
        .args(["--shape", shape])
        .args(["--batch-sizes", &sizes.join(",")])
        .args(["--frames", &args.frames.to_string()])
        .args(["--text-tokens", &args.text_tokens.to_string()])
        .args(["--dtype", reference_dtype()]);
    super::process::reference_json(command)
}

/// The engine on the checkpoint, its requests' handle and the type its products are
/// computed in.
fn engine(dir: &Path, batch: usize) -> Result<(EngineCore, Qwen3TtsRequests, DType)> {
    let executor = Qwen3TtsExecutor::from_dir(dir, DType::F32, &Device::Cpu)?;
    let requests = executor.requests();
    let products = executor.products_dtype();
    let config = EngineCoreConfig {
        max_batch_size: batch,
        ..EngineCoreConfig::default()
    };
    Ok((
        EngineCore::new(config, Box::new(executor))?,
        requests,
        products,
    ))
}

fn params(prompt: &BenchPrompt) -> GenerationParams {
    GenerationParams {
        // The frame of the last token is completed one step later: a token more.
        max_tokens: prompt.frames + 1,
        repetition_penalty: prompt.repetition_penalty,
        ..GenerationParams::default()
    }
}

fn speech_prompt(prompt: &BenchPrompt) -> SpeechPrompt {
    SpeechPrompt {
        text_ids: prompt.text_ids.clone(),
        language: Some(prompt.language.clone()),
        speaker_embedding: None,
        speaker: None,
        instruct_ids: None,
        reference: None,
        // As the reference run enters its text (tests/fixtures/bench_qwen3_tts_reference.py).
        whole_text: false,
    }
}

/// Frames per second of `batch` utterances spoken together, prompts included.
fn frames_per_sec(dir: &Path, prompt: &BenchPrompt, batch: usize) -> Result<f64> {
    let (mut core, requests, _) = engine(dir, batch)?;
    let mut receivers: Vec<Receiver<Frame>> = Vec::new();
    let started = Instant::now();
    for _ in 0..batch {
        let (request, frames) = requests.prepare(
            speech_prompt(prompt),
            params(prompt),
            &GenerationParams::default(),
        )?;
        core.add_request(request)?;
        receivers.push(frames);
    }
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            if let FinishReason::Failed(why) = out.finish_reason {
                bail!("an utterance failed: {why}");
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let frames: usize = receivers.iter().map(|r| r.try_iter().count()).sum();
    ensure!(
        frames == batch * prompt.frames,
        "{frames} frames at batch {batch}, not {} each",
        prompt.frames
    );
    Ok(frames as f64 / seconds)
}

/// Seconds to the first audio of one utterance (its first chunk decoded, as `Qwen3Tts`
/// streams it), and to all of it; its frames; and the type its products were
/// computed in.
fn first_audio(dir: &Path, prompt: &BenchPrompt) -> Result<(f64, f64, Vec<Frame>, DType)> {
    let (mut core, requests, products) = engine(dir, 1)?;
    let codec = Arc::new(CodecDecoder::from_dir(
        &dir.join("speech_tokenizer"),
        &Device::Cpu,
    )?);
    let mut stream = CodecStream::new(codec, STREAM_CHUNK_FRAMES);
    let started = Instant::now();
    let (request, frames) = requests.prepare(
        speech_prompt(prompt),
        params(prompt),
        &GenerationParams::default(),
    )?;
    core.add_request(request)?;
    let mut first = None;
    let mut said = Vec::new();
    while core.has_unfinished() {
        core.step();
        for frame in frames.try_iter() {
            said.push(frame.clone());
            if stream.push(frame)?.is_some() && first.is_none() {
                first = Some(started.elapsed().as_secs_f64());
            }
        }
    }
    let last = stream.finish()?;
    let whole = started.elapsed().as_secs_f64();
    ensure!(
        first.is_some() || !last.is_empty(),
        "the utterance gave no audio"
    );
    Ok((first.unwrap_or(whole), whole, said, products))
}
