//! `izwi models list|download|import|rm|verify`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Subcommand;
use izwi_runtime::{CancellationToken, ModelInfo, ModelStatus, NoEvents};

use crate::progress::Bars;

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// The models Izwi knows and the ones imported, with what is installed.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Download a model from the catalog into the Hugging Face cache (resumes where an
    /// earlier download stopped; Ctrl-C cancels).
    Download { id: String },
    /// Import a local model: a Whisper folder (Hugging Face or CTranslate2 layout), a
    /// Piper voice (.onnx with its .onnx.json) or a chat model (.gguf, Llama
    /// architecture).
    Import {
        path: PathBuf,
        /// Its name in Izwi (default: the folder's); it becomes `local/NAME`.
        #[arg(long)]
        name: Option<String>,
    },
    /// Delete a downloaded or imported model (never a folder used in place).
    Rm { id: String },
    /// Check a downloaded model's files against the catalog's pins, or an imported
    /// one's against what was recorded when it was imported.
    Verify { id: String },
    /// The voice activity detector transcription cuts long audio with: without FILE,
    /// whether it is installed; with FILE (silero_vad_16k_op15.onnx from the
    /// silero-vad package, as scripts/fetch-assets.sh fetches it), install it.
    Vad { file: Option<PathBuf> },
}

pub fn run(data_dir: Option<PathBuf>, command: ModelsCommand) -> Result<()> {
    match command {
        ModelsCommand::List { json } => {
            let (_tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
            let models = runtime.models();
            if json {
                println!("{}", serde_json::to_string_pretty(&models)?);
            } else {
                print_table(&models);
            }
            Ok(())
        }
        ModelsCommand::Download { id } => {
            let (tokio, runtime) = crate::open(data_dir, Arc::new(Bars::new()))?;
            let cancel = CancellationToken::new();
            let on_ctrl_c = cancel.clone();
            tokio.spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_ctrl_c.cancel();
                }
            });
            let info = tokio.block_on(runtime.download_model(&id, cancel))?;
            let path = info
                .path
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            eprintln!("{} installed in {path}", info.id);
            Ok(())
        }
        ModelsCommand::Import { path, name } => {
            let (_tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
            let info = runtime.import_model(&path, name.as_deref())?;
            eprintln!(
                "imported {} as {} ({})",
                path.display(),
                info.id,
                human_bytes(info.disk_bytes)
            );
            Ok(())
        }
        ModelsCommand::Rm { id } => {
            let (_tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
            let info = runtime.model(&id)?;
            // A partial download can be removed too.
            if info.status != ModelStatus::Installed && info.disk_bytes == 0 {
                bail!("{id} is not installed");
            }
            let freed = runtime.remove_model(&id)?;
            eprintln!("removed {id}, {} freed", human_bytes(freed));
            Ok(())
        }
        ModelsCommand::Verify { id } => {
            let (_tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
            runtime.verify_model(&id)?;
            eprintln!("{id}: every file matches its checksum");
            Ok(())
        }
        ModelsCommand::Vad { file } => {
            let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
            match file {
                Some(file) => {
                    let installed = tokio.block_on(runtime.install_vad(&file))?;
                    eprintln!("voice activity detector installed: {}", installed.display());
                }
                None if tokio.block_on(runtime.has_vad()) => println!(
                    "installed: {}",
                    izwi_runtime::vad_path(runtime.data_dir()).display()
                ),
                None => println!(
                    "not installed (long audio is cut at its quietest points instead); install it with `izwi models vad silero_vad_16k_op15.onnx`"
                ),
            }
            Ok(())
        }
    }
}

fn print_table(models: &[ModelInfo]) {
    println!(
        "{:<28} {:<10} {:>9}  {:<13} {:<10} NAME",
        "ID", "TASK", "SIZE", "STATUS", "LANGUAGES"
    );
    for m in models {
        let status = match m.status {
            ModelStatus::Installed => "installed",
            ModelStatus::NotInstalled if m.disk_bytes > 0 => "partial",
            ModelStatus::NotInstalled => "-",
        };
        let languages = match m.languages.len() {
            0 => "-".to_string(),
            1 => m.languages[0].clone(),
            n => format!("{n}"),
        };
        let name = match &m.catalog_id {
            Some(id) => format!("{} (same as {id})", m.name),
            None => m.name.clone(),
        };
        println!(
            "{:<28} {:<10} {:>9}  {:<13} {:<10} {}",
            m.id,
            format!("{:?}", m.task).to_lowercase(),
            human_bytes(m.size_bytes),
            status,
            languages,
            name
        );
    }
}

pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.0} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}
