//! Text on its way to a voice: sentences and clauses ([`sentences`]) and their phonemes
//! from espeak-ng ([`espeak`]).

pub mod espeak;
pub mod sentences;

pub use espeak::{Espeak, EspeakError};
pub use sentences::{split_sentences, Clause, Sentence};
