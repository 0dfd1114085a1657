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
    /// Where to write: a file for one input, a folder for several (each file's
    /// transcript named after it). Standard output when omitted. Files already there
    /// are kept: the run is refused unless --force.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Replace transcripts already at --output.
    #[arg(long, requires = "output")]
    force: bool,
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
    // Every target is checked before any work: a refusal after an hour of
    // transcription would waste it.
    let targets = targets(runtime, args)?;
    let model_id = match &args.model {
        Some(id) => id.clone(),
        None => runtime.default_job_transcribe_model().await?,
    };
    let mut jobs = Vec::new();
    for (file, target) in args.files.iter().zip(targets) {
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
        jobs.push((file, target, runtime.transcribe(request).await?));
    }
    let several = args.files.len() > 1;
    let mut failed = 0;
    for (file, target, job) in jobs {
        let job = runtime.wait_job(job.id).await?;
        match job.status {
            JobStatus::Done => {
                let record = runtime
                    .transcript_for_job(job.id)
                    .await?
                    .with_context(|| format!("job {} finished without a transcript", job.id))?;
                let transcript = runtime.transcript_for_export(record.id).await?;
                write_output(args, file, target.as_deref(), &transcript, several)?;
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

/// Where each file's transcript goes (None: standard output), every one checked: no
/// two files to one name, none onto a file being transcribed or into the data folder,
/// and none over a file already there unless --force.
fn targets(runtime: &Runtime, args: &TranscribeArgs) -> Result<Vec<Option<PathBuf>>> {
    let Some(out) = &args.output else {
        return Ok(vec![None; args.files.len()]);
    };
    let folder = args.files.len() > 1 || out.is_dir();
    // The checks need the folder; one made for a run that is refused goes again.
    let made = folder && !out.exists();
    if folder {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let checked = check_targets(runtime, args, out, folder);
    if checked.is_err() && made {
        let _ = std::fs::remove_dir(out);
    }
    Ok(checked?.into_iter().map(Some).collect())
}

fn check_targets(
    runtime: &Runtime,
    args: &TranscribeArgs,
    out: &Path,
    folder: bool,
) -> Result<Vec<PathBuf>> {
    let targets: Vec<PathBuf> = if folder {
        args.files
            .iter()
            .map(|file| {
                // The whole name and the format's extension: `take.v1.wav` becomes
                // `take.v1.txt`, not `take.txt`.
                let mut name = file.file_stem().unwrap_or_default().to_os_string();
                name.push(".");
                name.push(args.format.extension());
                out.join(name)
            })
            .collect()
    } else {
        vec![out.to_path_buf()]
    };
    let inputs: Vec<PathBuf> = args
        .files
        .iter()
        .filter_map(|f| f.canonicalize().ok())
        .collect();
    let mut seen: Vec<(String, &Path)> = Vec::new();
    for (target, file) in targets.iter().zip(&args.files) {
        // One name to the filesystem: case aside where it ignores case.
        let name = std::path::absolute(target)?.to_string_lossy().into_owned();
        let name = if cfg!(any(target_os = "macos", target_os = "windows")) {
            name.to_lowercase()
        } else {
            name
        };
        if let Some((_, first)) = seen.iter().find(|(t, _)| *t == name) {
            bail!(
                "{} and {} would both be written to {}: transcribe them into separate folders",
                first.display(),
                file.display(),
                target.display()
            );
        }
        if target.canonicalize().is_ok_and(|t| inputs.contains(&t)) {
            bail!("{} is one of the files to transcribe", target.display());
        }
        runtime.check_output_file(target, args.force)?;
        seen.push((name, file));
    }
    Ok(targets)
}

fn write_output(
    args: &TranscribeArgs,
    file: &Path,
    target: Option<&Path>,
    transcript: &Transcript,
    several: bool,
) -> Result<()> {
    let text = args.format.render(transcript);
    let Some(target) = target else {
        if several {
            println!("== {}", file.display());
        }
        print!("{text}");
        return Ok(());
    };
    if args.force {
        izwi_runtime::write_atomically(target, text.as_bytes())?;
    } else {
        izwi_runtime::write_new_atomically(target, text.as_bytes())?;
    }
    eprintln!(
        "{} → {} (RTF {:.3})",
        file.display(),
        target.display(),
        transcript.rtf
    );
    Ok(())
}
