//! Text on its way to a voice: sentences and clauses ([`sentences`]) and their phonemes
//! from espeak-ng ([`espeak`]).

pub mod espeak;
pub mod sentences;

pub use espeak::{Espeak, EspeakError, StopFlag, ESPEAK_TIMEOUT};
pub use sentences::{paragraph_sentences, split_sentences, Clause, Paragraphs, Sentence};
