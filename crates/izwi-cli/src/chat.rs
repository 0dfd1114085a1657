//! `izwi chat`: a typed conversation with a GGUF chat model, the reply streamed as it
//! is written. Reads one message per line from standard input; an empty line or the
//! end of input ends the conversation. The conversation is kept in the history's chats.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use izwi_runtime::{ChatParams, Conversation, NoEvents, DEFAULT_SYSTEM_PROMPT};

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
}

pub fn run(data_dir: Option<PathBuf>, args: ChatArgs) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    let model = tokio.block_on(runtime.open_chat_model(&args.llm))?;
    let params = ChatParams {
        max_tokens: args.max_tokens,
        temperature: args.temperature,
        seed: args.seed,
    };
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
