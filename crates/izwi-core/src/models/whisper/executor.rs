//! Whisper as a [`ModelExecutor`]: encodes each request's audio once, keeps its
//! cross-attention keys and values for the request's life, and decodes every running
//! request in one batched step over the paged cache.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use candle_core::{Result, Tensor};

use super::logits::LogitRules;
use super::mel::{LogMel, N_SAMPLES};
use super::model::{CrossKv, Whisper};
use super::tokens::SpecialTokens;
use crate::engine::{ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec, RequestId};

/// Encoder outputs kept for reuse: language detection, the transcription and any
/// temperature fallback of the same window each need the same encoding.
const ENCODER_CACHE_ENTRIES: usize = 16;

pub struct WhisperExecutor {
    model: Whisper,
    mel: LogMel,
    spec: ModelSpec,
    rules: Option<LogitRules>,
    cross: HashMap<RequestId, CrossKv>,
    encoded: VecDeque<(u64, Tensor)>,
}

impl WhisperExecutor {
    /// `special` enables Whisper's decoding rules (suppression, timestamps); without it
    /// the executor returns the model's raw logits.
    pub fn new(model: Whisper, special: Option<SpecialTokens>) -> Result<Self> {
        let c = model.config().clone();
        let mel = LogMel::new(c.num_mel_bins, model.device())?;
        let spec = ModelSpec {
            vocab_size: c.vocab_size,
            max_position_embeddings: c.max_target_positions,
            eos_token_ids: special.as_ref().map(|s| vec![s.eot]).unwrap_or_default(),
            kv_cache: KvCacheShape {
                num_layers: c.decoder_layers,
                num_kv_heads: c.decoder_attention_heads,
                head_dim: c.d_model / c.decoder_attention_heads,
                dtype: model.dtype(),
            },
            device: model.device().clone(),
            audio_seconds_per_token: None,
            requires_audio: true,
            supports_prefix_caching: false,
        };
        Ok(Self {
            model,
            mel,
            spec,
            rules: special.map(LogitRules::new),
            cross: HashMap::new(),
            encoded: VecDeque::new(),
        })
    }

    pub fn model(&self) -> &Whisper {
        &self.model
    }

    /// Encodes the audio of every sequence seen for the first time, together.
    fn prepare(&mut self, batch: &ForwardBatch) -> Result<()> {
        let mut pending: Vec<(RequestId, u64)> = Vec::new();
        let mut mels = Vec::new();
        for seq in &batch.sequences {
            if self.cross.contains_key(&seq.request_id) || pending.iter().any(|(id, _)| id == &seq.request_id) {
                continue;
            }
            let Some(audio) = &seq.audio else {
                candle_core::bail!("request {} has no audio", seq.request_id);
            };
            if audio.len() > N_SAMPLES {
                candle_core::bail!(
                    "request {} has {:.1} s of audio; Whisper takes at most 30 s per request, split longer audio",
                    seq.request_id,
                    audio.len() as f64 / 16_000.0
                );
            }
            let key = audio_key(audio);
            if !self.encoded.iter().any(|(k, _)| *k == key) && !pending.iter().any(|(_, k)| *k == key) {
                mels.push(self.mel.compute(audio)?);
            }
            pending.push((seq.request_id.clone(), key));
        }
        if !mels.is_empty() {
            let encoded = self.model.encode(&Tensor::stack(&mels, 0)?)?;
            let mut new_keys = pending.iter().map(|(_, k)| *k).filter(|k| !self.encoded.iter().any(|(e, _)| e == k)).collect::<Vec<_>>();
            new_keys.dedup();
            for (i, key) in new_keys.into_iter().enumerate() {
                if self.encoded.len() == ENCODER_CACHE_ENTRIES {
                    self.encoded.pop_front();
                }
                self.encoded.push_back((key, encoded.get(i)?));
            }
        }
        for (id, key) in pending {
            let Some((_, encoded)) = self.encoded.iter().find(|(k, _)| *k == key) else {
                candle_core::bail!("encoder output of request {id} was evicted");
            };
            let cross = self.model.cross_kv(encoded)?;
            self.cross.insert(id, cross);
        }
        Ok(())
    }
}

impl ModelExecutor for WhisperExecutor {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.prepare(batch)?;
        let cross = batch
            .sequences
            .iter()
            .map(|s| {
                self.cross
                    .get(&s.request_id)
                    .ok_or_else(|| candle_core::Error::msg(format!("no encoder state for {}", s.request_id)))
            })
            .collect::<Result<Vec<_>>>()?;
        self.model.decode_paged(batch, kv_cache, &cross)
    }

    fn process_logits(&self, tokens: &[u32], prompt_len: usize, logits: &mut [f32]) {
        if let Some(rules) = &self.rules {
            rules.apply(tokens, prompt_len, logits);
        }
    }

    fn release(&mut self, request_id: &RequestId) {
        self.cross.remove(request_id);
    }
}

/// Identifies audio by content, so a window submitted again reuses its encoding.
fn audio_key(samples: &[f32]) -> u64 {
    let mut hasher = DefaultHasher::new();
    samples.len().hash(&mut hasher);
    for s in samples {
        s.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}
