//! The text tokenizer of a checkpoint folder: `tokenizer.json` when there is one, else
//! Qwen2's byte-level BPE built from `vocab.json`, `merges.txt` and the added tokens of
//! `tokenizer_config.json` (the files a Qwen2 tokenizer saves), with Qwen2's word split.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::text::gguf_tokenizer::QWEN2_SPLIT;

#[derive(Deserialize)]
struct TokenizerConfig {
    #[serde(default)]
    added_tokens_decoder: HashMap<String, AddedEntry>,
}

#[derive(Deserialize)]
struct AddedEntry {
    content: String,
    #[serde(default)]
    special: bool,
}

pub fn load_text_tokenizer(dir: &Path) -> Result<Tokenizer, String> {
    let json = dir.join("tokenizer.json");
    if json.is_file() {
        return Tokenizer::from_file(&json)
            .map_err(|e| format!("cannot read {}: {e}", json.display()));
    }
    from_vocab_and_merges(dir)
}

/// Qwen2's tokenizer from its vocabulary and merges.
pub fn from_vocab_and_merges(dir: &Path) -> Result<Tokenizer, String> {
    let (vocab, merges) = (dir.join("vocab.json"), dir.join("merges.txt"));
    let path_str = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or("a path that is not UTF-8")
    };
    let bpe = BPE::from_file(&path_str(&vocab)?, &path_str(&merges)?)
        .build()
        .map_err(|e| {
            format!(
                "{} has no tokenizer.json, and its vocab.json and merges.txt do not load: {e}",
                dir.display()
            )
        })?;
    let mut tokenizer = Tokenizer::new(bpe);
    let split = Split::new(
        SplitPattern::Regex(QWEN2_SPLIT.into()),
        SplitDelimiterBehavior::Isolated,
        false,
    )
    .map_err(|e| format!("the word split: {e}"))?;
    tokenizer.with_normalizer(Some(NFC));
    tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![
        split.into(),
        ByteLevel::new(false, false, false).into(),
    ])));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
    let config_path = dir.join("tokenizer_config.json");
    let text = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("cannot read {}: {e}", config_path.display()))?;
    let config: TokenizerConfig = serde_json::from_str(&text)
        .map_err(|e| format!("invalid {}: {e}", config_path.display()))?;
    let mut added: Vec<(u32, AddedEntry)> = config
        .added_tokens_decoder
        .into_iter()
        .filter_map(|(id, entry)| id.parse().ok().map(|id| (id, entry)))
        .collect();
    added.sort_by_key(|(id, _)| *id);
    for (id, entry) in added {
        let token = AddedToken::from(entry.content.clone(), entry.special);
        if entry.special {
            tokenizer.add_special_tokens(&[token]);
        } else {
            tokenizer.add_tokens(&[token]);
        }
        if tokenizer.token_to_id(&entry.content) != Some(id) {
            return Err(format!(
                "{}: the added token {:?} is not id {id} in vocab.json",
                config_path.display(),
                entry.content
            ));
        }
    }
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_and_merges_tokenize_as_tokenizer_json() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen3-tts-tiny");
        let json = load_text_tokenizer(&dir).expect("tokenizer.json");
        let built = from_vocab_and_merges(&dir).expect("vocab.json and merges.txt");
        for text in [
            "<|im_start|>assistant\nhello world, this is izwi.<|im_end|>\n<|im_start|>assistant\n",
            "<|im_start|>user\na calm low male voice, slightly amused.<|im_end|>\n",
            "the quick brown fox jumps over the lazy dog.",
        ] {
            let ids = |t: &Tokenizer| t.encode(text, false).expect("encodes").get_ids().to_vec();
            assert_eq!(ids(&built), ids(&json), "{text:?}");
        }
    }
}
