//! `izwi speak`: text to a WAV in a voice, or a script to one WAV per line.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::{ArgGroup, Args};
use izwi_runtime::{
    read_lines, JobKind, JobStatus, Qwen3SpeakRequest, RetakeRequest, Runtime, SpeakBatchRequest,
    SpeakFileRequest, SpeakRequest, DEFAULT_MAX_WER,
};

use crate::progress::Bars;

#[derive(Args)]
#[command(group(
    ArgGroup::new("input")
        .required(true)
        .args(["text", "file", "lines", "retake_flagged"])
))]
pub struct SpeakArgs {
    /// A voice from `izwi voices` (id or name), a voice model's id, a Piper .onnx file, or
    /// a Qwen3-TTS or LFM2-Audio checkpoint folder (docs/qwen3-tts.md,
    /// docs/lfm2-audio.md).
    #[arg(long)]
    voice: String,
    /// What to say (up to the limit of one request; longer texts go in --file).
    #[arg(long)]
    text: Option<String>,
    /// A UTF-8 text file to read out, as one recording: any length, read as it is
    /// spoken.
    #[arg(long)]
    file: Option<PathBuf>,
    /// A script: a .txt file (one line each) or a .csv file (its `text` column, else its
    /// first); writes one WAV per line and manifest.csv into --output-dir.
    #[arg(long)]
    lines: Option<PathBuf>,
    /// The WAV to write (with --text or --file). A file already there is kept: the
    /// request is refused unless --force.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Replace --output when a file is already there.
    #[arg(long, requires = "output")]
    force: bool,
    /// The folder for a script's WAVs (with --lines), or of the batch to re-take (with
    /// --retake-flagged).
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// Say again, with a new seed, the lines of the batch in --output-dir that its
    /// self-check flagged; they are checked again.
    #[arg(long, requires = "output_dir")]
    retake_flagged: bool,
    /// The self-check's threshold (with --lines or --retake-flagged): a line whose
    /// Whisper transcript has a higher word error rate is flagged (default 0.25).
    #[arg(long)]
    max_wer: Option<f64>,
    /// 1 is the voice's normal pace; 0.25 to 4.
    #[arg(long)]
    speed: Option<f32>,
    /// A recording of a voice to clone (with a Qwen3-TTS Base checkpoint as --voice, and
    /// --text): its speaker embedding is what is cloned, or with --reference-text the
    /// recording itself.
    #[arg(long, requires = "text")]
    reference_audio: Option<PathBuf>,
    /// What is said in --reference-audio: the voice is then cloned in context, from the
    /// recording and its transcript together.
    #[arg(long, requires = "reference_audio")]
    reference_text: Option<String>,
    /// A preset speaker of a Qwen3-TTS CustomVoice checkpoint, or a built-in voice of an
    /// LFM2-Audio model (us-male, us-female, uk-male, uk-female); with --text.
    #[arg(long, requires = "text")]
    speaker: Option<String>,
    /// How to speak (Qwen3-TTS CustomVoice), or the voice to design (VoiceDesign); with
    /// --text.
    #[arg(long, requires = "text")]
    instructions: Option<String>,
    /// The language of a Qwen3-TTS checkpoint to speak in (with --text); the model tells
    /// when not given.
    #[arg(long, requires = "text")]
    language: Option<String>,
    /// Seeds a Qwen3-TTS or LFM2-Audio voice's sampling (with --text): the same seed says
    /// the same text the same way.
    #[arg(long, requires = "text")]
    seed: Option<u64>,
}

impl SpeakArgs {
    /// Whether the request has what only a Qwen3-TTS (or, of it, an LFM2-Audio) voice
    /// takes.
    fn qwen3(&self) -> bool {
        self.reference_audio.is_some()
            || self.speaker.is_some()
            || self.instructions.is_some()
            || self.language.is_some()
            || self.seed.is_some()
    }
}

pub fn run(data_dir: Option<PathBuf>, args: SpeakArgs) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(Bars::new()))?;
    let on_ctrl_c = runtime.clone();
    tokio.spawn(async move {
        // A cancelled batch keeps its finished files and is recorded as cancelled.
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.shutdown().await;
        }
    });
    tokio.block_on(speak(&runtime, args))
}

async fn speak(runtime: &Runtime, args: SpeakArgs) -> Result<()> {
    let job = if args.retake_flagged {
        let Some(output_dir) = args.output_dir.clone() else {
            bail!("--retake-flagged needs --output-dir, the batch's folder");
        };
        runtime
            .retake_flagged(RetakeRequest {
                voice: args.voice.clone(),
                output_dir,
                speed: args.speed,
                max_wer: args.max_wer,
            })
            .await?
    } else if let Some(script) = &args.lines {
        let Some(output_dir) = args.output_dir.clone() else {
            bail!("--lines needs --output-dir, the folder for the WAVs");
        };
        let lines = read_lines(script)?;
        runtime
            .speak_batch(SpeakBatchRequest {
                voice: args.voice.clone(),
                lines,
                output_dir,
                speed: args.speed,
                max_wer: args.max_wer,
            })
            .await?
    } else {
        let Some(output) = args.output.clone() else {
            bail!("--output OUT.wav is needed: where to write the speech");
        };
        match (&args.text, &args.file) {
            (Some(text), _) if args.qwen3() => {
                runtime
                    .speak_qwen3(Qwen3SpeakRequest {
                        voice: args.voice.clone(),
                        text: text.clone(),
                        reference_audio: args.reference_audio.clone(),
                        reference_text: args.reference_text.clone(),
                        speaker: args.speaker.clone(),
                        instructions: args.instructions.clone(),
                        language: args.language.clone(),
                        seed: args.seed,
                        output: Some(output),
                        replace: args.force,
                    })
                    .await?
            }
            (Some(text), _) => {
                runtime
                    .speak(SpeakRequest {
                        voice: args.voice.clone(),
                        text: text.clone(),
                        output: Some(output),
                        replace: args.force,
                        speed: args.speed,
                    })
                    .await?
            }
            (None, Some(file)) => {
                runtime
                    .speak_file(SpeakFileRequest {
                        voice: args.voice.clone(),
                        file: file.clone(),
                        output: Some(output),
                        replace: args.force,
                        speed: args.speed,
                    })
                    .await?
            }
            (None, None) => unreachable!("clap requires one input"),
        }
    };
    let job = runtime.wait_job(job.id).await?;
    match job.status {
        JobStatus::Done => {
            let seconds = job.metrics.audio_seconds.unwrap_or(0.0);
            let rtf = job.metrics.rtf.unwrap_or(0.0);
            println!(
                "{} ({seconds:.1} s of speech, {:.1}x real time)",
                job.output.clone().unwrap_or_default(),
                if rtf > 0.0 { 1.0 / rtf } else { 0.0 }
            );
            if job.kind == JobKind::SpeakBatch {
                let dir = PathBuf::from(job.output.unwrap_or_default());
                report_check(runtime, &dir, args.max_wer.unwrap_or(DEFAULT_MAX_WER))?;
            }
            Ok(())
        }
        JobStatus::Cancelled => bail!(
            "cancelled; the lines finished so far are in {} (see its manifest.csv)",
            job.input
        ),
        status => bail!(
            "speech {status}: {}",
            job.error.unwrap_or_else(|| "no reason recorded".into())
        ),
    }
}

/// What the batch's self-check found.
fn report_check(runtime: &Runtime, dir: &std::path::Path, max_wer: f64) -> Result<()> {
    let rows = runtime.batch_manifest(dir)?;
    if rows.iter().all(|r| r.wer.is_none()) {
        println!(
            "not checked: no Whisper model is installed to transcribe the lines back \
             (`izwi models download whisper-base`)"
        );
        return Ok(());
    }
    let flagged: Vec<String> = rows
        .iter()
        .filter(|r| r.flagged)
        .map(|r| r.file.clone())
        .collect();
    if flagged.is_empty() {
        println!(
            "checked: every line's transcript is within {:.0}% word errors of its text",
            max_wer * 100.0
        );
    } else {
        println!(
            "checked: {} of {} lines flagged (over {:.0}% word errors): {}; \
             `--retake-flagged` says them again",
            flagged.len(),
            rows.len(),
            max_wer * 100.0,
            flagged.join(", ")
        );
    }
    Ok(())
}
