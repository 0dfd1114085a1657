//! `izwi backend`: where transcription, speech and chat run. The key is read from
//! standard input (never an argument, which other users can see) and never printed.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use izwi_runtime::{NoEvents, RemoteSettings};

#[derive(Subcommand)]
pub enum BackendCommand {
    /// Which backend is in use (the default).
    Show,
    /// Send transcription, speech and chat to an OpenAI-compatible server from now on.
    Set {
        /// Its OpenAI base URL, such as http://127.0.0.1:8000/v1.
        url: String,
        /// Read the server's API key from standard input (one line).
        #[arg(long)]
        key_stdin: bool,
    },
    /// Run everything on this machine again (the stored address and key are removed).
    Local,
}

pub fn run(data_dir: Option<PathBuf>, command: Option<BackendCommand>) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    match command.unwrap_or(BackendCommand::Show) {
        BackendCommand::Show => match runtime.remote_backend() {
            Some(remote) => println!(
                "remote: {} ({})",
                remote.url,
                if remote.has_key {
                    "with an API key"
                } else {
                    "no API key"
                }
            ),
            None => println!("local: this machine ({})", runtime.device()),
        },
        BackendCommand::Set { url, key_stdin } => {
            let api_key = if key_stdin {
                let stdin = std::io::stdin();
                if stdin.is_terminal() {
                    eprintln!("API key (one line):");
                }
                let mut key = String::new();
                stdin
                    .lock()
                    .read_line(&mut key)
                    .context("reading the API key from standard input")?;
                let key = key.trim().to_string();
                if key.is_empty() {
                    bail!("no API key on standard input");
                }
                Some(key)
            } else {
                None
            };
            tokio.block_on(runtime.set_remote_backend(Some(RemoteSettings { url, api_key })))?;
            let remote = tokio
                .block_on(runtime.remote_setting())?
                .context("the setting was not kept")?;
            println!("remote: {}", remote.url);
        }
        BackendCommand::Local => {
            tokio.block_on(runtime.set_remote_backend(None))?;
            println!("local: this machine");
        }
    }
    Ok(())
}
