//! Text to the phoneme ids a Piper voice reads, as piper-tts 1.8 makes them: espeak-ng
//! IPA per clause, the clause's punctuation kept (a space after `,` `;` `:`), the whole
//! sentence decomposed (NFD) into characters, each mapped through the voice's
//! `phoneme_id_map`, framed as `^ _ (ids _)* $`.

use unicode_normalization::UnicodeNormalization;

use super::config::VoiceConfig;
use crate::text::{Espeak, EspeakError, Sentence};

#[derive(Debug, thiserror::Error)]
pub enum PhonemizeError {
    #[error(transparent)]
    Espeak(#[from] EspeakError),
    #[error("the voice's config names no espeak-ng voice to phonemize with")]
    NoEspeakVoice,
    #[error("the voice's phoneme_id_map has no {0:?}, which every Piper voice has")]
    MissingSymbol(&'static str),
}

/// One sentence ready for the network.
#[derive(Debug, Clone, PartialEq)]
pub struct PhonemizedSentence {
    /// The sentence as written.
    pub text: String,
    /// What espeak-ng made of it, with punctuation.
    pub phonemes: String,
    pub ids: Vec<i64>,
    /// Characters the voice has no id for (skipped, as piper does).
    pub unknown: Vec<char>,
}

/// Phonemizes `sentences` for the voice `config`, all of them in one espeak-ng run.
/// Sentences that come out with no phonemes are left out.
pub fn phonemize(
    espeak: &Espeak,
    config: &VoiceConfig,
    sentences: &[Sentence],
) -> Result<Vec<PhonemizedSentence>, PhonemizeError> {
    let clauses: Vec<&str> = sentences
        .iter()
        .flat_map(|s| s.clauses.iter().map(|c| c.text.as_str()))
        .collect();
    let phonemes = if config.phoneme_type == "text" {
        clauses.iter().map(|c| c.to_lowercase()).collect()
    } else {
        let voice = config
            .espeak
            .as_ref()
            .ok_or(PhonemizeError::NoEspeakVoice)?;
        espeak.phonemize(&voice.voice, &clauses)?
    };
    let mut phonemes = phonemes.into_iter();
    let mut out = Vec::new();
    for sentence in sentences {
        let mut line = String::new();
        for clause in &sentence.clauses {
            let p = phonemes.next().unwrap_or_default();
            if p.is_empty() {
                continue;
            }
            line.push_str(&p);
            match clause.terminator {
                Some(t @ (',' | ';' | ':')) => {
                    line.push(t);
                    line.push(' ');
                }
                Some(t) => line.push(t),
                None => line.push(' '),
            }
        }
        let line = line.trim_end().to_owned();
        if line.is_empty() {
            continue;
        }
        let (ids, unknown) = phoneme_ids(config, &line)?;
        out.push(PhonemizedSentence {
            text: sentence.text(),
            phonemes: line,
            ids,
            unknown,
        });
    }
    Ok(out)
}

/// Piper's ids for a phoneme string: `^`, `_`, then each character's ids followed by
/// `_`, then `$`. Characters not in the map are skipped and returned.
pub fn phoneme_ids(
    config: &VoiceConfig,
    phonemes: &str,
) -> Result<(Vec<i64>, Vec<char>), PhonemizeError> {
    let map = &config.phoneme_id_map;
    let symbol = |s: &'static str| -> Result<&Vec<i64>, PhonemizeError> {
        map.get(s).ok_or(PhonemizeError::MissingSymbol(s))
    };
    let (bos, pad, eos) = (symbol("^")?, symbol("_")?, symbol("$")?);
    let mut ids = bos.clone();
    ids.extend(pad);
    let mut unknown = Vec::new();
    let mut key = [0u8; 4];
    for c in phonemes.nfd() {
        match map.get(&*c.encode_utf8(&mut key)) {
            Some(c_ids) => {
                ids.extend(c_ids);
                ids.extend(pad);
            }
            None => {
                if !unknown.contains(&c) {
                    unknown.push(c);
                }
            }
        }
    }
    ids.extend(eos);
    Ok((ids, unknown))
}
