//! `izwi voices`: the voice library.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, Subcommand};
use izwi_runtime::{CloneVoiceRequest, NoEvents, TranscriptSource, VoiceSettings};

#[derive(Subcommand)]
pub enum VoicesCommand {
    /// List the library (the default).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a voice on a Piper model, with its own settings.
    Add(AddArgs),
    /// Clone a voice from a recording (at most 60 s) with a Qwen3-TTS Base model; the
    /// recording is copied into Izwi's data folder.
    Clone(CloneArgs),
    /// Design a voice from a description with a Qwen3-TTS VoiceDesign model.
    Design(DesignArgs),
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

#[derive(Args)]
pub struct CloneArgs {
    /// The name to list it under.
    name: String,
    /// A Qwen3-TTS Base model: an imported `local/...` id or a checkpoint folder.
    #[arg(long)]
    model: String,
    /// The recording of the voice (any format Izwi decodes).
    #[arg(long)]
    audio: PathBuf,
    /// What is said in the recording; Whisper's transcript when not given (if a
    /// Whisper model is installed).
    #[arg(long)]
    text: Option<String>,
}

#[derive(Args)]
pub struct DesignArgs {
    /// The name to list it under.
    name: String,
    /// A Qwen3-TTS VoiceDesign model: an imported `local/...` id or a checkpoint folder.
    #[arg(long)]
    model: String,
    /// The voice, in words: "a calm, low male voice, slightly amused".
    #[arg(long)]
    description: String,
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
                        "{:>4}  {:28} {:8} {:8} {:6} MODEL",
                        "ID", "NAME", "KIND", "LANG", "SPEED"
                    );
                    for v in voices {
                        println!(
                            "{:>4}  {:28} {:8} {:8} {:<6} {}{}",
                            v.id,
                            v.name,
                            v.source.as_str(),
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
                            ..VoiceSettings::default()
                        },
                    )
                    .await?;
                println!("added voice {} ({})", voice.id, voice.name);
            }
            VoicesCommand::Clone(args) => {
                let cloned = runtime
                    .clone_voice(CloneVoiceRequest {
                        name: args.name,
                        model_id: args.model,
                        audio: args.audio,
                        text: args.text,
                    })
                    .await?;
                let voice = &cloned.voice;
                println!("cloned voice {} ({})", voice.id, voice.name);
                match cloned.transcript {
                    TranscriptSource::Given => {}
                    TranscriptSource::Whisper { model_id } => println!(
                        "transcript by {model_id}: {}",
                        voice.reference_text.as_deref().unwrap_or_default()
                    ),
                    TranscriptSource::Missing { reason } => {
                        println!("no transcript: {reason} (give one with --text)")
                    }
                }
            }
            VoicesCommand::Design(args) => {
                let voice = runtime
                    .design_voice(&args.name, &args.model, &args.description)
                    .await?;
                println!("designed voice {} ({})", voice.id, voice.name);
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
