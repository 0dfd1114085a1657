//! Whisper as a [`ModelExecutor`]: encodes each distinct audio once, keeps its
//! cross-attention keys and values while requests use it, and decodes every running
//! request in one batched step over the paged cache.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use candle_core::{Result, Tensor};

use super::logits::LogitRules;
use super::mel::{LogMel, N_SAMPLES};
use super::model::{CrossKv, Whisper};
use super::tokens::SpecialTokens;
use crate::engine::sequence::audio_hash;
use crate::engine::{
    AudioAlignment, ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec, RequestId,
};

/// Memory for cross-attention keys and values kept after their requests end. The
/// language probe, the transcription, beam-search steps and temperature fallbacks of a
/// window are separate requests over the same audio; they share one encoding.
const CROSS_CACHE_BYTES: usize = 512 << 20;
/// 16 kHz samples per encoder frame.
const SAMPLES_PER_FRAME: usize = 320;

pub struct WhisperExecutor {
    model: Whisper,
    mel: LogMel,
    spec: ModelSpec,
    rules: Option<LogitRules>,
    /// Cross-attention state of every live request.
    live: HashMap<RequestId, Arc<CrossKv>>,
    /// Recently used encodings by audio hash, oldest first.
    recent: VecDeque<(u64, Arc<CrossKv>)>,
    recent_capacity: usize,
    /// Alignment rows of the requests that asked for them: the frames their audio
    /// covers, and by prompt position `[alignment heads, those frames]`.
    aligning: HashMap<RequestId, (usize, Vec<Vec<f32>>)>,
}

impl WhisperExecutor {
    /// `special` enables Whisper's decoding rules (suppression, timestamps); without it
    /// the executor returns the model's raw logits.
    pub fn new(model: Whisper, special: Option<SpecialTokens>) -> Result<Self> {
        let c = model.config().clone();
        let mel = LogMel::new(c.num_mel_bins, model.device())?;
        let cross_bytes = 2
            * c.decoder_layers
            * c.max_source_positions
            * c.d_model
            * model.dtype().size_in_bytes();
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
        };
        Ok(Self {
            model,
            mel,
            spec,
            rules: special.map(LogitRules::new),
            live: HashMap::new(),
            recent: VecDeque::new(),
            recent_capacity: (CROSS_CACHE_BYTES / cross_bytes.max(1)).max(2),
            aligning: HashMap::new(),
        })
    }

    pub fn model(&self) -> &Whisper {
        &self.model
    }

    /// Gives every sequence seen for the first time its cross-attention state,
    /// encoding the audio not encoded recently all in one batch.
    fn prepare(&mut self, batch: &ForwardBatch) -> Result<()> {
        let mut waiting: Vec<(RequestId, u64)> = Vec::new();
        let mut to_encode: Vec<(u64, Tensor)> = Vec::new();
        for seq in &batch.sequences {
            if self.live.contains_key(&seq.request_id) {
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
            let key = audio_hash(audio);
            if let Some(i) = self.recent.iter().position(|(k, _)| *k == key) {
                // Most recently used last.
                if let Some(entry) = self.recent.remove(i) {
                    self.live.insert(seq.request_id.clone(), entry.1.clone());
                    self.recent.push_back(entry);
                }
                continue;
            }
            if !to_encode.iter().any(|(k, _)| *k == key) {
                let started = std::time::Instant::now();
                to_encode.push((key, self.mel.compute(audio)?));
                tracing::debug!(seconds = started.elapsed().as_secs_f64(), "mel");
            }
            waiting.push((seq.request_id.clone(), key));
        }
        if !to_encode.is_empty() {
            let mels: Vec<Tensor> = to_encode.iter().map(|(_, m)| m.clone()).collect();
            let started = std::time::Instant::now();
            let encoded = self.model.encode(&Tensor::stack(&mels, 0)?)?;
            tracing::debug!(
                audios = mels.len(),
                seconds = started.elapsed().as_secs_f64(),
                "encoded"
            );
            for (i, (key, _)) in to_encode.iter().enumerate() {
                let cross = Arc::new(self.model.cross_kv(&encoded.get(i)?)?);
                for (id, _) in waiting.iter().filter(|(_, k)| k == key) {
                    self.live.insert(id.clone(), cross.clone());
                }
                if self.recent.len() == self.recent_capacity {
                    self.recent.pop_front();
                }
                self.recent.push_back((*key, cross));
            }
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
                self.live
                    .get(&s.request_id)
                    .map(|c| c.as_ref())
                    .ok_or_else(|| {
                        candle_core::Error::msg(format!("no encoder state for {}", s.request_id))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let started = std::time::Instant::now();
        let (logits, aligned) = self.model.decode_paged(batch, kv_cache, &cross)?;
        for step in aligned {
            let seq = &batch.sequences[step.sequence];
            let heads = step.logits.len() / (step.rows * step.frames).max(1);
            // Only the frames the audio covers are kept (each is 320 samples): the
            // rest is padding, and a request's rows are heads × positions × frames.
            let audio = seq.audio.as_ref().map_or(0, |a| a.len());
            let frames = audio.div_ceil(SAMPLES_PER_FRAME).clamp(1, step.frames);
            let (kept, positions) = self
                .aligning
                .entry(seq.request_id.clone())
                .or_insert((frames, Vec::new()));
            positions.resize(positions.len().max(seq.context_len()), Vec::new());
            for r in 0..step.rows {
                let row: Vec<f32> = (0..heads)
                    .flat_map(|h| {
                        let start = (h * step.rows + r) * step.frames;
                        step.logits[start..start + *kept].iter().copied()
                    })
                    .collect();
                positions[seq.start_pos + r] = row;
            }
        }
        tracing::debug!(
            sequences = batch.sequences.len(),
            tokens = batch
                .sequences
                .iter()
                .map(|s| s.tokens.len())
                .sum::<usize>(),
            seconds = started.elapsed().as_secs_f64(),
            "decoded"
        );
        Ok(logits)
    }

    fn process_logits(&self, tokens: &[u32], prompt_len: usize, logits: &mut [f32]) {
        if let Some(rules) = &self.rules {
            rules.apply(tokens, prompt_len, logits);
        }
    }

    fn take_alignment(&mut self, request_id: &RequestId) -> Option<AudioAlignment> {
        let (frames, positions) = self.aligning.remove(request_id)?;
        let heads = self.model.alignment_heads().len();
        // Every position computed, each with every head's row.
        if heads == 0 || positions.iter().any(|p| p.len() != heads * frames) {
            return None;
        }
        let mut logits = Vec::with_capacity(heads * positions.len() * frames);
        for h in 0..heads {
            for row in &positions {
                logits.extend_from_slice(&row[h * frames..(h + 1) * frames]);
            }
        }
        Some(AudioAlignment {
            heads,
            positions: positions.len(),
            frames,
            logits,
        })
    }

    fn release(&mut self, request_id: &RequestId) {
        self.live.remove(request_id);
        self.aligning.remove(request_id);
    }
}
