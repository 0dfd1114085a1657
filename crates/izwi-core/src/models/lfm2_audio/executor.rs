//! LFM2-Audio on the engine. The engine schedules, caches (KV blocks and convolution
//! state) and samples one id per position; the executor gives each position its input
//! embedding (a text token's row, an adapter row for speech in, a frame's summed code
//! embeddings for speech out) and decides each step's modality as liquid-audio's
//! generation loops do. In an audio step it draws the frame itself (the audio head,
//! batched over the step's sequences) and leaves the engine one id to pick: [`FRAME`]
//! or, when codebook 0 says end-of-audio, [`FRAME_END`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use candle_core::{DType, Device, Result, Tensor};

use super::audio_encoder::AudioEncoder;
use super::audio_head::AudioHead;
use super::checkpoint::open_checkpoint;
use super::config::{Lfm2AudioConfig, END_OF_AUDIO};
use crate::engine::{
    ConvStateShape, EngineCoreRequest, ForwardBatch, GenerationParams, LayerKvCache, ModelExecutor,
    ModelSpec, RequestId,
};
use crate::models::lfm2::Lfm2;
use crate::models::shared::pending::PendingRequests;
use crate::models::shared::sampling::Sampler;

/// Text ids liquid-audio's loops act on (`<|im_end|>`, 7, is the engine's EOS).
pub const AUDIO_START: u32 = 128;
pub const TEXT_END: u32 = 130;

/// Ids past the text vocabulary (`vocab` = the backbone's): a generated frame, the
/// frame that ends the audio, and a prompt position of speech in.
pub fn frame_id(vocab: usize) -> u32 {
    vocab as u32
}
pub fn frame_end_id(vocab: usize) -> u32 {
    vocab as u32 + 1
}
fn audio_in_id(vocab: usize) -> u32 {
    vocab as u32 + 2
}
const EXTRA_IDS: usize = 3;

/// A part of a prompt, in order.
#[derive(Debug, Clone)]
pub enum Segment {
    Text(Vec<u32>),
    /// 16 kHz mono speech in.
    Audio(Arc<[f32]>),
    /// Frames the model spoke earlier in the conversation.
    Frames(Vec<Vec<u32>>),
}

/// How a turn alternates text and audio (liquid-audio's `generate_sequential` and
/// `generate_interleaved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// Text until `<|audio_start|>`, then frames until end-of-audio, then text (ASR,
    /// TTS).
    Sequential,
    /// `interleaved_n_text` text tokens, `interleaved_n_audio` frames, and so on; after
    /// `<|text_end|>` only frames, to end-of-audio (conversation).
    Interleaved,
}

/// One generated step of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TurnStep {
    Text(u32),
    /// All codebooks; an end-of-audio frame is all 2048.
    Frame(Vec<u32>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modality {
    Text,
    Audio,
}

/// The modality state of a turn, advanced as liquid-audio's loops advance it.
#[derive(Debug, Clone)]
struct Turn {
    generation: Generation,
    modality: Modality,
    /// Steps left in the current modality (interleaved); may go negative, as there.
    left: i64,
    text_done: bool,
    n_text: i64,
    n_audio: i64,
}

impl Turn {
    fn new(generation: Generation, n_text: usize, n_audio: usize) -> Self {
        Self {
            generation,
            modality: Modality::Text,
            left: n_text as i64,
            text_done: false,
            n_text: n_text as i64,
            n_audio: n_audio as i64,
        }
    }

    /// The modality of the step about to be sampled.
    fn step(&mut self) -> Modality {
        if self.generation == Generation::Interleaved {
            self.left -= 1;
        }
        self.modality
    }

    fn saw_text(&mut self, token: u32) {
        match self.generation {
            Generation::Sequential => {
                if token == AUDIO_START {
                    self.modality = Modality::Audio;
                }
            }
            Generation::Interleaved => {
                if token == TEXT_END {
                    self.text_done = true;
                }
                if self.left == 0 || self.text_done {
                    self.modality = Modality::Audio;
                    self.left = self.n_audio;
                }
            }
        }
    }

    fn saw_frame(&mut self, end: bool) {
        if self.generation == Generation::Interleaved && self.left == 0 && !self.text_done {
            self.modality = Modality::Text;
            self.left = self.n_text;
        }
        if end {
            self.modality = Modality::Text;
        }
    }
}

struct Pending {
    segments: Vec<Segment>,
    turn: Turn,
    sampler: Sampler,
    out: Sender<Vec<u32>>,
}

/// Where callers leave requests' prompts before giving the requests to the engine.
#[derive(Clone)]
pub struct Lfm2AudioRequests {
    config: Arc<Lfm2AudioConfig>,
    pending: PendingRequests<Pending>,
}

impl Lfm2AudioRequests {
    /// The engine request for a turn after `segments`: `params` sample text (in the
    /// engine), `audio` samples the frames' codes. The engine's tokens are the turn:
    /// text ids, and [`frame_id`] / [`frame_end_id`] where a frame was spoken; the
    /// frames themselves arrive on the receiver, in order, as each is drawn.
    pub fn prepare(
        &self,
        segments: Vec<Segment>,
        generation: Generation,
        params: GenerationParams,
        audio: &GenerationParams,
    ) -> Result<(EngineCoreRequest, Receiver<Vec<u32>>)> {
        let vocab = self.config.lfm.vocab_size;
        let mut tokens = Vec::new();
        for segment in &segments {
            match segment {
                Segment::Text(ids) => {
                    if let Some(&bad) = ids.iter().find(|&&t| t as usize >= vocab) {
                        candle_core::bail!("text token {bad} is outside the vocabulary");
                    }
                    tokens.extend(ids)
                }
                Segment::Audio(samples) => {
                    let n = audio_positions(&self.config, samples.len());
                    tokens.extend(std::iter::repeat_n(audio_in_id(vocab), n));
                }
                Segment::Frames(frames) => {
                    tokens.extend(std::iter::repeat_n(frame_id(vocab), frames.len()))
                }
            }
        }
        if tokens.is_empty() {
            candle_core::bail!("an empty prompt");
        }
        let request = EngineCoreRequest::new(tokens).with_params(params);
        let (out, receiver) = channel();
        let turn = Turn::new(
            generation,
            self.config.interleaved_n_text,
            self.config.interleaved_n_audio,
        );
        self.pending.insert(
            request.id.clone(),
            Pending {
                segments,
                turn,
                sampler: Sampler::new(audio),
                out,
            },
        )?;
        Ok((request, receiver))
    }

    /// Drops a prepared request the engine refused or that ended.
    pub fn cancel(&self, id: &RequestId) {
        self.pending.cancel(id);
    }
}

/// Backbone positions of `samples` samples of speech in.
fn audio_positions(config: &Lfm2AudioConfig, samples: usize) -> usize {
    let hop = (config.preprocessor.window_stride * config.preprocessor.sample_rate as f64) as usize;
    let mut n = samples / hop.max(1) + 1;
    for _ in 0..config.encoder.subsampling_factor.trailing_zeros() {
        n = n.div_ceil(2);
    }
    n
}

/// What the executor keeps for a running request.
struct Live {
    prompt_len: usize,
    /// `[prompt_len, hidden]`
    prompt: Tensor,
    generated: Vec<TurnStep>,
    /// The frame drawn in the last audio step, until its id comes back.
    pending_frame: Option<Vec<u32>>,
    turn: Turn,
    sampler: Sampler,
    out: Sender<Vec<u32>>,
}

pub struct Lfm2AudioExecutor {
    backbone: Lfm2,
    encoder: AudioEncoder,
    head: AudioHead,
    spec: ModelSpec,
    vocab: usize,
    requests: Lfm2AudioRequests,
    live: HashMap<RequestId, Live>,
}

impl Lfm2AudioExecutor {
    /// Loads an LFM2-Audio folder (f32; the encoder runs in f32).
    pub fn from_dir(dir: &Path, device: &Device) -> Result<Self> {
        let (config, vb) = open_checkpoint(dir, DType::F32, device)?;
        let backbone_vb = vb
            .clone()
            .rename_f(|name| match name.strip_prefix("model.") {
                Some(rest) => format!("lfm.{rest}"),
                None => name.to_string(),
            });
        let backbone = Lfm2::load(config.lfm.clone(), backbone_vb)?;
        let encoder = AudioEncoder::load(&config, &vb)?;
        let head = AudioHead::load(&config, &vb)?;
        let vocab = config.lfm.vocab_size;
        let mut spec = backbone.spec().clone();
        spec.vocab_size = vocab + EXTRA_IDS;
        Ok(Self {
            backbone,
            encoder,
            head,
            spec,
            vocab,
            requests: Lfm2AudioRequests {
                config: Arc::new(config),
                pending: PendingRequests::new("Lfm2AudioRequests"),
            },
            live: HashMap::new(),
        })
    }

    pub fn requests(&self) -> Lfm2AudioRequests {
        self.requests.clone()
    }

    /// The backbone's text vocabulary (frame ids come after it).
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    fn admit(&mut self, batch: &ForwardBatch) -> Result<()> {
        for seq in &batch.sequences {
            if self.live.contains_key(&seq.request_id) {
                continue;
            }
            let pending = self.requests.pending.take(&seq.request_id)?;
            let mut rows = Vec::new();
            for segment in &pending.segments {
                rows.push(match segment {
                    Segment::Text(ids) => self
                        .backbone
                        .embed(&Tensor::new(ids.as_slice(), &self.spec.device)?)?,
                    Segment::Audio(samples) => {
                        let rows = self.encoder.embed(samples)?;
                        let laid_out = audio_positions(&self.requests.config, samples.len());
                        if rows.dim(0)? != laid_out {
                            candle_core::bail!(
                                "speech of {} samples encoded to {} positions, {laid_out} laid out",
                                samples.len(),
                                rows.dim(0)?
                            );
                        }
                        rows
                    }
                    Segment::Frames(frames) => self.head.frame_embeddings(frames)?,
                });
            }
            let prompt = Tensor::cat(&rows, 0)?;
            self.live.insert(
                seq.request_id.clone(),
                Live {
                    prompt_len: prompt.dim(0)?,
                    prompt,
                    generated: Vec::new(),
                    pending_frame: None,
                    turn: pending.turn,
                    sampler: pending.sampler,
                    out: pending.out,
                },
            );
        }
        Ok(())
    }

    /// Records the tokens the engine sampled since the last step.
    fn observe(&mut self, batch: &ForwardBatch) -> Result<()> {
        let (frame, frame_end) = (frame_id(self.vocab), frame_end_id(self.vocab));
        for seq in &batch.sequences {
            let Some(live) = self.live.get_mut(&seq.request_id) else {
                continue;
            };
            for (i, &token) in seq.tokens.iter().enumerate() {
                let pos = seq.start_pos + i;
                if pos < live.prompt_len || pos - live.prompt_len < live.generated.len() {
                    continue;
                }
                let step = if token == frame || token == frame_end {
                    let Some(codes) = live.pending_frame.take() else {
                        candle_core::bail!(
                            "request {}: a frame id without a frame",
                            seq.request_id
                        );
                    };
                    live.turn.saw_frame(token == frame_end);
                    TurnStep::Frame(codes)
                } else {
                    live.turn.saw_text(token);
                    TurnStep::Text(token)
                };
                live.generated.push(step);
            }
        }
        Ok(())
    }

    /// The backbone's input for every token of the step.
    fn inputs(&self, batch: &ForwardBatch) -> Result<Tensor> {
        let mut parts = Vec::new();
        for seq in &batch.sequences {
            let live = self
                .live
                .get(&seq.request_id)
                .ok_or_else(|| candle_core::Error::msg("a request without state"))?;
            let (start, end) = (seq.start_pos, seq.context_len());
            let prompt_end = end.min(live.prompt_len);
            if start < prompt_end {
                parts.push(live.prompt.narrow(0, start, prompt_end - start)?);
            }
            for k in start.max(live.prompt_len)..end {
                let Some(step) = live.generated.get(k - live.prompt_len) else {
                    candle_core::bail!("request {}: position {k} not generated", seq.request_id);
                };
                parts.push(match step {
                    TurnStep::Text(t) => self
                        .backbone
                        .embed(&Tensor::new(&[*t], &self.spec.device)?)?,
                    TurnStep::Frame(codes) => {
                        self.head.frame_embeddings(std::slice::from_ref(codes))?
                    }
                });
            }
        }
        Tensor::cat(&parts, 0)
    }
}

impl ModelExecutor for Lfm2AudioExecutor {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn conv_state_shape(&self) -> Option<ConvStateShape> {
        self.backbone.conv_state_shape()
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.admit(batch)?;
        self.observe(batch)?;
        let x = self.inputs(batch)?;
        let hidden = self.backbone.forward_embeddings(batch, kv_cache, &x)?;
        let wanted: Vec<&RequestId> = batch
            .sequences
            .iter()
            .filter(|s| s.compute_logits)
            .map(|s| &s.request_id)
            .collect();
        let width = self.spec.vocab_size;
        let mut audio_rows = Vec::new();
        let mut text_rows = Vec::new();
        for (r, id) in wanted.iter().enumerate() {
            let live = self
                .live
                .get(*id)
                .ok_or_else(|| candle_core::Error::msg("a request without state"))?;
            match live.turn.modality {
                Modality::Audio => audio_rows.push(r),
                Modality::Text => text_rows.push(r),
            }
        }
        // Text logits only where text is sampled: an audio step's row is its frame id.
        let mut rows = vec![vec![f32::NEG_INFINITY; width]; wanted.len()];
        if !text_rows.is_empty() {
            let index = Tensor::new(
                text_rows.iter().map(|&r| r as u32).collect::<Vec<_>>(),
                hidden.device(),
            )?;
            let text = self
                .backbone
                .logits(&hidden.index_select(&index, 0)?)?
                .to_vec2::<f32>()?;
            for (&r, logits) in text_rows.iter().zip(text) {
                rows[r][..logits.len()].copy_from_slice(&logits);
            }
        }
        if !audio_rows.is_empty() {
            let index = Tensor::new(
                audio_rows.iter().map(|&r| r as u32).collect::<Vec<_>>(),
                hidden.device(),
            )?;
            let mut samplers: Vec<Sampler> = audio_rows
                .iter()
                .map(|&r| self.live[wanted[r]].sampler.clone())
                .collect();
            let frames = self
                .head
                .frames(&hidden.index_select(&index, 0)?, &mut samplers)?;
            for ((&r, mut codes), sampler) in audio_rows.iter().zip(frames).zip(samplers) {
                let end = codes[0] == END_OF_AUDIO;
                if end {
                    codes.iter_mut().for_each(|c| *c = END_OF_AUDIO);
                }
                let forced = if end {
                    frame_end_id(self.vocab)
                } else {
                    frame_id(self.vocab)
                };
                rows[r][forced as usize] = 0.0;
                if let Some(live) = self.live.get_mut(wanted[r]) {
                    // A caller that stopped listening still lets the request run on.
                    let _ = live.out.send(codes.clone());
                    live.pending_frame = Some(codes);
                    live.sampler = sampler;
                }
            }
        }
        let n = rows.len();
        let logits = Tensor::from_vec(rows.concat(), (n, width), &self.spec.device)?;
        // The turns move on only once the step has succeeded: a failed batch is retried
        // sequence by sequence from the same place.
        for id in wanted {
            if let Some(live) = self.live.get_mut(id) {
                live.turn.step();
            }
        }
        Ok(logits)
    }

    fn release(&mut self, request_id: &RequestId) {
        self.live.remove(request_id);
        self.requests.cancel(request_id);
    }
}
