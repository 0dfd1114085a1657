//! `izwi voices`: the voice library.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, Subcommand};
use izwi_runtime::{NoEvents, VoiceSettings};

#[derive(Subcommand)]
pub enum VoicesCommand {
    /// List the library (the default).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a voice on a Piper model, with its own settings.
    Add(AddArgs),
    /// Rename a voice.
    Rename { id: i64, name: String },
    /// Delete a voice (the last voice of an installed model stays; remove the model).
    Rm { id: i64 },
}

#[derive(Args)]
pub struct AddArgs {
    /// The model: a catalog id (`izwi models list`) or an imported `local/...` one.
    model: String,
    /// The name to list it under.
    name: String,
    /// 1 is the model's normal pace; 0.25 to 4.
    #[arg(long, default_value_t = 1.0)]
    speed: f32,
    /// Pitch shift in semitones, -12 to 12.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pitch: f32,
    /// Variation in the voice (the model's default when not given); 0 is flat.
    #[arg(long)]
    noise_scale: Option<f32>,
    /// Variation in the timing (the model's default when not given).
    #[arg(long)]
    noise_w: Option<f32>,
    /// A speaker of a multi-speaker model.
    #[arg(long)]
    speaker: Option<i64>,
}

pub fn run(data_dir: Option<PathBuf>, command: Option<VoicesCommand>) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    tokio.block_on(async {
        match command.unwrap_or(VoicesCommand::List { json: false }) {
            VoicesCommand::List { json } => {
                let voices = runtime.list_voices().await?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&voices)?);
                } else if voices.is_empty() {
                    println!(
                        "No voices yet. `izwi models download piper-en_US-joe-medium` fetches \
                         one (`izwi models list` shows the rest); `izwi models import VOICE.onnx` \
                         adds one you have."
                    );
                } else {
                    println!(
                        "{:>4}  {:28} {:8} {:6} MODEL",
                        "ID", "NAME", "LANG", "SPEED"
                    );
                    for v in voices {
                        println!(
                            "{:>4}  {:28} {:8} {:<6} {}{}",
                            v.id,
                            v.name,
                            v.language.as_deref().unwrap_or("-"),
                            v.settings.speed,
                            v.model_id,
                            if v.installed { "" } else { " (not installed)" }
                        );
                    }
                }
            }
            VoicesCommand::Add(args) => {
                let voice = runtime
                    .add_voice(
                        &args.model,
                        &args.name,
                        VoiceSettings {
                            speed: args.speed,
                            pitch: args.pitch,
                            noise_scale: args.noise_scale,
                            noise_w: args.noise_w,
                            speaker: args.speaker,
                        },
                    )
                    .await?;
                println!("added voice {} ({})", voice.id, voice.name);
            }
            VoicesCommand::Rename { id, name } => {
                runtime.rename_voice(id, &name).await?;
                println!("renamed voice {id} to {name}");
            }
            VoicesCommand::Rm { id } => {
                runtime.delete_voice(id).await?;
                println!("deleted voice {id}");
            }
        }
        Ok(())
    })
}
