//! The JSON files of the Hugging Face layout: config.json, generation_config.json and
//! preprocessor_config.json, from the model's dimensions, its special tokens and
//! CTranslate2's suppress lists.

use std::collections::HashMap;
use std::path::Path;

use candle_core::DType;
use serde_json::{json, Value};

use super::weights::Dims;
use super::{CtranslateError, Result};
use crate::models::whisper::SpecialTokens;

/// The special tokens of tokenizer.json, found by name among its added tokens, each
/// checked to lie inside the model's embeddings.
pub(super) fn special_tokens(tokenizer: &Value, path: &Path, dims: &Dims) -> Result<SpecialTokens> {
    let bad = |problem: String| CtranslateError::BadJson {
        file: path.to_path_buf(),
        problem,
    };
    let added = tokenizer
        .get("added_tokens")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no added_tokens list".into()))?;
    let mut by_name = HashMap::new();
    let mut by_id = HashMap::new();
    for token in added {
        if let (Some(content), Some(id)) = (
            token.get("content").and_then(Value::as_str),
            token.get("id").and_then(Value::as_u64),
        ) {
            let vocab_size = dims.vocab_size;
            let id = u32::try_from(id)
                .ok()
                .filter(|&id| (id as usize) < vocab_size)
                .ok_or_else(|| {
                    bad(format!(
                        "token {content} has id {id}, beyond the model's {vocab_size} embeddings: tokenizer and model.bin do not match"
                    ))
                })?;
            by_name.insert(content.to_string(), id);
            by_id.insert(id, content.to_string());
        }
    }
    SpecialTokens::find(
        |name| by_name.get(name).copied(),
        |id| by_id.get(&id).cloned(),
        dims.multilingual(),
    )
    .map_err(|e| bad(e.to_string()))
}

pub(super) struct SuppressLists {
    pub(super) suppress: Vec<u64>,
    pub(super) begin_suppress: Vec<u64>,
    pub(super) alignment_heads: Option<Value>,
}

impl SuppressLists {
    pub(super) fn from_ct2_config(config: &Value, path: &Path) -> Result<Self> {
        let ids = |key: &str| -> Result<Vec<u64>> {
            config
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| CtranslateError::BadJson {
                    file: path.to_path_buf(),
                    problem: format!("{key} must be a list of token ids"),
                })
        };
        Ok(Self {
            suppress: ids("suppress_ids")?,
            begin_suppress: ids("suppress_ids_begin")?,
            // Only used for word timestamps; CTranslate2 writes it, HF keeps it in
            // generation_config.json.
            alignment_heads: config.get("alignment_heads").cloned(),
        })
    }
}

pub(super) fn hf_config(dims: &Dims, tokens: &SpecialTokens, lists: &SuppressLists) -> Value {
    json!({
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "d_model": dims.d_model,
        "encoder_layers": dims.encoder_layers,
        "encoder_attention_heads": dims.encoder_heads,
        "encoder_ffn_dim": dims.encoder_ffn,
        "decoder_layers": dims.decoder_layers,
        "decoder_attention_heads": dims.decoder_heads,
        "decoder_ffn_dim": dims.decoder_ffn,
        "num_mel_bins": dims.n_mels,
        "vocab_size": dims.vocab_size,
        "max_source_positions": dims.max_source_positions,
        "max_target_positions": dims.max_target_positions,
        "activation_function": "gelu",
        "scale_embedding": false,
        "tie_word_embeddings": true,
        "is_encoder_decoder": true,
        "use_cache": true,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "decoder_start_token_id": tokens.sot,
        // Whisper's tokenizer uses <|endoftext|> as bos, eos and pad.
        "bos_token_id": tokens.eot,
        "eos_token_id": tokens.eot,
        "pad_token_id": tokens.eot,
        "suppress_tokens": lists.suppress,
        "begin_suppress_tokens": lists.begin_suppress,
        "torch_dtype": dtype_name(dims.dtype),
    })
}

pub(super) fn generation_config(
    dims: &Dims,
    tokens: &SpecialTokens,
    lists: &SuppressLists,
) -> Value {
    let mut config = json!({
        "decoder_start_token_id": tokens.sot,
        "bos_token_id": tokens.eot,
        "eos_token_id": tokens.eot,
        "pad_token_id": tokens.eot,
        "is_multilingual": dims.multilingual(),
        "no_timestamps_token_id": tokens.no_timestamps,
        "prev_sot_token_id": tokens.sot_prev,
        "suppress_tokens": lists.suppress,
        "begin_suppress_tokens": lists.begin_suppress,
        "max_initial_timestamp_index": 50,
        "max_length": 448,
        "return_timestamps": false,
    });
    if let Some(heads) = &lists.alignment_heads {
        config["alignment_heads"] = heads.clone();
    }
    if dims.multilingual() {
        let languages: serde_json::Map<String, Value> = tokens
            .languages
            .iter()
            .map(|(code, id)| (format!("<|{code}|>"), json!(id)))
            .collect();
        config["lang_to_id"] = Value::Object(languages);
        config["task_to_id"] = json!({
            "transcribe": tokens.transcribe,
            "translate": tokens.translate,
        });
        // As in the HF repos: position 1 (the language) is left to detection,
        // position 2 is the task.
        config["forced_decoder_ids"] = json!([[1, null], [2, tokens.transcribe]]);
    }
    // English-only models get no lang_to_id/task_to_id, as in the HF `.en` repos:
    // with lang_to_id present, transformers would detect a language and put a
    // language token in the prompt, which `.en` models were never trained with.
    config
}

pub(super) fn preprocessor_config(n_mels: usize) -> Value {
    json!({
        "feature_extractor_type": "WhisperFeatureExtractor",
        "processor_class": "WhisperProcessor",
        "feature_size": n_mels,
        "sampling_rate": 16000,
        "hop_length": 160,
        "n_fft": 400,
        "chunk_length": 30,
        "n_samples": 480000,
        "nb_max_frames": 3000,
        "padding_side": "right",
        "padding_value": 0.0,
        "return_attention_mask": false,
    })
}

pub(super) fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        _ => "float32",
    }
}
