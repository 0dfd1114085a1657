//! The byte-level BPE tokenizer a GGUF file describes in its metadata (`tokenizer.ggml.*`),
//! built as a `tokenizers` tokenizer.

use candle_core::Result;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::models::shared::gguf::GgufFile;

/// Llama 3's split of text into words before BPE (numbers in runs of up to three digits).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's: the same with every digit on its own.
pub(crate) const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The pre-tokenizers (`tokenizer.ggml.pre`) this builder knows; any other is refused,
/// since splitting words differently from training would feed the model token
/// sequences it never saw.
pub const PRE_TOKENIZERS: &[&str] = &["gpt2", "default", "smollm", "llama3", "llama-bpe", "qwen2"];

/// GGUF token types (llama.cpp's `llama_token_type`).
const CONTROL: u64 = 3;
const USER_DEFINED: u64 = 4;

pub fn tokenizer_from_gguf(file: &GgufFile) -> Result<Tokenizer> {
    let fail = |what: String| candle_core::Error::msg(format!("{}: {what}", file.path().display()));
    let kind = file.required_string("tokenizer.ggml.model")?;
    if kind != "gpt2" {
        return Err(fail(format!(
            "the `{kind}` tokenizer is not supported (only byte-level BPE, `gpt2`)"
        )));
    }
    let tokens = file.strings("tokenizer.ggml.tokens")?;
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| (token.to_string(), id as u32))
        .collect();
    let merges = file
        .strings("tokenizer.ggml.merges")?
        .into_iter()
        .map(|merge| {
            merge
                .split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| fail(format!("the merge `{merge}` is not two tokens")))
        })
        .collect::<Result<Vec<_>>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| fail(format!("invalid BPE vocabulary: {e}")))?;
    let mut tokenizer = Tokenizer::new(bpe);

    let pre = file.string("tokenizer.ggml.pre")?.unwrap_or("gpt2");
    let byte_level = |use_regex| ByteLevel::new(false, false, use_regex);
    let split = |pattern: &str| -> Result<PreTokenizerWrapper> {
        let split = Split::new(
            SplitPattern::Regex(pattern.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| fail(format!("pre-tokenizer pattern: {e}")))?;
        Ok(Sequence::new(vec![split.into(), byte_level(false).into()]).into())
    };
    let pre_tokenizer: PreTokenizerWrapper = match pre {
        "gpt2" | "default" => byte_level(true).into(),
        "smollm" => Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into(),
        "llama3" | "llama-bpe" => split(LLAMA3_SPLIT)?,
        "qwen2" => {
            tokenizer.with_normalizer(Some(NFC));
            split(QWEN2_SPLIT)?
        }
        other => {
            return Err(fail(format!(
                "the `{other}` pre-tokenizer is not supported (supported: {})",
                PRE_TOKENIZERS.join(", ")
            )))
        }
    };
    tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

    // Control tokens (`<|im_start|>`) and user-defined ones are matched whole in the
    // text, before BPE; control tokens are left out of decoded text.
    let types = file.integers("tokenizer.ggml.token_type")?;
    if types.len() != tokens.len() {
        return Err(fail(format!(
            "{} token types for {} tokens",
            types.len(),
            tokens.len()
        )));
    }
    let added = |wanted: u64, special: bool| -> Vec<AddedToken> {
        tokens
            .iter()
            .zip(&types)
            .filter(|(_, &t)| t == wanted)
            .map(|(token, _)| AddedToken::from(token.to_string(), special))
            .collect()
    };
    tokenizer.add_special_tokens(&added(CONTROL, true));
    tokenizer.add_tokens(&added(USER_DEFINED, false));
    Ok(tokenizer)
}
