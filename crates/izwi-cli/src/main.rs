//! `izwi`: Izwi's capabilities on the command line. Parses, calls the runtime, formats.

mod backend;
mod bench;
mod chat;
mod chats;
mod convert;
mod devices;
mod format;
mod history;
mod listen;
mod models;
mod progress;
mod serve;
mod speak;
mod transcribe;
mod voices;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::Result;
use clap::{Parser, Subcommand};
use izwi_runtime::{BackendChoice, EventSink, Runtime, RuntimeConfig, RuntimeError};

#[derive(Parser)]
#[command(
    name = "izwi",
    version,
    about = "Local speech studio: transcription and speech on your own machine"
)]
struct Cli {
    /// Where Izwi keeps its database, imported models and audio (default: the
    /// platform's app data folder). Models from the hub live in the Hugging Face cache
    /// (HF_HOME).
    #[arg(long, global = true, env = "IZWI_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where transcription, speech and chat run for this command: an OpenAI-compatible
    /// server's base URL (http://host:8000/v1; its key is the one `izwi backend set`
    /// stored for it), or `local` for this machine. Default: `izwi backend`'s setting.
    #[arg(long, global = true, env = "IZWI_BACKEND", value_name = "URL|local")]
    backend: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Where transcription, speech and chat run: this machine, or a remote
    /// OpenAI-compatible server (another `izwi serve`, vLLM, vLLM-Omni).
    Backend {
        #[command(subcommand)]
        command: Option<backend::BackendCommand>,
    },
    /// Measure performance.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Chat with a GGUF chat model: typed, or spoken turns from recordings answered aloud.
    Chat(chat::ChatArgs),
    /// The stored chats, with the ids `izwi chat --resume` takes.
    Chats(chats::ChatsArgs),
    /// The microphones and speakers voice chat can use.
    Devices(devices::DevicesArgs),
    /// Convert checkpoints from other tools.
    #[command(subcommand)]
    Convert(convert::ConvertCommand),
    /// Transcribe audio or video files with a Whisper model.
    Transcribe(transcribe::TranscribeArgs),
    /// Live dictation: text from the microphone (or a file played in real time) as it
    /// is spoken.
    Listen(listen::ListenArgs),
    /// List, download, import and remove models.
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Past jobs and transcripts: list, search, show.
    History(history::HistoryArgs),
    /// Serve Izwi's OpenAI-compatible API (transcription, speech, chat) on this machine.
    Serve(serve::ServeArgs),
    /// Say text in a voice, to a WAV; or a script, one WAV per line.
    Speak(speak::SpeakArgs),
    /// The voice library: list, add, clone, design, rename, remove.
    Voices {
        #[command(subcommand)]
        command: Option<voices::VoicesCommand>,
    },
}

fn main() -> ExitCode {
    izwi_core::tune_for_inference();
    // Symphonia logs at error level for files we then report ourselves, with context.
    let default_filter = "warn,symphonia_core=off,symphonia=off";
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Models(_)
            | Command::Voices { .. }
            | Command::History(_)
            | Command::Chats(_)
            | Command::Devices(_)
            | Command::Backend { .. }
    ) {
        end_quietly_on_closed_pipe();
    }
    let data_dir = cli.data_dir;
    let _ = BACKEND.set(match cli.backend.as_deref().map(str::trim) {
        None | Some("") => BackendChoice::Stored,
        Some("local") => BackendChoice::Local,
        Some(url) => BackendChoice::Url(url.to_owned()),
    });
    let result = match cli.command {
        Command::Backend { command } => backend::run(data_dir, command),
        Command::Bench(command) => bench::run(data_dir, command),
        Command::Chat(args) => chat::run(data_dir, args),
        Command::Devices(args) => devices::run(args),
        Command::Chats(args) => chats::run(data_dir, args),
        Command::Convert(command) => convert::run(command),
        Command::Transcribe(args) => transcribe::run(data_dir, args),
        Command::Listen(args) => listen::run(data_dir, args),
        Command::Models(command) => models::run(data_dir, command),
        Command::History(args) => history::run(data_dir, args),
        Command::Serve(args) => serve::run(data_dir, args),
        Command::Speak(args) => speak::run(data_dir, args),
        Command::Voices { command } => voices::run(data_dir, command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let exists = e.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<RuntimeError>(),
                    Some(RuntimeError::OutputExists(_))
                )
            });
            let hint = if exists { " (--force replaces it)" } else { "" };
            eprintln!("error: {e:#}{hint}");
            ExitCode::FAILURE
        }
    }
}

/// A listing piped into `head` ends when the reader has seen enough, as other Unix
/// tools do, instead of failing on its next line (Rust ignores SIGPIPE, so printing
/// would panic). Only listings: a dictation, a chat, a transcription or the server goes
/// on when its reader stops (their jobs and recordings are saved whatever is printed).
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restores the signal's default action before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The async runtime for a command, and Izwi's runtime on it.
pub fn open(
    data_dir: Option<PathBuf>,
    events: Arc<dyn EventSink>,
) -> Result<(tokio::runtime::Runtime, Runtime)> {
    let data_dir = data_dir.unwrap_or_else(RuntimeConfig::default_data_dir);
    open_with(RuntimeConfig::new(data_dir), events)
}

/// The backend `--backend` chose for this command.
static BACKEND: OnceLock<BackendChoice> = OnceLock::new();

/// [`open`] with settings of its own (a backend it names is kept; else `--backend`'s).
pub fn open_with(
    mut config: RuntimeConfig,
    events: Arc<dyn EventSink>,
) -> Result<(tokio::runtime::Runtime, Runtime)> {
    if config.backend == BackendChoice::Stored {
        config.backend = BACKEND.get().cloned().unwrap_or_default();
    }
    let tokio = tokio::runtime::Runtime::new()?;
    let runtime = tokio.block_on(Runtime::open(config, events))?;
    Ok((tokio, runtime))
}
