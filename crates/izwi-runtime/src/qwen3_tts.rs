//! Speech from a Qwen3-TTS checkpoint folder named as the voice (`izwi speak --voice
//! DIR`): the folder is loaded for the job, the text spoken on its engine (in a voice
//! cloned from a sample, by its speaker embedding or, with its transcript, in context,
//! when one is given), and the audio appended to the WAV as the codec decodes it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_audio::WavFile;
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::qwen3_tts::{Qwen3Tts, SpeakOptions, VoiceSample};
use izwi_store::{Job, JobKind, JobMetrics, NewJob};
use serde::{Deserialize, Serialize};

use crate::runtime::Inner;
use crate::speak::{check_output_file, check_text, excerpt, metrics};
use crate::{Event, Runtime, RuntimeError, SpeakRequest};

/// Whether `voice` is the folder of a Qwen3-TTS checkpoint (its config.json says so).
pub(crate) fn checkpoint(voice: &str) -> Option<PathBuf> {
    let dir = Path::new(voice.trim());
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    (config.get("model_type")?.as_str()? == "qwen3_tts").then(|| dir.to_path_buf())
}

/// Why a checkpoint cannot clone a voice from a sample, if it cannot: only Base
/// checkpoints (with a speaker encoder) can.
fn cannot_clone(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    let kind = config
        .get("tts_model_type")
        .and_then(|v| v.as_str())
        .unwrap_or("unknown");
    let base = kind == "base" && config.get("speaker_encoder_config").is_some();
    (!base).then(|| {
        format!(
            "{} is a {kind} checkpoint: only Base checkpoints clone a voice from a sample",
            dir.display()
        )
    })
}

/// Text files and batches go sentence by sentence through a Piper voice; a Qwen3-TTS
/// checkpoint speaks one text so far.
pub(crate) fn refuse_beyond_text(voice: &str) -> Result<(), RuntimeError> {
    match checkpoint(voice) {
        Some(dir) => Err(RuntimeError::InvalidRequest(format!(
            "{} is a Qwen3-TTS checkpoint; it can only speak a --text so far, not files or \
             batches",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// The longest voice sample a clone is made from.
pub const MAX_REFERENCE_SECONDS: f64 = 60.0;

/// Speech by a Qwen3-TTS checkpoint, with what its variant takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Qwen3SpeakRequest {
    /// The checkpoint's folder.
    pub voice: String,
    pub text: String,
    /// A recording of a voice to clone (Base checkpoints; any format Izwi decodes, up to
    /// [`MAX_REFERENCE_SECONDS`]); its speaker embedding is what is cloned.
    #[serde(default)]
    pub reference_audio: Option<PathBuf>,
    /// What is said in `reference_audio`: with it the voice is cloned in context (the
    /// talker continues from the sample's codes and transcript), closer than by the
    /// speaker embedding alone.
    #[serde(default)]
    pub reference_text: Option<String>,
    /// A preset speaker (CustomVoice checkpoints).
    #[serde(default)]
    pub speaker: Option<String>,
    /// How to speak (CustomVoice), or the voice to design (VoiceDesign).
    #[serde(default)]
    pub instructions: Option<String>,
    /// One of the checkpoint's languages; the model tells when None.
    #[serde(default)]
    pub language: Option<String>,
    /// Where the WAV goes; default `<data dir>/audio/speech-<job id>.wav`.
    #[serde(default)]
    pub output: Option<PathBuf>,
}

/// What the job's row keeps of the request: not the text.
#[derive(Serialize)]
struct Params<'a> {
    voice: &'a str,
    chars: usize,
    output: Option<&'a Path>,
    reference_audio: Option<&'a Path>,
    /// Whether the sample's transcript was given (the transcript itself is not kept).
    in_context: bool,
    speaker: Option<&'a str>,
    instructions: Option<&'a str>,
    language: Option<&'a str>,
}

impl Runtime {
    /// Queues a speak job in a Qwen3-TTS checkpoint folder, with a cloned voice, a
    /// preset speaker, instructions or a language as the request says.
    pub async fn speak_qwen3(&self, request: Qwen3SpeakRequest) -> Result<Job, RuntimeError> {
        let Some(dir) = checkpoint(&request.voice) else {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is not a Qwen3-TTS checkpoint folder",
                request.voice
            )));
        };
        if let Some(transcript) = &request.reference_text {
            if request.reference_audio.is_none() {
                return Err(RuntimeError::InvalidRequest(
                    "a reference text is the transcript of a voice sample: give the sample \
                     (reference audio) too"
                        .into(),
                ));
            }
            if !transcript.chars().any(char::is_alphanumeric) {
                return Err(RuntimeError::InvalidRequest(
                    "the reference text has no words: give what is said in the sample".into(),
                ));
            }
        }
        if let Some(sample) = &request.reference_audio {
            if let Some(why) = cannot_clone(&dir) {
                return Err(RuntimeError::InvalidRequest(why));
            }
            if !sample.is_file() {
                return Err(RuntimeError::InvalidRequest(format!(
                    "no voice sample at {}",
                    sample.display()
                )));
            }
        }
        self.start_qwen3(dir, request).await
    }

    /// Queues a plain speak request whose voice is a Qwen3-TTS checkpoint at `dir`.
    pub(crate) async fn speak_in_checkpoint(
        &self,
        dir: PathBuf,
        request: &SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        if request.speed.is_some() {
            return Err(RuntimeError::InvalidRequest(
                "a Qwen3-TTS voice has no speed setting".into(),
            ));
        }
        let request = Qwen3SpeakRequest {
            voice: request.voice.clone(),
            text: request.text.clone(),
            output: request.output.clone(),
            ..Qwen3SpeakRequest::default()
        };
        self.start_qwen3(dir, request).await
    }

    async fn start_qwen3(
        &self,
        dir: PathBuf,
        request: Qwen3SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        check_text(&request.text)?;
        if let Some(output) = &request.output {
            check_output_file(output)?;
        }
        let params = Params {
            voice: &request.voice,
            chars: request.text.chars().count(),
            output: request.output.as_deref(),
            reference_audio: request.reference_audio.as_deref(),
            in_context: request.reference_text.is_some(),
            speaker: request.speaker.as_deref(),
            instructions: request.instructions.as_deref(),
            language: request.language.as_deref(),
        };
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Speak,
                model_id: Some(dir.display().to_string()),
                input: excerpt(&request.text),
                params: serde_json::to_value(&params)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        let output = request.output.clone();
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = match output {
                    Some(path) => path,
                    None => inner.store.audio_dir().join(format!("speech-{job_id}.wav")),
                };
                let metrics = run(&inner, &dir, &request, &output).await?;
                Ok((Some(output.display().to_string()), metrics))
            },
        );
        Ok(job)
    }
}

async fn run(
    inner: &Arc<Inner>,
    dir: &Path,
    request: &Qwen3SpeakRequest,
    output: &Path,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let (dir_owned, device) = (dir.to_path_buf(), inner.models.device().clone());
    let tts = tokio::task::spawn_blocking(move || {
        Qwen3Tts::from_dir(&dir_owned, &device, EngineCoreConfig::default())
    })
    .await
    .map_err(|e| RuntimeError::Speech(format!("loading stopped: {e}")))?
    .map_err(|e| RuntimeError::Speech(e.to_string()))?;
    let tts = Arc::new(tts);
    let mut options = SpeakOptions {
        speaker: request.speaker.clone(),
        instruction: request.instructions.clone(),
        language: request.language.clone(),
        ..SpeakOptions::default()
    };
    if let Some(reference) = &request.reference_audio {
        let (path, model) = (reference.to_path_buf(), tts.clone());
        let transcript = request.reference_text.clone();
        // Reading, resampling and encoding the sample is heavy: off the async thread.
        let (embedding, sample) = tokio::task::spawn_blocking(move || {
            let audio = voice_sample(&path, model.speaker_sample_rate())?;
            let speech =
                |e: izwi_core::models::qwen3_tts::SpeechError| RuntimeError::Speech(e.to_string());
            let embedding = model.speaker_embedding(&audio).map_err(speech)?;
            let sample = match transcript {
                Some(transcript) => Some(VoiceSample {
                    transcript,
                    codes: model.sample_codes(&audio).map_err(speech)?,
                }),
                None => None,
            };
            Ok::<_, RuntimeError>((embedding, sample))
        })
        .await
        .map_err(|e| RuntimeError::Speech(format!("reading the sample stopped: {e}")))??;
        options.speaker_embedding = Some(embedding);
        options.sample = sample;
    }
    let audio_error = |source| RuntimeError::Audio {
        path: output.to_path_buf(),
        source,
    };
    let mut wav = WavFile::create(output, tts.sample_rate()).map_err(audio_error)?;
    // Pieces are at most a second of audio: written as they come.
    let mut failed = None;
    tts.speak(&request.text, &options, |piece| {
        if failed.is_none() {
            failed = wav.write(&piece).err();
        }
    })
    .await
    .map_err(|e| RuntimeError::Speech(e.to_string()))?;
    if let Some(source) = failed {
        return Err(audio_error(source));
    }
    let seconds = wav.samples() as f64 / f64::from(tts.sample_rate());
    wav.finish().map_err(audio_error)?;
    Ok(metrics(started, seconds))
}

/// A voice sample as mono samples at `rate`.
fn voice_sample(path: &Path, rate: u32) -> Result<Vec<f32>, RuntimeError> {
    let audio_error = |source| RuntimeError::Audio {
        path: path.to_path_buf(),
        source,
    };
    let audio = izwi_audio::decode_file(path).map_err(audio_error)?;
    let mono = audio.to_mono();
    let seconds = mono.len() as f64 / f64::from(audio.sample_rate);
    if seconds > MAX_REFERENCE_SECONDS {
        return Err(RuntimeError::InvalidRequest(format!(
            "the voice sample is {seconds:.0} s long; a clone takes at most {MAX_REFERENCE_SECONDS:.0} s"
        )));
    }
    izwi_audio::resample(&mono, audio.sample_rate, rate).map_err(audio_error)
}
