//! `izwi listen`: live dictation from the microphone, or from a file played at
//! real-time pace; partial and final text as it is heard. Saved to the history with
//! its recording unless `--no-save`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use izwi_runtime::{
    file_chunks_in_real_time, microphone_chunks, CancellationToken, DictationEvent,
    DictationOptions, Microphone, NoEvents,
};

#[derive(Args)]
pub struct ListenArgs {
    /// A Whisper or Voxtral Realtime model: an id (`izwi models list`), `local/NAME` of
    /// an import, or a model folder. Default: the `default_transcribe_model` setting,
    /// else the first installed Whisper model.
    #[arg(long)]
    model: Option<String>,
    /// Spoken language as an ISO code (en, de, ...); detected when omitted.
    #[arg(long)]
    language: Option<String>,
    /// Voxtral Realtime only: how far the text runs behind the speech, in milliseconds
    /// (a multiple of 80 up to 2400). Shorter shows words sooner; longer lets the model
    /// hear more before it writes. Default: the checkpoint's (480 for Mistral's).
    #[arg(long)]
    delay_ms: Option<u32>,
    /// The microphone (`izwi devices`). Default: the one chosen for voice chat, else
    /// the system's.
    #[arg(long, conflicts_with = "input")]
    input_device: Option<String>,
    /// Read this audio or video file instead of the microphone (with --realtime).
    #[arg(long, requires = "realtime")]
    input: Option<PathBuf>,
    /// Feed --input at the pace it plays, as a microphone would.
    #[arg(long, requires = "input")]
    realtime: bool,
    /// One JSON object per line: {"type": "partial" | "final", "text", "start_s",
    /// "end_s", "emitted_at_s"}. Final text never changes; a partial is what was heard
    /// after the final text so far, replaced by the next partial or final.
    #[arg(long)]
    json: bool,
    /// Keep nothing: by default the audio is recorded to the data dir as it is heard
    /// and the dictation is saved to the history as a transcript with its recording.
    #[arg(long)]
    no_save: bool,
}

pub fn run(data_dir: Option<PathBuf>, args: ListenArgs) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    tokio.block_on(async {
        let model_id = match &args.model {
            Some(id) => id.clone(),
            None => runtime.default_transcribe_model().await?,
        };
        let stop = CancellationToken::new();
        let on_ctrl_c = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let audio = match &args.input {
            Some(path) => file_chunks_in_real_time(path, stop.clone())?,
            None => {
                let settings = runtime.chat_settings().await;
                let device = args
                    .input_device
                    .as_ref()
                    .or(settings.input_device.as_ref());
                let microphone = Microphone::open(device.map(String::as_str))
                    .context("the microphone could not be opened")?;
                eprintln!("listening on {}; Ctrl-C ends.", microphone.name());
                microphone_chunks(microphone, stop.clone())
            }
        };
        let options = DictationOptions {
            language: args.language.clone(),
            delay_ms: args.delay_ms,
            ..DictationOptions::new(model_id)
        };
        let json = args.json;
        let on_event = |event: DictationEvent| show(&event, json);
        let saved = if args.no_save {
            runtime.dictate(&options, audio, on_event).await?;
            None
        } else {
            let on_job =
                |id| eprintln!("recording as job {id} (`izwi history --show {id}` when done)");
            Some(
                runtime
                    .dictate_and_save(&options, audio, on_job, on_event)
                    .await?,
            )
        };
        if !json {
            eprint!("\r\x1b[K");
        }
        if let Some(saved) = saved {
            eprintln!(
                "saved as job {}, with its recording {}",
                saved.job_id,
                saved.recording.display()
            );
        }
        anyhow::Ok(())
    })
}

/// JSON lines, or final text on standard output and the partial text after it on
/// standard error, rewritten in place.
fn show(event: &DictationEvent, json: bool) {
    // A closed standard output (`| head`) ends nothing: dictation goes on being saved.
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
        return;
    }
    match event {
        DictationEvent::Final(text) => {
            eprint!("\r\x1b[K");
            let _ = writeln!(std::io::stdout(), "{}", text.text);
        }
        DictationEvent::Partial(text) => eprint!("\r\x1b[K… {}", text.text),
    }
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
}
