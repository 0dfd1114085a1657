//! `izwi history [--search TEXT] [--show JOB]`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use izwi_runtime::{
    BatchDetail, BatchLineStatus, ExportFormat, JobDetail, JobFilter, NoEvents, SpeechDetail,
    VoiceUsed,
};

use crate::format::{clock, local_time};

#[derive(Args)]
pub struct HistoryArgs {
    /// Search every transcript for these words (the last may be the start of a word).
    #[arg(long, conflicts_with = "show")]
    search: Option<String>,
    /// Print what this job made: a transcript; a speech job's text, voice and audio; a
    /// batch's lines and files.
    #[arg(long)]
    show: Option<i64>,
    /// Format of --show for a transcript.
    #[arg(long, default_value = "txt", value_name = "txt|srt|vtt|json")]
    format: ExportFormat,
    /// At most this many rows.
    #[arg(long, default_value_t = 50)]
    limit: i64,
    /// As JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(data_dir: Option<PathBuf>, args: HistoryArgs) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    tokio.block_on(async {
        if let Some(job_id) = args.show {
            let detail = runtime.job_detail(job_id).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&detail)?);
                return Ok(());
            }
            match &detail {
                JobDetail::Transcript(t) => match &t.transcript {
                    Some(record) => {
                        let transcript = runtime.transcript_for_export(record.id).await?;
                        print!("{}", args.format.render(&transcript));
                    }
                    None => bail!("job {job_id} has no transcript (it is {})", t.job.status),
                },
                JobDetail::Speech(speech) => print!("{}", speech_text(speech)),
                JobDetail::Batch(batch) => print!("{}", batch_text(batch)),
                JobDetail::Chat(chat) => match &chat.job.output {
                    Some(reply) => println!("{reply}"),
                    None => bail!("job {job_id} has no reply (it is {})", chat.job.status),
                },
            }
            return Ok(());
        }
        if let Some(text) = &args.search {
            let hits = runtime.search(text, args.limit).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&hits)?);
            } else if hits.is_empty() {
                eprintln!("no transcript mentions {text:?}");
            } else {
                for hit in hits {
                    let job = hit.job_id.map(|j| j.to_string()).unwrap_or("-".into());
                    println!(
                        "{job:>5}  {:<30.30}  {:>7}  {}",
                        hit.title,
                        hit.start.map(clock).unwrap_or_else(|| "title".into()),
                        hit.snippet
                    );
                }
            }
            return Ok(());
        }
        let jobs = runtime
            .jobs(&JobFilter {
                limit: args.limit,
                ..JobFilter::default()
            })
            .await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&jobs)?);
            return Ok(());
        }
        if jobs.is_empty() {
            eprintln!("no jobs yet: `izwi transcribe FILE` starts one");
            return Ok(());
        }
        println!(
            "{:>5}  {:<11} {:<11} {:<16}  {:>6}  INPUT",
            "JOB", "STATUS", "KIND", "CREATED", "RTF"
        );
        for job in jobs {
            let rtf = job
                .metrics
                .rtf
                .map(|r| format!("{r:.3}"))
                .unwrap_or("-".into());
            println!(
                "{:>5}  {:<11} {:<11} {:<16}  {:>6}  {}",
                job.id,
                format!("{:?}", job.status).to_lowercase(),
                job.kind.as_str(),
                local_time(job.created_at),
                rtf,
                job.input
            );
            if let Some(error) = &job.error {
                println!("{:>5}  {error}", "");
            }
        }
        Ok(())
    })
}

fn heading(job: &izwi_runtime::Job, what: &str) -> String {
    let mut out = format!(
        "Job {} · {what} · {} · {}\n",
        job.id,
        job.status,
        local_time(job.created_at)
    );
    if let Some(error) = &job.error {
        out.push_str(&format!("Error:    {error}\n"));
    }
    out
}

fn voice_lines(voice: &VoiceUsed) -> String {
    let name = match &voice.name {
        Some(name) => name.clone(),
        None => voice.requested.clone(),
    };
    let model = voice.model_id.as_deref().unwrap_or("-");
    let s = &voice.settings;
    let mut settings = format!("speed {}", s.speed);
    if s.pitch != 0.0 {
        settings.push_str(&format!(", pitch {:+} semitones", s.pitch));
    }
    if let Some(v) = s.noise_scale {
        settings.push_str(&format!(", noise scale {v}"));
    }
    if let Some(v) = s.noise_w {
        settings.push_str(&format!(", noise w {v}"));
    }
    if let Some(v) = s.speaker {
        settings.push_str(&format!(", speaker {v}"));
    }
    format!("Voice:    {name} ({model})\nSettings: {settings}\n")
}

fn speech_text(speech: &SpeechDetail) -> String {
    let mut out = heading(&speech.job, "speak");
    out.push_str(&voice_lines(&speech.voice));
    match (&speech.audio_path, speech.audio_exists) {
        (Some(path), true) => out.push_str(&format!("Audio:    {path}\n")),
        (Some(path), false) => out.push_str(&format!("Audio:    {path} (no longer there)\n")),
        (None, _) => out.push_str("Audio:    none yet\n"),
    }
    if let Some(seconds) = speech.job.metrics.audio_seconds {
        out.push_str(&format!("Length:   {}\n", clock(seconds)));
    }
    match &speech.text_file {
        Some(file) => out.push_str(&format!("Text:     read from {file}\n")),
        None => {
            let more = if speech.text_complete { "" } else { "…" };
            out.push_str(&format!("Text:\n{}{more}\n", speech.text));
        }
    }
    out
}

fn batch_text(batch: &BatchDetail) -> String {
    let mut out = heading(&batch.job, "speak_batch");
    out.push_str(&voice_lines(&batch.voice));
    out.push_str(&format!("Folder:   {}\n", batch.output_dir));
    if let Some(manifest) = &batch.manifest_path {
        out.push_str(&format!("Manifest: {manifest}\n"));
    }
    out.push_str(&format!(
        "\n{:>5}  {:<12} {:>7}  TEXT\n",
        "LINE", "FILE", "LENGTH"
    ));
    for line in &batch.lines {
        let file = match (&line.file, line.status) {
            (Some(file), BatchLineStatus::Made) => file_name(file),
            (Some(file), _) => format!("{} (missing)", file_name(file)),
            (None, _) => "not made".into(),
        };
        let seconds = line
            .seconds
            .map(|s| format!("{s:.2}s"))
            .unwrap_or("-".into());
        let text = line.text.as_deref().unwrap_or("");
        out.push_str(&format!(
            "{:>5}  {file:<12} {seconds:>7}  {text}\n",
            line.line
        ));
    }
    out
}

fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}
