//! `izwi transcribe FILE...`: one job per file on the runtime, recorded in history.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use izwi_runtime::{ExportFormat, JobStatus, Runtime, Task, TranscribeRequest, Transcript};

use crate::progress::Bars;

#[derive(Args)]
pub struct TranscribeArgs {
    /// Audio or video files (WAV, FLAC, MP3, OGG, M4A/AAC, ...).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A model id (`izwi models list`), `local/NAME` of an import, or a Whisper folder
    /// in Hugging Face layout; on a remote backend, the server's model name. Default:
    /// the `default_transcribe_model` setting, else the first installed Whisper model;
    /// on a remote backend, `whisper-1`.
    #[arg(long)]
    model: Option<String>,
    /// Spoken language as an ISO code (en, de, ...); detected when omitted.
    #[arg(long)]
    language: Option<String>,
    #[arg(long, value_enum, default_value_t = TaskArg::Transcribe)]
    task: TaskArg,
    #[arg(long, default_value = "txt", value_name = "txt|srt|vtt|json")]
    format: ExportFormat,
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
    /// Beams searched per window at temperature 0; 1 (the default) decodes greedily,
    /// with temperature fallback when the text looks wrong. More beams are slower and
    /// were no more accurate on our test speech (docs/speed.md).
    #[arg(long, default_value_t = 1)]
    beam_size: usize,
    /// Each word's time as well: JSON gets a `words` list per segment, SRT and VTT
    /// show one cue per word with the word underlined as it is said.
    #[arg(long)]
    word_timestamps: bool,
    /// Voxtral Realtime only: how far its text runs behind the audio, in milliseconds
    /// (a multiple of 80 up to 2400). Default: the checkpoint's (480 for Mistral's).
    #[arg(long)]
    delay_ms: Option<u32>,
}

#[derive(Clone, Copy, ValueEnum)]
enum TaskArg {
    Transcribe,
    /// Translate into English.
    Translate,
}

pub fn run(data_dir: Option<PathBuf>, args: TranscribeArgs) -> Result<()> {
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
    let (tokio, runtime) = crate::open(data_dir, Arc::new(Bars::new()))?;
    let on_ctrl_c = runtime.clone();
    tokio.spawn(async move {
        // Cancelled jobs are recorded as such, not left to be found interrupted.
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.shutdown().await;
        }
    });
    tokio.block_on(transcribe_all(&runtime, &args))
}

async fn transcribe_all(runtime: &Runtime, args: &TranscribeArgs) -> Result<()> {
    let model_id = match &args.model {
        Some(id) => id.clone(),
        None => runtime.default_job_transcribe_model().await?,
    };
    let mut jobs = Vec::new();
    for file in &args.files {
        let request = TranscribeRequest {
            language: args.language.clone(),
            task: match args.task {
                TaskArg::Transcribe => Task::Transcribe,
                TaskArg::Translate => Task::Translate,
            },
            timestamps: !args.no_timestamps,
            initial_prompt: args.prompt.clone(),
            beam_size: args.beam_size.max(1),
            word_timestamps: args.word_timestamps,
            delay_ms: args.delay_ms,
            ..TranscribeRequest::new(file.clone(), model_id.clone())
        };
        jobs.push((file, runtime.transcribe(request).await?));
    }
    let several = args.files.len() > 1;
    let mut failed = 0;
    for (file, job) in jobs {
        let job = runtime.wait_job(job.id).await?;
        match job.status {
            JobStatus::Done => {
                let record = runtime
                    .transcript_for_job(job.id)
                    .await?
                    .with_context(|| format!("job {} finished without a transcript", job.id))?;
                let transcript = runtime.transcript_for_export(record.id).await?;
                write_output(args, file, &transcript, several)?;
            }
            status => {
                failed += 1;
                let reason = job
                    .error
                    .unwrap_or_else(|| format!("{status:?}").to_lowercase());
                eprintln!("{}: {reason}", file.display());
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} files failed", args.files.len());
    }
    Ok(())
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
