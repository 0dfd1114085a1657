//! `izwi chats`: the stored conversations, most recent first, with the ids
//! `izwi chat --resume` takes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use izwi_runtime::NoEvents;

use crate::format::local_time;

#[derive(Args)]
pub struct ChatsArgs {
    /// Print JSON: one object per chat (id, title, model_id, created_at, updated_at).
    #[arg(long)]
    json: bool,
}

pub fn run(data_dir: Option<PathBuf>, args: ChatsArgs) -> Result<()> {
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    let chats = tokio.block_on(runtime.chats())?;
    if args.json {
        println!("{}", serde_json::to_string(&chats)?);
        return Ok(());
    }
    for chat in chats {
        println!(
            "{:>5}  {}  {}  ({})",
            chat.id,
            local_time(chat.updated_at),
            chat.title,
            chat.model_id.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}
