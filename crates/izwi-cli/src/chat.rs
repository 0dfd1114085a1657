//! `izwi chat`: a conversation with a GGUF chat model, kept in the history's chats.
//! Typed: one message per line from standard input, the reply streamed as it is
//! written; an empty line or the end of input ends it. Spoken from files: each
//! `--input` recording is a turn, answered in `--voice`, the reply's audio written to
//! `--output` (one turn) and kept in the data folder.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use izwi_runtime::{
    ChatModel, ChatParams, Conversation, Interrupt, NoEvents, Runtime, TurnEvent, VoiceChatSetup,
    DEFAULT_SYSTEM_PROMPT,
};

#[derive(Args)]
pub struct ChatArgs {
    /// The chat model: the path of a .gguf file (Llama architecture, e.g.
    /// SmolLM2-135M-Instruct.Q4_1.gguf).
    #[arg(long)]
    llm: PathBuf,
    /// What the model is told before the conversation.
    #[arg(long, default_value = DEFAULT_SYSTEM_PROMPT)]
    system: String,
    /// 0 (the default) always gives the likeliest reply; up to 2 for more variety.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Seed for sampling when the temperature is above 0.
    #[arg(long)]
    seed: Option<u64>,
    /// The longest reply, in tokens.
    #[arg(long, default_value_t = 512)]
    max_tokens: usize,
    /// Print each reply as one JSON object (text, tokens, timings) instead of text.
    #[arg(long)]
    json: bool,
    /// A recording of what the user says (any audio file); each one given is a spoken
    /// turn, answered aloud in --voice instead of reading standard input.
    #[arg(long, requires = "voice")]
    input: Vec<PathBuf>,
    /// The Whisper model that hears the user: an id (`izwi models list`), `local/NAME`
    /// or a model folder. Default: the default transcription model.
    #[arg(long)]
    asr: Option<String>,
    /// The voice that speaks the replies: a library voice (`izwi voices`), a voice
    /// model's id or a Piper .onnx file.
    #[arg(long)]
    voice: Option<String>,
    /// The language the user speaks (ISO code, e.g. en); detected when not given.
    #[arg(long)]
    language: Option<String>,
    /// Where the spoken reply goes (a WAV), with one --input.
    #[arg(long, requires = "input")]
    output: Option<PathBuf>,
}

pub fn run(data_dir: Option<PathBuf>, args: ChatArgs) -> Result<()> {
    if args.output.is_some() && args.input.len() != 1 {
        bail!("--output takes the reply of one --input; give one, or leave out --output");
    }
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    let model = tokio.block_on(runtime.open_chat_model(&args.llm))?;
    let params = ChatParams {
        max_tokens: args.max_tokens,
        temperature: args.temperature,
        seed: args.seed,
    };
    if !args.input.is_empty() {
        return tokio.block_on(spoken_turns(&runtime, &model, &params, &args));
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("{}: type a message, an empty line to end.", model.name());
    }
    let mut conversation = Conversation::new(&args.system);
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            eprint!("> ");
        }
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        let mut out = std::io::stdout().lock();
        let say = runtime.say(&model, &mut conversation, line, &params, |delta| {
            if !args.json {
                // A closed stdout ends the conversation at the next write below.
                let _ = out.write_all(delta.as_bytes()).and_then(|_| out.flush());
            }
        });
        let reply = tokio.block_on(say)?;
        if args.json {
            let json = serde_json::json!({
                "chat_id": conversation.chat_id(),
                "user_text": line,
                "reply_text": reply.text,
                "tokens": reply.tokens,
                "first_token_ms": reply.first_token_ms,
                "total_ms": reply.total_ms,
                "finished_turn": reply.finished_turn,
            });
            writeln!(out, "{json}")?;
        } else {
            writeln!(out)?;
        }
    }
    Ok(())
}

/// Each `--input` recording as a spoken turn of one conversation.
async fn spoken_turns(
    runtime: &Runtime,
    model: &ChatModel,
    params: &ChatParams,
    args: &ChatArgs,
) -> Result<()> {
    let setup = VoiceChatSetup {
        asr: match &args.asr {
            Some(asr) => asr.clone(),
            None => runtime.default_transcribe_model().await?,
        },
        voice: args.voice.clone().unwrap_or_default(),
        language: args.language.clone(),
    };
    runtime.prepare_voice_chat(&setup).await?;
    let mut conversation = Conversation::new(&args.system);
    for input in &args.input {
        let path = input.clone();
        let speech = tokio::task::spawn_blocking(move || izwi_runtime::load_for_asr(&path))
            .await?
            .map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))?;
        // The whole recording is there at once: the user has just stopped speaking.
        let ended = Instant::now();
        let show = |event: TurnEvent<'_>| {
            if args.json {
                return;
            }
            let mut out = std::io::stdout().lock();
            let _ = match event {
                TurnEvent::Heard(text) => writeln!(out, "> {text}"),
                TurnEvent::ReplyText(delta) => write!(out, "{delta}").and_then(|_| out.flush()),
                TurnEvent::ReplyAudio { .. } => Ok(()),
            };
        };
        let turn = runtime
            .voice_turn(
                &setup,
                model,
                &mut conversation,
                params,
                speech,
                ended,
                &Interrupt::default(),
                show,
            )
            .await?;
        let Some(turn) = turn else {
            bail!("no words were heard in {}", input.display());
        };
        if let Some(output) = &args.output {
            izwi_runtime::write_wav(output, &turn.reply_audio, turn.sample_rate)
                .map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?;
        }
        let mut out = std::io::stdout().lock();
        if args.json {
            let m = &turn.metrics;
            let json = serde_json::json!({
                "chat_id": turn.chat_id,
                "input": input,
                "user_text": turn.user_text,
                "reply_text": turn.reply_text,
                "reply_tokens": turn.reply_tokens,
                "asr_ms": m.asr_ms,
                "first_token_ms": m.first_token_ms,
                "first_sentence_ms": turn.first_sentence_ms,
                "first_audio_ms": m.first_audio_ms,
                "total_ms": m.total_ms,
                "reply_seconds": turn.reply_audio.len() as f64 / f64::from(turn.sample_rate),
                "reply_audio": turn.reply_audio_path,
                "output": args.output,
            });
            writeln!(out, "{json}")?;
        } else {
            writeln!(out)?;
        }
    }
    Ok(())
}
