//! `izwi convert ...`: turn checkpoints from other tools into the Hugging Face layout.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use izwi_core::models::whisper::ctranslate2::convert_ctranslate2;

#[derive(Subcommand)]
pub enum ConvertCommand {
    /// A CTranslate2 Whisper folder (faster-whisper's model.bin, config.json,
    /// tokenizer.json) into a Hugging Face Whisper folder.
    Ctranslate2 {
        /// The CTranslate2 folder.
        src: PathBuf,
        /// The folder to create; it must not exist yet.
        dst: PathBuf,
    },
}

pub fn run(command: ConvertCommand) -> Result<()> {
    match command {
        ConvertCommand::Ctranslate2 { src, dst } => {
            let s = convert_ctranslate2(&src, &dst)
                .with_context(|| format!("converting {}", src.display()))?;
            println!(
                "{} -> {}: whisper {} (d_model {}, {}+{} layers, {} mels, vocab {}), {} tensors, {:.1}M parameters, {:?}{}",
                src.display(),
                dst.display(),
                if s.multilingual { "multilingual" } else { "English-only" },
                s.d_model,
                s.encoder_layers,
                s.decoder_layers,
                s.num_mel_bins,
                s.vocab_size,
                s.tensors,
                s.parameters as f64 / 1e6,
                s.dtype,
                if s.dequantized { " (dequantized)" } else { "" },
            );
            Ok(())
        }
    }
}
