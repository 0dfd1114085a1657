//! Voxtral Realtime as a [`ModelExecutor`]: every decoder position has its own slice of
//! audio (80 ms for the real checkpoint), whose embedding is added to the embedding of
//! the token fed there. Each request is an audio stream: its encoder state lives here,
//! advanced only as far as the positions the engine runs, so the text follows the audio
//! a fixed delay behind. The streams of one step are encoded together, then decoded
//! together over the paged cache.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Result, Tensor};

use super::config::VoxtralRealtimeConfig;
use super::decoder::TextDecoder;
use super::encoder::{AudioEncoder, EncoderStream};
use super::format::StreamingFormat;
use super::mel::{StreamingMel, DEFAULT_GLOBAL_LOG_MEL_MAX};
use crate::engine::{
    ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec, RequestId,
};
use crate::models::shared::weights::load_model_dir;

/// One request's audio as encoded so far.
struct Stream {
    /// Audio that arrives while the request runs; None when it came whole with the
    /// request.
    live: Option<LiveAudio>,
    encoder: EncoderStream,
    /// Decoder embeddings of the audio encoded so far, chunk by chunk as encoded
    /// (`[positions, hidden]` each; not joined, which would copy them all every step).
    /// Kept so that a preempted request recomputes its cache without re-encoding.
    embeds: Vec<Tensor>,
    positions: usize,
}

impl Stream {
    fn new(live: Option<LiveAudio>, encoder: EncoderStream) -> Self {
        Self {
            live,
            encoder,
            embeds: Vec::new(),
            positions: 0,
        }
    }

    /// Embeddings of positions `start..start + len`: `[len, hidden]`.
    fn embeddings(&self, start: usize, len: usize) -> Result<Tensor> {
        if start + len > self.positions {
            candle_core::bail!(
                "positions {start}..{} are not encoded (only {})",
                start + len,
                self.positions
            );
        }
        let mut pieces = Vec::new();
        let mut first = 0;
        for chunk in &self.embeds {
            let rows = chunk.dim(0)?;
            let (from, to) = (start.max(first), (start + len).min(first + rows));
            if from < to {
                pieces.push(chunk.narrow(0, from - first, to - from)?);
            }
            first += rows;
        }
        Tensor::cat(&pieces, 0)
    }
}

/// The part of a live recording the next mel frames read.
#[derive(Default)]
struct LiveAudio {
    samples: Vec<f32>,
    /// Index in the recording of `samples[0]`.
    offset: usize,
    ended: bool,
}

impl LiveAudio {
    fn len(&self) -> usize {
        self.offset + self.samples.len()
    }

    /// Drops the samples no frame from `next_frame` on reads.
    fn forget_before(&mut self, next_frame: usize) {
        let keep_from = StreamingMel::first_sample(next_frame).max(self.offset);
        self.samples.drain(..keep_from - self.offset);
        self.offset = keep_from;
    }
}

pub struct VoxtralRealtime {
    encoder: AudioEncoder,
    decoder: TextDecoder,
    mel: StreamingMel,
    format: Arc<StreamingFormat>,
    spec: ModelSpec,
    streams: HashMap<RequestId, Stream>,
}

impl VoxtralRealtime {
    /// Loads a Hugging Face checkpoint folder: `config.json`, `*.safetensors`,
    /// `tekken.json`, and `preprocessor_config.json` when it has one. `delay_ms` is how
    /// far the text runs behind the audio (a multiple of one position's duration);
    /// None takes the tokenizer's default.
    pub fn from_dir(
        dir: &Path,
        delay_ms: Option<f64>,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let (config, vb): (VoxtralRealtimeConfig, _) = load_model_dir(dir, dtype, device)?;
        let format = Arc::new(StreamingFormat::with_config(dir, &config, delay_ms)?);
        let delay_tokens = format.delay_tokens();
        let global_max = read_global_log_mel_max(dir)?;
        let encoder = AudioEncoder::load(&config, &vb)?;
        let decoder = TextDecoder::load(&config.text_config, delay_tokens, &vb)?;
        let t = &config.text_config;
        let eos = format
            .tokenizer()
            .special("</s>")
            .ok_or_else(|| candle_core::Error::msg("tekken.json has no </s> token"))?;
        let spec = ModelSpec {
            vocab_size: t.vocab_size,
            max_position_embeddings: t.max_positions(),
            eos_token_ids: vec![eos],
            kv_cache: KvCacheShape {
                num_layers: t.num_hidden_layers,
                num_kv_heads: t.num_key_value_heads,
                head_dim: t.head_dim,
                dtype,
            },
            device: device.clone(),
            audio_seconds_per_token: None,
            requires_audio: true,
        };
        Ok(Self {
            encoder,
            decoder,
            mel: StreamingMel::new(config.audio_config.num_mel_bins, global_max, device)?,
            format,
            spec,
            streams: HashMap::new(),
        })
    }

    /// The prompt, padding and tokenizer requests to this model are made with.
    pub fn format(&self) -> &Arc<StreamingFormat> {
        &self.format
    }

    /// The decoder embeddings of a whole (padded) recording, encoded as one stream fed
    /// `positions_per_chunk` positions at a time: `[positions, hidden]`.
    pub fn encode_recording(&self, padded: &[f32], positions_per_chunk: usize) -> Result<Tensor> {
        let per = self.encoder.mel_frames_per_embedding();
        let positions = StreamingMel::available(padded.len(), true) / per;
        let mut stream = self.encoder.new_stream()?;
        let mut rows = Vec::new();
        let mut done = 0;
        while done < positions {
            let n = positions_per_chunk.max(1).min(positions - done);
            let mel = self.mel.frames(padded, 0, true, done * per, n * per)?;
            rows.extend(self.encoder.encode(&mut [&mut stream], &[mel])?);
            done += n;
        }
        Tensor::cat(&rows, 0)
    }

    /// Encodes, for every sequence of `batch`, the audio of the positions it runs that
    /// its stream has not encoded yet; all streams in one pass.
    fn encode_ahead(&mut self, batch: &ForwardBatch) -> Result<()> {
        let per = self.encoder.mel_frames_per_embedding();
        let mut work = Vec::new();
        for seq in &batch.sequences {
            let needed = seq.context_len();
            let done = self.streams.get(&seq.request_id).map_or(0, |s| s.positions);
            if needed <= done {
                continue;
            }
            let (audio, offset, ended) = match (
                self.streams
                    .get(&seq.request_id)
                    .and_then(|s| s.live.as_ref()),
                seq.audio.as_deref(),
            ) {
                (Some(live), _) => (&live.samples[..], live.offset, live.ended),
                (None, Some(audio)) => (audio, 0, true),
                (None, None) => candle_core::bail!("request {} has no audio", seq.request_id),
            };
            let mel = self
                .mel
                .frames(audio, offset, ended, done * per, (needed - done) * per)?;
            work.push((seq.request_id.clone(), mel));
        }
        // Encoded from copies of the streams' states, kept only if every stream
        // encodes: a failed step is retried sequence by sequence from the same state.
        let mut states = Vec::with_capacity(work.len());
        for (id, _) in &work {
            states.push(match self.streams.get(id) {
                Some(stream) => stream.encoder.clone(),
                None => self.encoder.new_stream()?,
            });
        }
        let mels: Vec<Tensor> = work.iter().map(|(_, mel)| mel.clone()).collect();
        let mut refs: Vec<&mut EncoderStream> = states.iter_mut().collect();
        let embeds = self.encoder.encode(&mut refs, &mels)?;
        for (((id, _), state), new) in work.into_iter().zip(states).zip(embeds) {
            let stream = self
                .streams
                .entry(id)
                .or_insert_with(|| Stream::new(None, state.clone()));
            stream.encoder = state;
            stream.positions += new.dim(0)?;
            stream.embeds.push(new);
            if let Some(live) = &mut stream.live {
                live.forget_before(stream.positions * per);
            }
        }
        Ok(())
    }
}

/// `global_log_mel_max` from `preprocessor_config.json`, or transformers' default.
fn read_global_log_mel_max(dir: &Path) -> Result<f32> {
    let path = dir.join("preprocessor_config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(DEFAULT_GLOBAL_LOG_MEL_MAX);
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| candle_core::Error::msg(format!("invalid {}: {e}", path.display())))?;
    Ok(value
        .get("global_log_mel_max")
        .and_then(|v| v.as_f64())
        .map_or(DEFAULT_GLOBAL_LOG_MEL_MAX, |v| v as f32))
}

impl ModelExecutor for VoxtralRealtime {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn execute(&mut self, batch: &ForwardBatch, kv_cache: &[LayerKvCache]) -> Result<Tensor> {
        self.encode_ahead(batch)?;
        let rows = batch
            .sequences
            .iter()
            .map(|seq| {
                self.streams
                    .get(&seq.request_id)
                    .ok_or_else(|| candle_core::Error::msg("stream not encoded"))?
                    .embeddings(seq.start_pos, seq.tokens.len())
            })
            .collect::<Result<Vec<_>>>()?;
        let audio = Tensor::cat(&rows, 0)?;
        self.decoder.forward(batch, &audio, kv_cache)
    }

    fn takes_live_audio(&self) -> bool {
        true
    }

    fn append_audio(
        &mut self,
        request_id: &RequestId,
        samples: &[f32],
        ended: bool,
    ) -> Result<usize> {
        if !self.streams.contains_key(request_id) {
            let stream = Stream::new(Some(LiveAudio::default()), self.encoder.new_stream()?);
            self.streams.insert(request_id.clone(), stream);
        }
        let stream = self.streams.get_mut(request_id).expect("inserted above");
        let live = stream
            .live
            .as_mut()
            .ok_or_else(|| candle_core::Error::msg("the request's audio came whole"))?;
        live.samples.extend_from_slice(samples);
        live.ended = ended;
        let frames = StreamingMel::available(live.len(), ended);
        Ok(frames / self.encoder.mel_frames_per_embedding())
    }

    fn release(&mut self, request_id: &RequestId) {
        self.streams.remove(request_id);
    }
}
