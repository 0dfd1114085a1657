//! `izwi history [--search TEXT] [--show JOB]`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use izwi_runtime::{JobFilter, NoEvents};

use crate::format::{clock, local_time, Format};

#[derive(Args)]
pub struct HistoryArgs {
    /// Search every transcript for these words (the last may be the start of a word).
    #[arg(long, conflicts_with = "show")]
    search: Option<String>,
    /// Print the transcript of this job.
    #[arg(long)]
    show: Option<i64>,
    /// Format of --show.
    #[arg(long, value_enum, default_value_t = Format::Txt)]
    format: Format,
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
            let Some(record) = runtime.transcript_for_job(job_id).await? else {
                let job = runtime.job(job_id).await?;
                bail!("job {job_id} has no transcript (it is {:?})", job.status);
            };
            let transcript = runtime.transcript_for_export(record.id).await?;
            print!("{}", args.format.render(&transcript));
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
