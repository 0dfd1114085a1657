//! What a chat model needs around it: its tokenizer, its chat template and the tokens
//! that end its turn, read from a GGUF file or a Hugging Face model folder; and the
//! incremental decoding of its reply.

use std::path::Path;

use candle_core::Result;
use serde_json::Value;
use tokenizers::Tokenizer;

use super::chat_template::{ChatMessage, ChatTemplate};
use super::gguf_tokenizer::tokenizer_from_gguf;
use crate::models::shared::gguf::GgufFile;

/// Control tokens that end an assistant's turn in the common chat formats (ChatML,
/// Llama 3, Phi, Gemma).
const END_OF_TURN_MARKERS: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "<end_of_turn>",
];

pub struct ChatFormat {
    tokenizer: Tokenizer,
    template: ChatTemplate,
    bos: Option<u32>,
    add_bos: bool,
    stop_tokens: Vec<u32>,
}

impl ChatFormat {
    pub fn from_gguf(file: &GgufFile) -> Result<Self> {
        let fail =
            |what: String| candle_core::Error::msg(format!("{}: {what}", file.path().display()));
        let tokenizer = tokenizer_from_gguf(file)?;
        let id = |key: &str| -> Result<Option<u32>> { Ok(file.integer(key)?.map(|id| id as u32)) };
        let text_of = |id: Option<u32>| {
            id.and_then(|id| tokenizer.id_to_token(id))
                .unwrap_or_default()
        };
        let bos = id("tokenizer.ggml.bos_token_id")?;
        let eos = id("tokenizer.ggml.eos_token_id")?;
        let source = file.string("tokenizer.chat_template")?.ok_or_else(|| {
            fail(
                "the file has no chat template (`tokenizer.chat_template`): it is not a chat model"
                    .into(),
            )
        })?;
        let template = ChatTemplate::new(source, &text_of(bos), &text_of(eos))
            .map_err(|e| fail(e.to_string()))?;
        // Files often name only the end of sequence (Qwen's `<|endoftext|>` in a base
        // tokenizer, say) while the template ends turns with another token: the known
        // end-of-turn markers in the vocabulary stop a reply too, as llama.cpp does.
        let markers = END_OF_TURN_MARKERS
            .iter()
            .filter_map(|text| tokenizer.token_to_id(text));
        let mut stop_tokens: Vec<u32> = [eos, id("tokenizer.ggml.eot_token_id")?]
            .into_iter()
            .flatten()
            .chain(markers)
            .collect();
        stop_tokens.sort_unstable();
        stop_tokens.dedup();
        if stop_tokens.is_empty() {
            return Err(fail("the metadata names no end-of-turn token".into()));
        }
        Ok(Self {
            tokenizer,
            template,
            bos,
            add_bos: file
                .boolean("tokenizer.ggml.add_bos_token")?
                .unwrap_or(false),
            stop_tokens,
        })
    }

    /// Reads a Hugging Face model folder: `tokenizer.json`, and `tokenizer_config.json`
    /// for the BOS and EOS tokens and the chat template (or `chat_template.jinja`,
    /// where newer transformers saves it).
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let fail = |what: String| candle_core::Error::msg(format!("{}: {what}", dir.display()));
        let tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| fail(format!("cannot read tokenizer.json: {e}")))?;
        let config: Value = std::fs::read_to_string(dir.join("tokenizer_config.json"))
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
            .map_err(|e| fail(format!("cannot read tokenizer_config.json: {e}")))?;
        // A special token is its text, or an object with the text as `content`.
        let token_text = |key: &str| -> Option<String> {
            match &config[key] {
                Value::String(text) => Some(text.clone()),
                Value::Object(token) => token.get("content")?.as_str().map(str::to_owned),
                _ => None,
            }
        };
        let bos_text = token_text("bos_token");
        let eos_text = token_text("eos_token");
        let source = match &config["chat_template"] {
            Value::String(source) => Some(source.clone()),
            // Several named templates: the default one.
            Value::Array(named) => named
                .iter()
                .find(|t| t["name"] == "default")
                .and_then(|t| t["template"].as_str())
                .map(str::to_owned),
            _ => std::fs::read_to_string(dir.join("chat_template.jinja")).ok(),
        }
        .ok_or_else(|| {
            fail("no chat template (tokenizer_config.json or chat_template.jinja): it is not a chat model".into())
        })?;
        let template = ChatTemplate::new(
            &source,
            bos_text.as_deref().unwrap_or_default(),
            eos_text.as_deref().unwrap_or_default(),
        )
        .map_err(|e| fail(e.to_string()))?;
        let markers = END_OF_TURN_MARKERS
            .iter()
            .filter_map(|text| tokenizer.token_to_id(text));
        let eos = eos_text.as_deref().and_then(|t| tokenizer.token_to_id(t));
        let mut stop_tokens: Vec<u32> = eos.into_iter().chain(markers).collect();
        stop_tokens.sort_unstable();
        stop_tokens.dedup();
        if stop_tokens.is_empty() {
            return Err(fail("the tokenizer names no end-of-turn token".into()));
        }
        Ok(Self {
            bos: bos_text.as_deref().and_then(|t| tokenizer.token_to_id(t)),
            add_bos: config["add_bos_token"].as_bool().unwrap_or(false),
            tokenizer,
            template,
            stop_tokens,
        })
    }

    /// Tokens that end the model's turn.
    pub fn stop_tokens(&self) -> &[u32] {
        &self.stop_tokens
    }

    /// The prompt tokens for `messages`, ready for the assistant's reply.
    pub fn prompt_tokens(&self, messages: &[ChatMessage]) -> Result<Vec<u32>> {
        let text = self
            .template
            .render(messages)
            .map_err(|e| candle_core::Error::msg(e.to_string()))?;
        let mut tokens = self.encode(&text)?;
        if let Some(bos) = self.bos.filter(|_| self.add_bos) {
            // Templates that write the BOS text themselves already have it.
            if tokens.first() != Some(&bos) {
                tokens.insert(0, bos);
            }
        }
        Ok(tokens)
    }

    /// Tokens of `text`, special tokens written in it (`<|im_start|>`) included.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| candle_core::Error::msg(format!("cannot tokenize: {e}")))?
            .get_ids()
            .to_vec())
    }

    /// Decodes a reply as its tokens arrive.
    pub fn reply_decoder(&self) -> ReplyDecoder<'_> {
        ReplyDecoder {
            tokenizer: &self.tokenizer,
            tokens: Vec::new(),
            emitted: 0,
        }
    }
}

/// Turns a growing list of tokens into text deltas. A character split across tokens
/// (UTF-8 bytes of an emoji, say) is held back until it is whole.
pub struct ReplyDecoder<'a> {
    tokenizer: &'a Tokenizer,
    tokens: Vec<u32>,
    emitted: usize,
}

impl ReplyDecoder<'_> {
    /// Adds tokens; returns the text they complete (possibly empty).
    pub fn push(&mut self, tokens: &[u32]) -> Result<String> {
        self.tokens.extend_from_slice(tokens);
        let text = self
            .tokenizer
            .decode(&self.tokens, true)
            .map_err(|e| candle_core::Error::msg(format!("cannot decode: {e}")))?;
        if text.ends_with('\u{FFFD}') || text.len() < self.emitted {
            return Ok(String::new());
        }
        let delta = text[self.emitted..].to_string();
        self.emitted = text.len();
        Ok(delta)
    }
}
