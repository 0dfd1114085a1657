//! `izwi`: Izwi's capabilities on the command line. Parses, calls the library, formats.

mod bench;
mod convert;
mod transcribe;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "izwi",
    version,
    about = "Local speech studio: transcription, speech and voice chat on your own machine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure performance.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Convert checkpoints from other tools.
    #[command(subcommand)]
    Convert(convert::ConvertCommand),
    /// Transcribe audio or video files with a Whisper model.
    Transcribe(transcribe::TranscribeArgs),
}

fn main() -> ExitCode {
    // Symphonia logs at error level for files we then report ourselves, with context.
    let default_filter = "warn,symphonia_core=off,symphonia=off";
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Bench(command) => bench::run(command),
        Command::Convert(command) => convert::run(command),
        Command::Transcribe(args) => transcribe::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
