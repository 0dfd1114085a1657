//! Text to audio with a Qwen3-TTS checkpoint folder: its tokenizer, the talker and code
//! predictor on a running engine (so concurrent utterances are batched), and the codec
//! decoding frames to audio as they arrive.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use candle_core::{DType, Device};
use serde::Deserialize;
use tokenizers::Tokenizer;

use super::codec::{CodecDecoder, CodecEncoder, CodecStream};
use super::config::Qwen3TtsConfig;
use super::executor::{Qwen3TtsExecutor, Qwen3TtsRequests};
use super::prompt::{SpeechPrompt, VoiceReference};
use super::speaker_encoder::SpeakerEncoder;
use super::speaker_mel::{SpeakerMel, SAMPLE_RATE as SPEAKER_RATE};
use super::text_tokenizer::load_text_tokenizer;
use crate::engine::{Engine, EngineCoreConfig, FinishReason, GenerationParams};
use crate::models::shared::weights::load_model_dir;

/// Frames decoded together while streaming (about a second of audio).
pub const STREAM_CHUNK_FRAMES: usize = 12;

/// Errors of a whole utterance.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    #[error("{0}")]
    Load(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the model failed: {0}")]
    Model(String),
    #[error("the engine stopped")]
    Stopped,
}

/// `generation_config.json`: how the checkpoint's authors sample it.
#[derive(Debug, Clone, Deserialize)]
pub struct SamplingDefaults {
    #[serde(default = "yes")]
    pub do_sample: bool,
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    #[serde(default = "one")]
    pub top_p: f32,
    #[serde(default = "default_penalty")]
    pub repetition_penalty: f32,
    #[serde(default = "yes")]
    pub subtalker_dosample: bool,
    #[serde(default = "default_temperature")]
    pub subtalker_temperature: f32,
    #[serde(default = "default_top_k")]
    pub subtalker_top_k: usize,
    #[serde(default = "one")]
    pub subtalker_top_p: f32,
    #[serde(default = "default_max_frames")]
    pub max_new_tokens: usize,
}

fn yes() -> bool {
    true
}
fn one() -> f32 {
    1.0
}
fn default_temperature() -> f32 {
    0.9
}
fn default_top_k() -> usize {
    50
}
fn default_penalty() -> f32 {
    1.05
}
fn default_max_frames() -> usize {
    4096
}

/// How one utterance is spoken.
#[derive(Debug, Clone, Default)]
pub struct SpeakOptions {
    /// One of the checkpoint's languages, or None to let the model tell.
    pub language: Option<String>,
    /// Seeds sampling: the same seed gives the same audio.
    pub seed: Option<u64>,
    /// Always the likeliest code instead of sampling.
    pub greedy: bool,
    /// At most this many frames (80 ms each); the checkpoint's limit otherwise.
    pub max_frames: Option<usize>,
    /// Overrides the checkpoint's temperature (codebook 0 and the code predictor).
    pub temperature: Option<f32>,
    /// Overrides the checkpoint's repetition penalty on codebook 0.
    pub repetition_penalty: Option<f32>,
    /// A voice to clone: its speaker embedding ([`Qwen3Tts::speaker_embedding`]), the
    /// reference's x-vector-only mode (Base checkpoints).
    pub speaker_embedding: Option<Vec<f32>>,
    /// A preset speaker (CustomVoice checkpoints).
    pub speaker: Option<String>,
    /// How to speak (CustomVoice), or a description of the voice (VoiceDesign).
    pub instruction: Option<String>,
    /// A voice sample's transcript and codes to continue from, the reference's
    /// in-context cloning (Base checkpoints); `speaker_embedding` must be the same
    /// sample's.
    pub sample: Option<VoiceSample>,
    /// The whole text in the prompt before the first frame (the reference's
    /// non-streaming mode), or entering a token per frame while speaking. None: as the
    /// reference's own calls do for the checkpoint (the whole text for CustomVoice and
    /// VoiceDesign, entering while speaking for Base).
    pub whole_text: Option<bool>,
}

/// A voice sample for in-context cloning.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceSample {
    /// What is said in it.
    pub transcript: String,
    /// Its codes ([`Qwen3Tts::sample_codes`]).
    pub codes: Vec<Vec<u32>>,
}

/// What an utterance took.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechStats {
    pub frames: usize,
    pub samples: usize,
    /// Whether the model ended the utterance itself (not the frame limit).
    pub ended: bool,
}

pub struct Qwen3Tts {
    engine: Engine,
    requests: Qwen3TtsRequests,
    codec: Arc<CodecDecoder>,
    tokenizer: Tokenizer,
    defaults: SamplingDefaults,
    /// Base checkpoints only.
    speaker: Option<(SpeakerMel, SpeakerEncoder)>,
    /// Whether an utterance has its whole text in the prompt unless asked otherwise.
    whole_text: bool,
    /// The speech tokenizer's encoder, for in-context cloning (Base checkpoints only):
    /// loaded the first time a sample is encoded, so that other utterances never pay
    /// for it.
    encoder: Mutex<Option<Arc<CodecEncoder>>>,
    speech_tokenizer: PathBuf,
    device: Device,
}

impl Qwen3Tts {
    /// Loads a checkpoint folder in the official layout (config.json,
    /// generation_config.json, model.safetensors, tokenizer.json or vocab.json and
    /// merges.txt, speech_tokenizer/) and starts its engine.
    pub fn from_dir(
        dir: &Path,
        device: &Device,
        engine: EngineCoreConfig,
    ) -> Result<Self, SpeechError> {
        let load = |e: candle_core::Error| SpeechError::Load(format!("{}: {e}", dir.display()));
        let executor = Qwen3TtsExecutor::from_dir(dir, DType::F32, device).map_err(load)?;
        let codec = CodecDecoder::from_dir(&dir.join("speech_tokenizer"), device).map_err(load)?;
        let tokenizer = load_text_tokenizer(dir).map_err(SpeechError::Load)?;
        let defaults_path = dir.join("generation_config.json");
        let text = std::fs::read_to_string(&defaults_path).map_err(|e| {
            SpeechError::Load(format!("cannot read {}: {e}", defaults_path.display()))
        })?;
        let defaults = serde_json::from_str(&text)
            .map_err(|e| SpeechError::Load(format!("invalid {}: {e}", defaults_path.display())))?;
        let speaker = load_speaker_encoder(dir, device).map_err(load)?;
        let whole_text = matches!(
            read_config(dir)
                .map_err(SpeechError::Load)?
                .tts_model_type
                .as_deref(),
            Some("custom_voice" | "voice_design")
        );
        let requests = executor.requests();
        let engine = Engine::new(engine, Box::new(executor))
            .map_err(|e| SpeechError::Load(e.to_string()))?;
        Ok(Self {
            engine,
            requests,
            codec: Arc::new(codec),
            tokenizer,
            defaults,
            speaker,
            whole_text,
            encoder: Mutex::new(None),
            speech_tokenizer: dir.join("speech_tokenizer"),
            device: device.clone(),
        })
    }

    /// The speaker embedding (x-vector) of a voice sample: 24 kHz mono samples.
    pub fn speaker_embedding(&self, samples: &[f32]) -> Result<Vec<f32>, SpeechError> {
        let Some((mel, encoder)) = &self.speaker else {
            return Err(SpeechError::Invalid(
                "this checkpoint has no speaker encoder: only Base checkpoints clone voices".into(),
            ));
        };
        let run = || -> candle_core::Result<Vec<f32>> {
            encoder.forward(&mel.compute(samples)?)?.to_vec1::<f32>()
        };
        run().map_err(|e| SpeechError::Invalid(e.to_string()))
    }

    /// The codes of a voice sample (24 kHz mono samples) that in-context cloning
    /// continues from.
    pub fn sample_codes(&self, samples: &[f32]) -> Result<Vec<Vec<u32>>, SpeechError> {
        if self.speaker.is_none() {
            return Err(SpeechError::Invalid(
                "this checkpoint cannot clone a voice: only Base checkpoints can".into(),
            ));
        }
        self.codec_encoder()?
            .encode(samples)
            .map_err(|e| SpeechError::Invalid(e.to_string()))
    }

    fn codec_encoder(&self) -> Result<Arc<CodecEncoder>, SpeechError> {
        let mut slot = self
            .encoder
            .lock()
            .map_err(|_| SpeechError::Model("the codec encoder's lock is poisoned".into()))?;
        if let Some(encoder) = slot.as_ref() {
            return Ok(encoder.clone());
        }
        let encoder = CodecEncoder::from_dir(&self.speech_tokenizer, &self.device)
            .map_err(|e| SpeechError::Load(format!("{}: {e}", self.speech_tokenizer.display())))?;
        Ok(slot.insert(Arc::new(encoder)).clone())
    }

    /// The sample rate [`Qwen3Tts::speaker_embedding`] and [`Qwen3Tts::sample_codes`]
    /// take.
    pub fn speaker_sample_rate(&self) -> u32 {
        SPEAKER_RATE
    }

    pub fn sample_rate(&self) -> u32 {
        self.codec.sample_rate()
    }

    pub fn defaults(&self) -> &SamplingDefaults {
        &self.defaults
    }

    /// Whether the whole text enters the prompt before the first frame (CustomVoice and
    /// VoiceDesign checkpoints) rather than a token per frame (Base).
    pub fn speaks_whole_text(&self) -> bool {
        self.whole_text
    }

    /// The tokens the talker reads for `text`, in the reference's chat layout.
    pub fn text_ids(&self, text: &str) -> Result<Vec<u32>, SpeechError> {
        self.encode(&format!(
            "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"
        ))
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>, SpeechError> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| SpeechError::Invalid(format!("cannot tokenize the text: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Speaks `text`, handing each piece of audio to `on_audio` as soon as it is decoded.
    pub async fn speak(
        &self,
        text: &str,
        options: &SpeakOptions,
        mut on_audio: impl FnMut(Vec<f32>),
    ) -> Result<SpeechStats, SpeechError> {
        if !text.chars().any(char::is_alphanumeric) {
            return Err(SpeechError::Invalid(
                "nothing to say: the text has no words".into(),
            ));
        }
        let d = &self.defaults;
        let sampled = |on: bool, t: f32| {
            if on && !options.greedy {
                options.temperature.unwrap_or(t)
            } else {
                0.0
            }
        };
        let talker = GenerationParams {
            max_tokens: options.max_frames.unwrap_or(d.max_new_tokens).max(1),
            temperature: sampled(d.do_sample, d.temperature),
            top_k: d.top_k,
            top_p: d.top_p,
            repetition_penalty: options.repetition_penalty.unwrap_or(d.repetition_penalty),
            seed: options.seed,
            ..GenerationParams::default()
        };
        let predictor = GenerationParams {
            temperature: sampled(d.subtalker_dosample, d.subtalker_temperature),
            top_k: d.subtalker_top_k,
            top_p: d.subtalker_top_p,
            // Its own stream of randomness, still fixed by the request's seed.
            seed: options
                .seed
                .map(|s| s.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1)),
            ..GenerationParams::default()
        };
        let prompt = SpeechPrompt {
            text_ids: self.text_ids(text)?,
            language: options.language.clone(),
            speaker_embedding: options.speaker_embedding.clone(),
            speaker: options.speaker.clone(),
            instruct_ids: options
                .instruction
                .as_deref()
                .map(|i| self.encode(&format!("<|im_start|>user\n{i}<|im_end|>\n")))
                .transpose()?,
            reference: options
                .sample
                .as_ref()
                .map(|sample| {
                    if !sample.transcript.chars().any(char::is_alphanumeric) {
                        return Err(SpeechError::Invalid(
                            "the voice sample's transcript has no words".into(),
                        ));
                    }
                    Ok(VoiceReference {
                        text_ids: self.encode(&format!(
                            "<|im_start|>assistant\n{}<|im_end|>\n",
                            sample.transcript
                        ))?,
                        codes: sample.codes.clone(),
                    })
                })
                .transpose()?,
            whole_text: options.whole_text.unwrap_or(self.whole_text),
        };
        let (request, frames) = self
            .requests
            .prepare(prompt, talker, &predictor)
            .map_err(|e| SpeechError::Invalid(e.to_string()))?;
        let id = request.id.clone();
        let (_, mut outputs) = match self.engine.generate_streaming(request).await {
            Ok(started) => started,
            Err(e) => {
                self.requests.cancel(&id);
                return Err(SpeechError::Invalid(e.to_string()));
            }
        };
        // After a voice sample, its frames are the decoder's left context, as the
        // reference decodes the sample and the utterance together and cuts the sample's
        // audio off.
        let earlier = options
            .sample
            .as_ref()
            .map(|s| s.codes.clone())
            .unwrap_or_default();
        let mut stream =
            Some(CodecStream::new(self.codec.clone(), STREAM_CHUNK_FRAMES).after(earlier));
        let (mut count, mut samples) = (0, 0);
        let mut ended = false;
        while let Some(chunk) = outputs.recv().await {
            // Frames are sent before the step's tokens, so every frame computed so far
            // is here.
            let new: Vec<Vec<u32>> = frames.try_iter().collect();
            count += new.len();
            let taken = stream.take().ok_or(SpeechError::Stopped)?;
            let (back, audio) = decode(taken, new, false).await?;
            stream = Some(back);
            for piece in audio {
                samples += piece.len();
                on_audio(piece);
            }
            if let Some(done) = chunk.finished {
                match done.finish_reason {
                    FinishReason::Failed(message) => return Err(SpeechError::Model(message)),
                    FinishReason::Aborted => return Err(SpeechError::Stopped),
                    FinishReason::Stop => ended = true,
                    FinishReason::Length => {}
                }
                let taken = stream.take().ok_or(SpeechError::Stopped)?;
                let (_, audio) = decode(taken, Vec::new(), true).await?;
                for piece in audio {
                    samples += piece.len();
                    on_audio(piece);
                }
                return Ok(SpeechStats {
                    frames: count,
                    samples,
                    ended,
                });
            }
        }
        Err(SpeechError::Stopped)
    }
}

fn read_config(dir: &Path) -> Result<Qwen3TtsConfig, String> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("invalid {}: {e}", path.display()))
}

/// The speaker encoder of a Base checkpoint (`speaker_encoder.` in its weights).
fn load_speaker_encoder(
    dir: &Path,
    device: &Device,
) -> candle_core::Result<Option<(SpeakerMel, SpeakerEncoder)>> {
    let (config, vb): (Qwen3TtsConfig, _) = load_model_dir(dir, DType::F32, device)?;
    let Some(encoder) = config
        .speaker_encoder_config
        .filter(|_| config.tts_model_type.as_deref() == Some("base"))
    else {
        return Ok(None);
    };
    if encoder.sample_rate != SPEAKER_RATE {
        candle_core::bail!(
            "a speaker encoder at {} Hz is not supported",
            encoder.sample_rate
        );
    }
    Ok(Some((
        SpeakerMel::new(device)?,
        SpeakerEncoder::load(&encoder, vb.pp("speaker_encoder"))?,
    )))
}

/// Pushes `frames` through the stream on a blocking thread (decoding is heavy) and
/// gives the stream back with the audio that came out; `last` also flushes it.
async fn decode(
    mut stream: CodecStream,
    frames: Vec<Vec<u32>>,
    last: bool,
) -> Result<(CodecStream, Vec<Vec<f32>>), SpeechError> {
    tokio::task::spawn_blocking(move || {
        let mut audio = Vec::new();
        for frame in frames {
            if let Some(piece) = stream.push(frame)? {
                audio.push(piece);
            }
        }
        if last {
            audio.push(stream.finish()?);
        }
        Ok::<_, candle_core::Error>((stream, audio))
    })
    .await
    .map_err(|e| SpeechError::Model(format!("decoding stopped: {e}")))?
    .map_err(|e| SpeechError::Model(e.to_string()))
}
