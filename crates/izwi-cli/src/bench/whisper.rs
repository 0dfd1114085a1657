//! `izwi bench whisper`: the real-time factor of Whisper transcription on the engine,
//! beside candle-transformers' own Whisper model doing the same work on the same audio.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::Args;
use izwi_core::engine::{Engine, EngineCoreConfig};
use izwi_core::models::shared::device::select_device;
use izwi_core::models::whisper::{
    TranscribeOptions, Transcriber, Whisper, WhisperExecutor, WhisperTokenizer,
};
use izwi_core::word_errors::{word_error_rate, words};
use izwi_core::{DType, Device};
use serde_json::json;

use super::candle_baseline::CandleWhisper;

#[derive(Args)]
pub struct WhisperBenchArgs {
    /// Whisper model folders in Hugging Face layout, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = ".assets/models/whisper-tiny.en,.assets/models/whisper-base"
    )]
    models: Vec<PathBuf>,
    /// The folder holding librivox/*.wav and jfk.wav (scripts/fetch-assets.sh).
    #[arg(long, default_value = ".assets/speech")]
    speech: PathBuf,
    /// Print JSON (with the transcripts) instead of a table.
    #[arg(long)]
    json: bool,
}

/// As `izwi transcribe`: Whisper's decoder context and 30-second windows.
const MAX_SEQ_LEN: usize = 448;
const WINDOW_SECONDS: f32 = 30.0;
const SAMPLE_RATE: f64 = 16_000.0;
/// The long input is the LibriVox clips joined, repeated until it lasts this long, so it
/// spans several windows.
const LONG_MIN_SECONDS: f64 = 60.0;

/// One benchmark input: recordings each transcribed as a file of its own.
struct Input {
    name: String,
    files: Vec<Vec<f32>>,
}

impl Input {
    fn seconds(&self) -> f64 {
        self.files.iter().map(|f| f.len() as f64).sum::<f64>() / SAMPLE_RATE
    }
}

/// One model on one input.
struct Row {
    model: String,
    input: String,
    audio_seconds: f64,
    ours_like_rtf: f64,
    ours_default_rtf: f64,
    candle_rtf: f64,
    ours_like_text: String,
    ours_default_text: String,
    candle_text: String,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.candle_rtf / self.ours_like_rtf
    }

    fn wer(&self) -> f64 {
        word_error_rate(&self.candle_text, &self.ours_like_text)
    }
}

pub fn run(args: WhisperBenchArgs) -> Result<()> {
    ensure!(
        !args.models.is_empty(),
        "--models needs at least one folder"
    );
    let inputs = load_inputs(&args.speech)?;
    let device = select_device();
    let runtime = tokio::runtime::Runtime::new()?;
    let mut rows = Vec::new();
    for dir in &args.models {
        rows.extend(bench_model(dir, &inputs, &device, &runtime)?);
    }
    if args.json {
        print_json(&rows)?;
    } else {
        print_table(&rows, &device);
    }
    Ok(())
}

/// The long input first, then the LibriVox clips one by one, then jfk.wav.
fn load_inputs(speech: &Path) -> Result<Vec<Input>> {
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
    let clips = paths
        .iter()
        .map(|p| izwi_audio::load_for_asr(p).with_context(|| format!("decoding {}", p.display())))
        .collect::<Result<Vec<_>>>()?;
    let joined = clips.concat();
    ensure!(!joined.is_empty(), "the LibriVox clips hold no audio");
    let mut long = Vec::new();
    let mut repeats = 0;
    while (long.len() as f64) < LONG_MIN_SECONDS * SAMPLE_RATE {
        long.extend_from_slice(&joined);
        repeats += 1;
    }
    let windows = izwi_audio::split_at_silence(&long, WINDOW_SECONDS).len();
    let jfk_path = speech.join("jfk.wav");
    let jfk = izwi_audio::load_for_asr(&jfk_path)
        .with_context(|| format!("decoding {}", jfk_path.display()))?;
    Ok(vec![
        Input {
            name: format!(
                "long: {} clips joined x{repeats}, {windows} windows",
                clips.len()
            ),
            files: vec![long],
        },
        Input {
            name: format!("{} LibriVox clips one by one*", clips.len()),
            files: clips,
        },
        Input {
            name: "jfk.wav".into(),
            files: vec![jfk],
        },
    ])
}

fn bench_model(
    dir: &Path,
    inputs: &[Input],
    device: &Device,
    runtime: &tokio::runtime::Runtime,
) -> Result<Vec<Row>> {
    let model = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    eprintln!("{model}: loading");
    let tokenizer = Arc::new(
        WhisperTokenizer::from_dir(dir)
            .with_context(|| format!("loading the tokenizer of {}", dir.display()))?,
    );
    let mut baseline = CandleWhisper::load(dir, &tokenizer, device)?;

    // Like-for-like with the baseline: greedy, no timestamps, no temperature fallback.
    let like = TranscribeOptions {
        beam_size: 1,
        timestamps: false,
        temperatures: vec![0.0],
        ..TranscribeOptions::default()
    };
    let defaults = TranscribeOptions::default();

    // One untimed run of each side on the shortest recording, so first-use costs
    // (thread pools, allocator growth, cold caches) land on neither measurement.
    if let Some(shortest) = inputs.iter().flat_map(|i| &i.files).min_by_key(|f| f.len()) {
        let warm_up = std::slice::from_ref(shortest);
        runtime.block_on(ours(dir, &tokenizer, device, warm_up, &like))?;
        candle(&mut baseline, &tokenizer, warm_up)?;
    }

    let mut rows = Vec::new();
    for input in inputs {
        eprintln!("{model}: {}", input.name);
        let (like_seconds, ours_like_text) =
            runtime.block_on(ours(dir, &tokenizer, device, &input.files, &like))?;
        let (default_seconds, ours_default_text) =
            runtime.block_on(ours(dir, &tokenizer, device, &input.files, &defaults))?;
        let (candle_seconds, candle_text) = candle(&mut baseline, &tokenizer, &input.files)?;
        let audio_seconds = input.seconds();
        rows.push(Row {
            model: model.clone(),
            input: input.name.clone(),
            audio_seconds,
            ours_like_rtf: like_seconds / audio_seconds,
            ours_default_rtf: default_seconds / audio_seconds,
            candle_rtf: candle_seconds / audio_seconds,
            ours_like_text,
            ours_default_text,
            candle_text,
        });
    }
    Ok(rows)
}

/// Our side, set up exactly as `izwi transcribe` sets it up.
fn load_ours(
    dir: &Path,
    tokenizer: &Arc<WhisperTokenizer>,
    device: &Device,
) -> Result<Transcriber> {
    let executor = WhisperExecutor::new(
        Whisper::from_dir(dir, DType::F32, device)
            .with_context(|| format!("loading the Whisper model in {}", dir.display()))?,
        Some(tokenizer.special.clone()),
    )?;
    let config = EngineCoreConfig {
        max_seq_len: MAX_SEQ_LEN,
        max_batch_size: 16,
        ..EngineCoreConfig::default()
    };
    let engine = Arc::new(Engine::new(config, Box::new(executor))?);
    Ok(Transcriber::new(engine, tokenizer.clone()))
}

/// Transcribes every file on a fresh engine, all submitted at once as the engine is
/// meant to be used; returns the wall time (model load excluded) and the texts joined
/// in file order. Fresh, because an engine keeps recent encodings and KV blocks of the
/// audio it has seen, which would make a second run over the same audio nearly free.
async fn ours(
    dir: &Path,
    tokenizer: &Arc<WhisperTokenizer>,
    device: &Device,
    files: &[Vec<f32>],
    options: &TranscribeOptions,
) -> Result<(f64, String)> {
    let transcriber = &load_ours(dir, tokenizer, device)?;
    let started = Instant::now();
    let transcripts = futures::future::try_join_all(files.iter().map(|samples| async move {
        let windows: Vec<_> = izwi_audio::split_at_silence(samples, WINDOW_SECONDS)
            .into_iter()
            .map(|w| w.start_sample..w.end_sample)
            .collect();
        transcriber
            .transcribe(samples, &windows, options, |_| {})
            .await
    }))
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let text: Vec<String> = transcripts.iter().map(|t| t.text()).collect();
    Ok((seconds, text.join(" ")))
}

/// Transcribes the files one after another with the candle-transformers baseline, on
/// the same windows as ours; returns the wall time and the texts joined in file order.
fn candle(
    baseline: &mut CandleWhisper,
    tokenizer: &WhisperTokenizer,
    files: &[Vec<f32>],
) -> Result<(f64, String)> {
    let started = Instant::now();
    let mut texts = Vec::new();
    for samples in files {
        let windows: Vec<_> = izwi_audio::split_at_silence(samples, WINDOW_SECONDS)
            .into_iter()
            .map(|w| w.start_sample..w.end_sample)
            .collect();
        let tokens = baseline.transcribe(samples, &windows)?;
        texts.push(tokenizer.decode(&tokens)?.trim().to_string());
    }
    Ok((started.elapsed().as_secs_f64(), texts.join(" ")))
}

fn print_table(rows: &[Row], device: &Device) {
    println!(
        "Whisper real-time factor (wall time / audio time, lower is faster; model load excluded), {}, {} threads",
        if device.is_cpu() { "CPU" } else { "GPU" },
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("ours like-for-like: izwi engine, beam 1, no timestamps, temperature 0 only");
    println!("ours defaults:      izwi engine, beam 5, timestamps, temperature fallback");
    println!(
        "candle:             candle-transformers 0.11.1 whisper::model, greedy, no timestamps, one window after another"
    );
    println!("ratio = candle RTF / ours like-for-like RTF; WER of ours like-for-like against candle's text\n");
    println!(
        "{:<16} {:<40} {:>7} {:>9} {:>9} {:>9} {:>7} {:>13} {:>6}",
        "model",
        "input",
        "audio s",
        "ours l4l",
        "ours def",
        "candle",
        "ratio",
        "words l4l/cdl",
        "WER"
    );
    for row in rows {
        println!(
            "{:<16} {:<40} {:>7.1} {:>9.3} {:>9.3} {:>9.3} {:>6.2}x {:>13} {:>5.1}%",
            row.model,
            row.input,
            row.audio_seconds,
            row.ours_like_rtf,
            row.ours_default_rtf,
            row.candle_rtf,
            row.ratio(),
            format!(
                "{}/{}",
                words(&row.ours_like_text).len(),
                words(&row.candle_text).len()
            ),
            row.wer() * 100.0
        );
    }
    println!(
        "\n* ours: the clips submitted to the engine concurrently, as it is meant to be used; candle: one after the other"
    );
}

fn print_json(rows: &[Row]) -> Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|row| {
            json!({
                "model": row.model,
                "input": row.input,
                "audio_seconds": row.audio_seconds,
                "ours_like_for_like_rtf": row.ours_like_rtf,
                "ours_defaults_rtf": row.ours_default_rtf,
                "candle_transformers_rtf": row.candle_rtf,
                "ratio_candle_to_ours_like_for_like": row.ratio(),
                "words_ours_like_for_like": words(&row.ours_like_text).len(),
                "words_ours_defaults": words(&row.ours_default_text).len(),
                "words_candle_transformers": words(&row.candle_text).len(),
                "wer_ours_like_for_like_vs_candle": row.wer(),
                "text_ours_like_for_like": row.ours_like_text,
                "text_ours_defaults": row.ours_default_text,
                "text_candle_transformers": row.candle_text,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&rows)?);
    Ok(())
}

