//! `izwi transcribe FILE...`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use izwi_core::engine::{Engine, EngineCoreConfig};
use izwi_core::models::shared::device::select_device;
use izwi_core::models::whisper::{
    Task, TranscribeOptions, Transcriber, Whisper, WhisperExecutor, WhisperTokenizer,
};
use izwi_core::transcript::Transcript;
use izwi_core::DType;

#[derive(Args)]
pub struct TranscribeArgs {
    /// Audio or video files (WAV, FLAC, MP3, OGG, M4A/AAC, ...).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A Whisper model folder in Hugging Face layout (see `izwi convert ctranslate2`).
    #[arg(long)]
    model: PathBuf,
    /// Spoken language as an ISO code (en, de, ...); detected when omitted.
    #[arg(long)]
    language: Option<String>,
    #[arg(long, value_enum, default_value_t = TaskArg::Transcribe)]
    task: TaskArg,
    #[arg(long, value_enum, default_value_t = Format::Txt)]
    format: Format,
    /// Where to write: a file for one input, a folder for several. Standard output
    /// when omitted.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Text that primes names and spelling.
    #[arg(long)]
    prompt: Option<String>,
    /// One segment per window instead of the model's timestamps.
    #[arg(long)]
    no_timestamps: bool,
    /// Beams searched per window; 1 decodes greedily (faster, a little less accurate).
    #[arg(long, default_value_t = 5)]
    beam_size: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum TaskArg {
    Transcribe,
    /// Translate into English.
    Translate,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Txt,
    Srt,
    Vtt,
    Json,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Txt => "txt",
            Format::Srt => "srt",
            Format::Vtt => "vtt",
            Format::Json => "json",
        }
    }

    fn render(self, transcript: &Transcript) -> String {
        match self {
            Format::Txt => transcript.to_txt(),
            Format::Srt => transcript.to_srt(),
            Format::Vtt => transcript.to_vtt(),
            Format::Json => transcript.to_json(),
        }
    }
}

/// Whisper's decoder context.
const MAX_SEQ_LEN: usize = 448;
/// Seconds per window, at most Whisper's 30.
const WINDOW_SECONDS: f32 = 30.0;

pub fn run(args: TranscribeArgs) -> Result<()> {
    if args.files.len() > 1 {
        if let Some(out) = &args.output {
            if out.exists() && !out.is_dir() {
                bail!(
                    "--output {} must be a folder when transcribing several files",
                    out.display()
                );
            }
        }
    }
    let device = select_device();
    let tokenizer = Arc::new(
        WhisperTokenizer::from_dir(&args.model)
            .with_context(|| format!("loading the tokenizer of {}", args.model.display()))?,
    );
    let executor = WhisperExecutor::new(
        Whisper::from_dir(&args.model, DType::F32, &device)
            .with_context(|| format!("loading the Whisper model in {}", args.model.display()))?,
        Some(tokenizer.special.clone()),
    )?;
    let config = EngineCoreConfig {
        max_seq_len: MAX_SEQ_LEN,
        max_batch_size: 16,
        ..EngineCoreConfig::default()
    };
    let engine = Arc::new(Engine::new(config, Box::new(executor))?);
    let transcriber = Transcriber::new(engine.clone(), tokenizer);
    let options = TranscribeOptions {
        language: args.language.clone(),
        task: match args.task {
            TaskArg::Transcribe => Task::Transcribe,
            TaskArg::Translate => Task::Translate,
        },
        timestamps: !args.no_timestamps,
        initial_prompt: args.prompt.clone(),
        beam_size: args.beam_size.max(1),
        ..TranscribeOptions::default()
    };

    let runtime = tokio::runtime::Runtime::new()?;
    let bars = MultiProgress::new();
    let results = runtime.block_on(futures::future::join_all(
        args.files
            .iter()
            .map(|file| transcribe_file(&transcriber, file, &options, &bars)),
    ));
    tracing::info!(metrics = ?engine.metrics(), "engine");
    let mut failed = 0;
    let several = args.files.len() > 1;
    for (file, result) in args.files.iter().zip(results) {
        match result {
            Ok(transcript) => write_output(&args, file, &transcript, several)?,
            Err(e) => {
                failed += 1;
                eprintln!("{}: {e:#}", file.display());
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} files failed", args.files.len());
    }
    Ok(())
}

async fn transcribe_file(
    transcriber: &Transcriber,
    file: &Path,
    options: &TranscribeOptions,
    bars: &MultiProgress,
) -> Result<Transcript> {
    let path = file.to_path_buf();
    let samples = tokio::task::spawn_blocking(move || izwi_audio::load_for_asr(&path))
        .await?
        .with_context(|| format!("decoding {}", file.display()))?;
    let windows: Vec<_> = izwi_audio::split_at_silence(&samples, WINDOW_SECONDS)
        .into_iter()
        .map(|w| w.start_sample..w.end_sample)
        .collect();
    let bar = bars.add(ProgressBar::new(windows.len() as u64));
    bar.set_style(
        ProgressStyle::with_template("{msg:30!} {bar:30} {pos}/{len} windows {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let transcript = transcriber
        .transcribe(&samples, &windows, options, |done, _| {
            bar.set_position(done as u64)
        })
        .await?;
    bar.finish();
    Ok(transcript)
}

fn write_output(
    args: &TranscribeArgs,
    file: &Path,
    transcript: &Transcript,
    several: bool,
) -> Result<()> {
    let text = args.format.render(transcript);
    let Some(out) = &args.output else {
        if several {
            println!("== {}", file.display());
        }
        print!("{text}");
        return Ok(());
    };
    let target = if several || out.is_dir() {
        std::fs::create_dir_all(out)?;
        let stem = file.file_stem().unwrap_or_default();
        out.join(Path::new(stem).with_extension(args.format.extension()))
    } else {
        out.clone()
    };
    std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
    eprintln!(
        "{} → {} (RTF {:.3})",
        file.display(),
        target.display(),
        transcript.rtf
    );
    Ok(())
}
