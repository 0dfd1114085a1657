//! Qwen3-TTS's talker as a [`ModelExecutor`]: the engine schedules, caches and samples
//! codebook 0 like any token stream; the executor turns each sampled token into a whole
//! frame (the code predictor, batched over the step's requests) and feeds the frame back.
//! Why it is built this way is in docs/qwen3-tts.md.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use candle_core::{DType, Device, Result, Tensor};

use super::code_predictor::CodePredictor;
use super::config::Qwen3TtsConfig;
use super::prompt::{frame_embeddings, PromptEmbeddings, PromptLayout, SpeechPrompt};
use super::talker::Talker;
use crate::engine::{
    EngineCoreRequest, ForwardBatch, GenerationParams, KvCacheShape, LayerKvCache, ModelExecutor,
    ModelSpec, RequestId,
};
use crate::models::shared::pending::PendingRequests;
use crate::models::shared::sampling::Sampler;
use crate::models::shared::weights::{load_model_dir, stores_only};

/// Seconds of audio per frame of the 12 Hz codec (1920 samples at 24 kHz).
pub const FRAME_SECONDS: f64 = 1920.0 / 24_000.0;
/// The reference bans the end token for the first frames so that no request ends silent.
const MIN_FRAMES: usize = 2;
/// The last 1024 ids of the codec vocabulary are control tokens, never generated but
/// for the end token.
const CONTROL_TOKENS: usize = 1024;
/// Prompt tokens that make a request's prompt unlike any other's (see `prompt_tokens`).
const NONCE_TOKENS: usize = 5;

/// One frame: a code of every codebook, codebook 0 first.
pub type Frame = Vec<u32>;

/// A request prepared for the engine whose executor has not seen it yet.
struct Pending {
    layout: PromptLayout,
    sampler: Sampler,
    frames: Sender<Frame>,
}

/// Where callers leave the prompts of requests before they give them to the engine.
/// Cloned freely; every clone reaches the same executor.
#[derive(Clone)]
pub struct Qwen3TtsRequests {
    config: Arc<Qwen3TtsConfig>,
    pending: PendingRequests<Pending>,
}

impl Qwen3TtsRequests {
    /// Makes the engine request for `prompt`: its prompt tokens stand for the prompt's
    /// positions, `params` sample codebook 0 (in the engine), `predictor` samples the
    /// other codebooks (in the executor; its seed is the request's own). Frames arrive
    /// on the receiver as soon as each is complete; it closes when the request ends.
    pub fn prepare(
        &self,
        prompt: SpeechPrompt,
        params: GenerationParams,
        predictor: &GenerationParams,
    ) -> Result<(EngineCoreRequest, Receiver<Frame>)> {
        let layout = PromptLayout::new(prompt, &self.config)?;
        let request = EngineCoreRequest::new(self.prompt_tokens(layout.len())).with_params(params);
        let (frames, receiver) = channel();
        let pending = Pending {
            layout,
            sampler: Sampler::new(predictor),
            frames,
        };
        self.pending.insert(request.id.clone(), pending)?;
        Ok((request, receiver))
    }

    /// Drops a prepared request the engine refused.
    pub fn cancel(&self, id: &RequestId) {
        self.pending.cancel(id);
    }

    /// The engine knows prompts by their tokens only (for its prefix cache), but here a
    /// prompt position is a mix of text, codec tokens and a speaker embedding. The
    /// first tokens are therefore a number no other request has, written in control
    /// tokens (which the model never samples, so the repetition penalty never sees
    /// them): only a preempted request finds its own blocks again. The rest is padding.
    fn prompt_tokens(&self, len: usize) -> Vec<u32> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let t = &self.config.talker_config;
        let first = (t.vocab_size - CONTROL_TOKENS) as u32;
        let digits: Vec<u32> = (first..t.vocab_size as u32)
            .filter(|&id| id != t.codec_eos_token_id)
            .collect();
        let mut nonce = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut tokens = vec![t.codec_pad_id; len];
        for token in tokens.iter_mut().take(NONCE_TOKENS) {
            *token = digits[(nonce % digits.len() as u64) as usize];
            nonce /= digits.len() as u64;
        }
        tokens
    }
}

/// What the executor keeps for a request while it runs (preemptions included).
struct Live {
    prompt_len: usize,
    embeddings: PromptEmbeddings,
    /// Frames so far; frame `k` holds output token `k` in codebook 0.
    frames: Vec<Frame>,
    /// The talker's last final-norm hidden state and its position.
    last_hidden: Option<(usize, Tensor)>,
    sampler: Sampler,
    out: Sender<Frame>,
}

pub struct Qwen3TtsExecutor {
    config: Arc<Qwen3TtsConfig>,
    talker: Talker,
    predictor: CodePredictor,
    spec: ModelSpec,
    requests: Qwen3TtsRequests,
    live: HashMap<RequestId, Live>,
}

impl Qwen3TtsExecutor {
    pub fn new(config: Qwen3TtsConfig, talker: Talker, predictor: CodePredictor) -> Self {
        let t = &config.talker_config;
        let spec = ModelSpec {
            vocab_size: t.vocab_size,
            max_position_embeddings: t.max_position_embeddings,
            eos_token_ids: vec![t.codec_eos_token_id],
            kv_cache: KvCacheShape {
                num_layers: t.num_hidden_layers,
                num_kv_heads: t.num_key_value_heads,
                head_dim: t.head_dim(),
                dtype: talker.dtype(),
            },
            device: talker.device().clone(),
            audio_seconds_per_token: Some(FRAME_SECONDS),
            requires_audio: false,
        };
        let config = Arc::new(config);
        Self {
            requests: Qwen3TtsRequests {
                config: config.clone(),
                pending: PendingRequests::new("Qwen3TtsRequests"),
            },
            config,
            talker,
            predictor,
            spec,
            live: HashMap::new(),
        }
    }

    /// Loads the talker and code predictor of a checkpoint folder (config.json and
    /// model.safetensors in the official layout).
    pub fn from_dir(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let (config, vb): (Qwen3TtsConfig, _) = load_model_dir(dir, dtype, device)?;
        if let Some(kind) = &config.tokenizer_type {
            if kind != "qwen3_tts_tokenizer_12hz" {
                candle_core::bail!("speech tokenizer {kind} is not supported (only the 12 Hz one)");
            }
        }
        let t = &config.talker_config;
        t.check_supported().map_err(candle_core::Error::msg)?;
        // A checkpoint stored in bf16 (the official ones are) keeps its weights in
        // bf16 on the CPU: a step reads every weight for a few rows, so it is bound by
        // memory. The products are bf16 ones where the CPU multiplies bf16 pairs
        // (AVX512-BF16), f32 ones otherwise (docs/qwen3-tts.md).
        let half = (device.is_cpu() && dtype == DType::F32 && stores_only(dir, DType::BF16)?)
            .then_some(DType::BF16);
        let talker = Talker::load(t, vb.pp("talker"), half)?;
        let predictor = CodePredictor::load(
            &t.code_predictor_config,
            t.hidden_size,
            vb.pp("talker.code_predictor"),
            half,
        )?;
        Ok(Self::new(config, talker, predictor))
    }

    pub fn config(&self) -> &Qwen3TtsConfig {
        &self.config
    }

    /// The type the talker's and code predictor's products are computed in: bf16
    /// for a bf16 checkpoint on a CPU with AVX512-BF16 (inputs rounded to bf16, sums
    /// in f32), the executor's dtype otherwise.
    pub fn products_dtype(&self) -> DType {
        self.talker.products_dtype()
    }

    pub fn talker(&self) -> &Talker {
        &self.talker
    }

    pub fn predictor(&self) -> &CodePredictor {
        &self.predictor
    }

    /// The handle callers prepare requests with.
    pub fn requests(&self) -> Qwen3TtsRequests {
        self.requests.clone()
    }

    /// Gives every request seen for the first time its prompt embeddings.
    fn admit(&mut self, batch: &ForwardBatch) -> Result<()> {
        for seq in &batch.sequences {
            if self.live.contains_key(&seq.request_id) {
                continue;
            }
            let pending = self.requests.pending.take(&seq.request_id)?;
            let embeddings = pending
                .layout
                .embed(&self.config, &self.talker, &self.predictor)?;
            self.live.insert(
                seq.request_id.clone(),
                Live {
                    prompt_len: pending.layout.len(),
                    embeddings,
                    frames: Vec::new(),
                    last_hidden: None,
                    sampler: pending.sampler,
                    out: pending.frames,
                },
            );
        }
        Ok(())
    }

    fn live(&self, id: &RequestId) -> Result<&Live> {
        self.live
            .get(id)
            .ok_or_else(|| candle_core::Error::msg(format!("no state for request {id}")))
    }

    /// Completes the frames whose codebook-0 token this step feeds back for the first
    /// time, all in one batch of the code predictor.
    fn predict_frames(&mut self, batch: &ForwardBatch) -> Result<()> {
        let mut ids: Vec<&RequestId> = Vec::new();
        let mut hidden = Vec::new();
        let mut code0 = Vec::new();
        for seq in &batch.sequences {
            let live = self.live(&seq.request_id)?;
            let end = seq.context_len();
            if end <= live.prompt_len {
                continue;
            }
            let k = end - 1 - live.prompt_len;
            if k < live.frames.len() {
                continue;
            }
            if k > live.frames.len() {
                candle_core::bail!(
                    "request {}: frame {} is missing",
                    seq.request_id,
                    live.frames.len()
                );
            }
            let Some((pos, h)) = &live.last_hidden else {
                candle_core::bail!("request {}: no hidden state for frame {k}", seq.request_id);
            };
            if *pos != end - 2 {
                candle_core::bail!(
                    "request {}: hidden state of position {pos}, not {}",
                    seq.request_id,
                    end - 2
                );
            }
            ids.push(&seq.request_id);
            hidden.push(h.clone());
            code0.push(seq.tokens[seq.tokens.len() - 1]);
        }
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<RequestId> = ids.into_iter().cloned().collect();
        let mut samplers: Vec<Sampler> = ids
            .iter()
            .map(|id| self.live(id).map(|l| l.sampler.clone()))
            .collect::<Result<_>>()?;
        let codes = self.predictor.predict(
            &Tensor::stack(&hidden, 0)?,
            &self.talker.codec(&code0)?,
            |frame, _, logits| samplers[frame].sample(logits, &[]),
        )?;
        for (((id, sampler), rest), first) in ids.iter().zip(samplers).zip(codes).zip(code0) {
            if let Some(live) = self.live.get_mut(id) {
                let mut frame = Vec::with_capacity(rest.len() + 1);
                frame.push(first);
                frame.extend(rest);
                // A caller that stopped listening still lets the request run to its end.
                let _ = live.out.send(frame.clone());
                live.frames.push(frame);
                live.sampler = sampler;
            }
        }
        Ok(())
    }

    /// The talker's input for every token of the step: prompt rows as laid out, output
    /// tokens as the sum of their frame's codebook embeddings plus the text due then.
    fn inputs(&self, batch: &ForwardBatch) -> Result<Tensor> {
        let mut parts = Vec::new();
        for seq in &batch.sequences {
            let live = self.live(&seq.request_id)?;
            let (start, end) = (seq.start_pos, seq.context_len());
            let prompt_end = end.min(live.prompt_len);
            if start < prompt_end {
                parts.push(
                    live.embeddings
                        .prefill
                        .narrow(0, start, prompt_end - start)?,
                );
            }
            if end > live.prompt_len {
                let first = start.max(live.prompt_len) - live.prompt_len;
                let frames = &live.frames[first..end - live.prompt_len];
                parts.push(self.frame_inputs(live, first, frames)?);
            }
        }
        Tensor::cat(&parts, 0)
    }

    /// Inputs of output positions `first..` with these frames.
    fn frame_inputs(&self, live: &Live, first: usize, frames: &[Frame]) -> Result<Tensor> {
        let x = frame_embeddings(&self.talker, &self.predictor, frames)?;
        let trailing = &live.embeddings.trailing;
        let text_rows = trailing.dim(0)?;
        let due: Vec<u32> = (first..first + frames.len())
            .map(|k| k.min(text_rows) as u32)
            .collect();
        let text = Tensor::cat(&[trailing, &live.embeddings.pad], 0)?
            .index_select(&Tensor::new(due.as_slice(), trailing.device())?, 0)?;
        x + text
    }
}

impl ModelExecutor for Qwen3TtsExecutor {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.admit(batch)?;
        self.predict_frames(batch)?;
        let x = self.inputs(batch)?;
        let out = self.talker.forward_paged(x, batch, kv_cache)?;
        let wanted = batch.sequences.iter().filter(|s| s.compute_logits);
        for (row, seq) in wanted.enumerate() {
            if let Some(live) = self.live.get_mut(&seq.request_id) {
                live.last_hidden = Some((seq.context_len() - 1, out.hidden.get(row)?));
            }
        }
        Ok(out.logits)
    }

    fn process_logits(&self, tokens: &[u32], prompt_len: usize, logits: &mut [f32]) {
        let t = &self.config.talker_config;
        let eos = t.codec_eos_token_id as usize;
        let control = t.vocab_size.saturating_sub(CONTROL_TOKENS);
        for (id, logit) in logits.iter_mut().enumerate().skip(control) {
            if id != eos {
                *logit = f32::NEG_INFINITY;
            }
        }
        if tokens.len().saturating_sub(prompt_len) < MIN_FRAMES {
            if let Some(logit) = logits.get_mut(eos) {
                *logit = f32::NEG_INFINITY;
            }
        }
    }

    fn release(&mut self, request_id: &RequestId) {
        self.live.remove(request_id);
        self.requests.cancel(request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests() -> Qwen3TtsRequests {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/qwen3-tts-tiny/config.json"
        );
        let config: Qwen3TtsConfig =
            serde_json::from_str(&std::fs::read_to_string(path).expect("config")).expect("valid");
        Qwen3TtsRequests {
            config: Arc::new(config),
            pending: PendingRequests::new("Qwen3TtsRequests"),
        }
    }

    #[test]
    fn prompt_tokens_differ_per_request_and_are_never_sampled() {
        let r = requests();
        let t = &r.config.talker_config;
        let (a, b) = (r.prompt_tokens(12), r.prompt_tokens(12));
        assert_eq!(a.len(), 12);
        assert_ne!(a, b, "two requests never share a prompt");
        let control = (t.vocab_size - CONTROL_TOKENS) as u32;
        for token in a.iter().chain(&b) {
            assert!(*token >= control && (*token as usize) < t.vocab_size);
            assert_ne!(*token, t.codec_eos_token_id);
        }
    }
}
