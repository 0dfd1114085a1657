//! Voxtral Realtime as a [`ModelExecutor`]: every decoder position has its own slice of
//! audio (80 ms for the real checkpoint), whose embedding is added to the embedding of
//! the token fed there. Each request is an audio stream: its encoder state lives here,
//! advanced only as far as the positions the engine runs, so the text follows the audio
//! a fixed delay behind. The streams of one step are encoded together, then decoded
//! together over the paged cache.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Result, Tensor};

use super::config::VoxtralRealtimeConfig;
use super::decoder::TextDecoder;
use super::encoder::{AudioEncoder, EncoderStream};
use super::mel::{StreamingMel, DEFAULT_GLOBAL_LOG_MEL_MAX};
use super::tokenizer::Tekken;
use crate::engine::{
    ForwardBatch, KvCacheShape, LayerKvCache, ModelExecutor, ModelSpec, RequestId,
};
use crate::models::shared::weights::load_model_dir;

/// One request's audio as encoded so far.
struct Stream {
    encoder: EncoderStream,
    /// Decoder embeddings of the audio encoded so far, `[positions, hidden]`. Kept
    /// whole so that a preempted request recomputes its cache without re-encoding.
    embeds: Option<Tensor>,
    positions: usize,
}

pub struct VoxtralRealtime {
    encoder: AudioEncoder,
    decoder: TextDecoder,
    mel: StreamingMel,
    tokenizer: Tekken,
    config: VoxtralRealtimeConfig,
    delay_tokens: usize,
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
        let tokenizer =
            Tekken::from_file(&dir.join("tekken.json")).map_err(candle_core::Error::wrap)?;
        let (config, vb): (VoxtralRealtimeConfig, _) = load_model_dir(dir, dtype, device)?;
        let audio = tokenizer
            .audio()
            .ok_or_else(|| candle_core::Error::msg("tekken.json has no audio section"))?;
        if audio.transcription_format != "streaming" {
            candle_core::bail!(
                "tekken.json's transcription format is {:?}, not streaming",
                audio.transcription_format
            );
        }
        let per_token = audio.samples_per_token();
        let hop = audio.audio_encoding_config.hop_length;
        if hop != crate::models::whisper::mel::HOP_LENGTH
            || audio.audio_encoding_config.window_size != crate::models::whisper::mel::N_FFT
            || audio.sampling_rate != 16_000
            || per_token != hop * config.audio_length_per_tok
        {
            candle_core::bail!("unsupported audio settings in tekken.json: {audio:?}");
        }
        let delay_tokens = match delay_ms.or(audio.transcription_delay_ms) {
            Some(ms) => {
                let tokens = audio.delay_tokens(ms);
                if tokens == 0 || (tokens * per_token) as f64 != ms / 1000.0 * 16_000.0 {
                    candle_core::bail!(
                        "a delay of {ms} ms is not a whole number of {} ms positions",
                        per_token / 16
                    );
                }
                tokens
            }
            None => config.default_num_delay_tokens,
        };
        let global_max = read_global_log_mel_max(dir)?;
        let encoder = AudioEncoder::load(&config, &vb)?;
        let decoder = TextDecoder::load(&config.text_config, delay_tokens, &vb)?;
        let t = &config.text_config;
        let eos = tokenizer
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
            tokenizer,
            config,
            delay_tokens,
            spec,
            streams: HashMap::new(),
        })
    }

    pub fn tokenizer(&self) -> &Tekken {
        &self.tokenizer
    }

    pub fn delay_tokens(&self) -> usize {
        self.delay_tokens
    }

    pub fn config(&self) -> &VoxtralRealtimeConfig {
        &self.config
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
            let mel = self.mel.frames(padded, true, done * per, n * per)?;
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
            let audio = seq.audio.as_deref().ok_or_else(|| {
                candle_core::Error::msg(format!("request {} has no audio", seq.request_id))
            })?;
            let mel = self
                .mel
                .frames(audio, true, done * per, (needed - done) * per)?;
            work.push((seq.request_id.clone(), mel));
        }
        // Out of the map while encoding, so that each stream can be borrowed mutably.
        let mut taken = Vec::with_capacity(work.len());
        for (id, _) in &work {
            let stream = match self.streams.remove(id) {
                Some(stream) => stream,
                None => Stream {
                    encoder: self.encoder.new_stream()?,
                    embeds: None,
                    positions: 0,
                },
            };
            taken.push(stream);
        }
        let mels: Vec<Tensor> = work.iter().map(|(_, mel)| mel.clone()).collect();
        let mut encoders: Vec<&mut EncoderStream> =
            taken.iter_mut().map(|s| &mut s.encoder).collect();
        let encoded = self.encoder.encode(&mut encoders, &mels);
        let mut result = Ok(());
        match encoded {
            Ok(embeds) => {
                for (stream, new) in taken.iter_mut().zip(embeds) {
                    stream.positions += new.dim(0)?;
                    stream.embeds = Some(match stream.embeds.take() {
                        Some(old) => Tensor::cat(&[&old, &new], 0)?,
                        None => new,
                    });
                }
            }
            Err(e) => result = Err(e),
        }
        for ((id, _), stream) in work.into_iter().zip(taken) {
            self.streams.insert(id, stream);
        }
        result
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
                let embeds = self
                    .streams
                    .get(&seq.request_id)
                    .and_then(|s| s.embeds.as_ref())
                    .ok_or_else(|| candle_core::Error::msg("stream not encoded"))?;
                embeds.narrow(0, seq.start_pos, seq.tokens.len())
            })
            .collect::<Result<Vec<_>>>()?;
        let audio = Tensor::cat(&rows, 0)?;
        self.decoder.forward(batch, &audio, kv_cache)
    }

    fn release(&mut self, request_id: &RequestId) {
        self.streams.remove(request_id);
    }
}
