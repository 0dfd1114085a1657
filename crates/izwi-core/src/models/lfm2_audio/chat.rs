//! liquid-audio's chat layout (`ChatState`): `<|startoftext|>`, then per message
//! `<|im_start|>{role}\n`, its parts, `<|im_end|>\n`, and `<|im_start|>assistant\n` to
//! open the reply. Every piece of text is tokenized on its own, as ChatState does, so
//! no token spans two pieces. Speech in and spoken frames sit between text pieces.

use std::path::Path;
use std::sync::Arc;

use candle_core::Result;
use tokenizers::Tokenizer;

use super::executor::Segment;

/// One part of a message.
#[derive(Debug, Clone)]
pub enum Part {
    Text(String),
    /// Text the model wrote, as its tokens (re-tokenizing its text could split it
    /// otherwise).
    Tokens(Vec<u32>),
    /// 16 kHz mono speech.
    Audio(Arc<[f32]>),
    /// Frames the assistant spoke.
    Frames(Vec<Vec<u32>>),
}

#[derive(Debug, Clone)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub parts: Vec<Part>,
}

pub struct ChatLayout {
    tokenizer: Tokenizer,
}

impl ChatLayout {
    /// From the folder's `tokenizer.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&path)
            .map_err(|e| candle_core::Error::msg(format!("cannot read {}: {e}", path.display())))?;
        Ok(Self { tokenizer })
    }

    /// The text's tokens, special tokens written in it included.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| candle_core::Error::msg(format!("cannot tokenize: {e}")))?
            .get_ids()
            .to_vec())
    }

    /// Text of generated tokens (special tokens dropped).
    pub fn decode(&self, tokens: &[u32]) -> Result<String> {
        self.tokenizer
            .decode(tokens, true)
            .map_err(|e| candle_core::Error::msg(format!("cannot detokenize: {e}")))
    }

    /// The prompt of the assistant's next turn after `messages`.
    pub fn prompt(&self, messages: &[Message]) -> Result<Vec<Segment>> {
        let mut segments = vec![Segment::Text(self.encode("<|startoftext|>")?)];
        let text = |segments: &mut Vec<Segment>, s: &str| -> Result<()> {
            let ids = self.encode(s)?;
            match segments.last_mut() {
                Some(Segment::Text(previous)) => previous.extend(ids),
                _ => segments.push(Segment::Text(ids)),
            }
            Ok(())
        };
        for message in messages {
            if !matches!(message.role.as_str(), "system" | "user" | "assistant") {
                candle_core::bail!("unknown chat role {:?}", message.role);
            }
            text(&mut segments, &format!("<|im_start|>{}\n", message.role))?;
            for part in &message.parts {
                match part {
                    Part::Text(s) => text(&mut segments, s)?,
                    Part::Tokens(ids) => match segments.last_mut() {
                        Some(Segment::Text(previous)) => previous.extend(ids),
                        _ => segments.push(Segment::Text(ids.clone())),
                    },
                    Part::Audio(samples) => segments.push(Segment::Audio(samples.clone())),
                    Part::Frames(frames) => segments.push(Segment::Frames(frames.clone())),
                }
            }
            text(&mut segments, "<|im_end|>\n")?;
        }
        text(&mut segments, "<|im_start|>assistant\n")?;
        Ok(segments)
    }
}
