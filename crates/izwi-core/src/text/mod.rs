//! Text on its way to a voice: sentences and clauses ([`sentences`]) and their phonemes
//! from espeak-ng ([`espeak`]); and text to and from a chat model: its tokenizer
//! ([`gguf_tokenizer`]), its chat template ([`chat_template`]) and both together
//! ([`chat`]).

pub mod chat;
pub mod chat_template;
pub mod espeak;
pub mod gguf_tokenizer;
pub mod sentences;

pub use chat::{ChatFormat, ReplyDecoder};
pub use chat_template::{ChatMessage, ChatTemplate, ChatTemplateError};
pub use espeak::{Espeak, EspeakError, StopFlag, ESPEAK_TIMEOUT};
pub use sentences::{paragraph_sentences, split_sentences, Clause, Paragraphs, Sentence};
