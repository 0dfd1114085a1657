//! Speech with a Qwen3-TTS voice (`izwi speak --voice NAME|MODEL|DIR`): a library
//! voice (cloned, designed or preset), an imported model, or a checkpoint folder. The
//! model is loaded once and kept (models.rs), so every job speaking with it shares one
//! engine and their utterances are batched; each job appends its audio to its WAV as
//! the codec decodes it. A cloned voice speaks by its sample's speaker embedding or,
//! with the sample's transcript, in context (the talker continues from the sample).
//!
//! An LFM2-Audio voice's jobs run through the same path (lfm2_audio_speak.rs says
//! what differs): [`SampledVoice`] is either.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_core::models::lfm2_audio::Lfm2Voice;
use izwi_core::models::qwen3_tts::{Qwen3Tts, SpeakOptions, SpeechError, SpeechStats, VoiceSample};
use izwi_core::text::paragraph_sentences;
use izwi_store::{Job, JobKind, JobMetrics};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::files::{absolute, check_output_file};
use crate::lfm2_audio_speak::{check_lfm2_speech, lfm2_voice, Lfm2Speaker};
use crate::runtime::Inner;
use crate::speak::{
    blocking, check_text, excerpt, metrics, nothing_to_say, script_sentences, OutputWav, Script,
    SpeakParams, SENTENCE_GAP_SECONDS,
};
use crate::voices::{Lfm2Speech, Qwen3Voice, VoiceChoice};
use crate::{Event, Runtime, RuntimeError, SpeakRequest};

/// Whether `voice` is the folder of a Qwen3-TTS checkpoint (its config.json says so).
pub(crate) fn checkpoint(voice: &str) -> Option<PathBuf> {
    let dir = Path::new(voice.trim());
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    (config.get("model_type")?.as_str()? == "qwen3_tts").then(|| dir.to_path_buf())
}

/// The longest voice sample a clone is made from.
pub const MAX_REFERENCE_SECONDS: f64 = 60.0;

/// Speech in a Qwen3-TTS voice, with what its variant takes. What the request gives
/// is used instead of what the voice has.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Qwen3SpeakRequest {
    /// A library voice (id or name) of a Qwen3-TTS model, such a model's id, or a
    /// checkpoint folder.
    pub voice: String,
    pub text: String,
    /// A recording of a voice to clone (Base checkpoints; any format Izwi decodes, up to
    /// [`MAX_REFERENCE_SECONDS`]); its speaker embedding is what is cloned.
    #[serde(default)]
    pub reference_audio: Option<PathBuf>,
    /// What is said in the voice's recording (this request's or a cloned voice's): with
    /// it the voice is cloned in context (the talker continues from the sample's codes
    /// and transcript), closer than by the speaker embedding alone.
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
    /// Seeds sampling: the same seed and text give the same audio; None is unseeded.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Where the WAV goes; default `<data dir>/audio/speech-<job id>.wav`.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Whether `output` may replace a file already there (refused otherwise).
    #[serde(default)]
    pub replace: bool,
}

/// What the job's row keeps of the request: not the text.
#[derive(Serialize)]
struct Params<'a> {
    voice: &'a str,
    chars: usize,
    output: Option<&'a Path>,
    reference_audio: Option<&'a Path>,
    /// Whether the sample's transcript was spoken with (the transcript is not kept).
    in_context: bool,
    speaker: Option<&'a str>,
    instructions: Option<&'a str>,
    language: Option<&'a str>,
    seed: Option<u64>,
}

/// A Qwen3-TTS voice ready to speak: its loaded model (shared with every other job on
/// it) and the options each utterance takes.
pub(crate) struct Qwen3Speaker {
    tts: Arc<Qwen3Tts>,
    options: SpeakOptions,
}

impl Qwen3Speaker {
    /// Loads (or finds loaded) the voice's model, and takes the speaker embedding of a
    /// cloned voice's recording and, with its transcript, the recording's codes.
    pub(crate) async fn load(
        inner: &Inner,
        voice: &Qwen3Voice,
        language: Option<String>,
    ) -> Result<Qwen3Speaker, RuntimeError> {
        let tts = inner.models.qwen3_tts(&voice.model_id).await?;
        let mut options = SpeakOptions {
            speaker: voice.speaker.clone(),
            instruction: voice.instructions.clone(),
            language,
            ..SpeakOptions::default()
        };
        if let Some(reference) = &voice.reference_audio {
            let (path, model) = (reference.to_path_buf(), tts.clone());
            let transcript = voice
                .reference_text
                .clone()
                .filter(|t| crate::qwen3_voices::has_words(t));
            // Reading, resampling and encoding the sample is heavy: off the async thread.
            let (embedding, sample) = tokio::task::spawn_blocking(move || {
                let audio = voice_sample(&path, model.speaker_sample_rate())?;
                let speech = |e: SpeechError| RuntimeError::Speech(e.to_string());
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
        Ok(Qwen3Speaker { tts, options })
    }

    pub(crate) fn sample_rate(&self) -> u32 {
        self.tts.sample_rate()
    }

    /// Speaks `text`, sampled with `seed` (None: unseeded), handing each piece of audio
    /// to `on_audio` as it is decoded. An utterance the frame limit ended before the
    /// model did is an error that names the limit: its audio stops mid-text.
    pub(crate) async fn speak(
        &self,
        text: &str,
        seed: Option<u64>,
        on_audio: impl FnMut(Vec<f32>) + Send,
    ) -> Result<SpeechStats, RuntimeError> {
        let options = SpeakOptions {
            seed,
            ..self.options.clone()
        };
        let stats = self
            .tts
            .speak(text, &options, on_audio)
            .await
            .map_err(|e| RuntimeError::Speech(e.to_string()))?;
        if !stats.ended {
            let limit = options
                .max_frames
                .unwrap_or(self.tts.defaults().max_new_tokens);
            return Err(RuntimeError::Speech(format!(
                "the model reached its limit of {limit} frames ({:.0} s of audio, \
                 generation_config.json's max_new_tokens) before the end of the text; \
                 say it in shorter parts",
                limit as f64 * FRAME_SECONDS
            )));
        }
        Ok(stats)
    }

    /// Whether a text this long is said sentence by sentence: a CustomVoice or
    /// VoiceDesign checkpoint reads the whole text before its first frame, and a long
    /// one would run into the frame limit (or the model's attention) as one utterance.
    fn splits(&self, text: &str) -> bool {
        self.tts.speaks_whole_text() && text.chars().count() > WHOLE_TEXT_MAX_CHARS
    }
}

/// A voice whose speech a model samples on its shared engine: Qwen3-TTS or LFM2-Audio.
#[derive(Debug, Clone)]
pub(crate) enum SampledVoice {
    Qwen3(Qwen3Voice),
    Lfm2(Lfm2Speech),
}

impl SampledVoice {
    fn model_id(&self) -> &str {
        match self {
            SampledVoice::Qwen3(voice) => &voice.model_id,
            SampledVoice::Lfm2(speech) => &speech.model_id,
        }
    }

    /// "a Qwen3-TTS", "an LFM2-Audio": what a message calls it, before "voice".
    fn family(&self) -> &'static str {
        match self {
            SampledVoice::Qwen3(_) => "a Qwen3-TTS",
            SampledVoice::Lfm2(_) => "an LFM2-Audio",
        }
    }

    /// The voice of `choice`, when a model samples it.
    pub(crate) fn of(choice: &VoiceChoice) -> Option<SampledVoice> {
        match choice {
            VoiceChoice::Qwen3(voice) => Some(SampledVoice::Qwen3(voice.clone())),
            VoiceChoice::Lfm2(speech) => Some(SampledVoice::Lfm2(speech.clone())),
            _ => None,
        }
    }

    /// Refuses, before a job is made, what would only fail it: a speed (neither model
    /// has one), an LFM2-Audio voice that is not named or a model that cannot speak.
    pub(crate) fn check(&self, inner: &Inner, speed: Option<f32>) -> Result<(), RuntimeError> {
        if speed.is_some() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} voice has no speed setting",
                self.family()
            )));
        }
        if let SampledVoice::Lfm2(speech) = self {
            check_lfm2_speech(inner, speech)?;
        }
        Ok(())
    }
}

/// A [`SampledVoice`] loaded.
pub(crate) enum SampledSpeaker {
    Qwen3(Qwen3Speaker),
    Lfm2(Lfm2Speaker),
}

impl SampledSpeaker {
    pub(crate) async fn load(
        inner: &Inner,
        voice: &SampledVoice,
        language: Option<String>,
    ) -> Result<SampledSpeaker, RuntimeError> {
        Ok(match voice {
            SampledVoice::Qwen3(voice) => {
                SampledSpeaker::Qwen3(Qwen3Speaker::load(inner, voice, language).await?)
            }
            SampledVoice::Lfm2(speech) => {
                SampledSpeaker::Lfm2(Lfm2Speaker::load(inner, speech).await?)
            }
        })
    }

    pub(crate) fn sample_rate(&self) -> u32 {
        match self {
            SampledSpeaker::Qwen3(speaker) => speaker.sample_rate(),
            SampledSpeaker::Lfm2(speaker) => speaker.sample_rate(),
        }
    }

    /// Whether `text` is said sentence by sentence: always for LFM2-Audio (each turn
    /// reads its whole text first), a long text for a whole-text Qwen3-TTS checkpoint.
    fn splits(&self, text: &str) -> bool {
        match self {
            SampledSpeaker::Qwen3(speaker) => speaker.splits(text),
            SampledSpeaker::Lfm2(_) => true,
        }
    }

    /// Says `text` as one utterance, sampled with `seed`; see each speaker's `speak`.
    pub(crate) async fn speak(
        &self,
        text: &str,
        seed: Option<u64>,
        on_audio: impl FnMut(Vec<f32>) + Send,
    ) -> Result<(), RuntimeError> {
        match self {
            SampledSpeaker::Qwen3(speaker) => speaker.speak(text, seed, on_audio).await.map(|_| ()),
            SampledSpeaker::Lfm2(speaker) => speaker.speak(text, seed, on_audio).await,
        }
    }

    /// `text` said with `seed`, in memory: a batch's line. A Qwen3-TTS voice says it as
    /// one utterance; an LFM2-Audio voice sentence by sentence, a pause between.
    pub(crate) async fn say(&self, text: &str, seed: u64) -> Result<Vec<f32>, RuntimeError> {
        let parts = match self {
            SampledSpeaker::Qwen3(_) => vec![text.to_string()],
            SampledSpeaker::Lfm2(_) => sentences_of(text),
        };
        let gap = (SENTENCE_GAP_SECONDS * self.sample_rate() as f32) as usize;
        let mut audio = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                audio.resize(audio.len() + gap, 0.0);
            }
            self.speak(part, Some(seed), |piece| audio.extend(piece))
                .await?;
        }
        Ok(audio)
    }
}

impl Runtime {
    /// Queues a speak job in a Qwen3-TTS voice (a library voice, a model, or a
    /// checkpoint folder), with a cloned voice, a preset speaker, instructions or a
    /// language as the request says; or in an LFM2-Audio voice, with one of its
    /// built-in voices as the speaker and a seed (what else the request has is refused
    /// by name).
    pub async fn speak_qwen3(&self, request: Qwen3SpeakRequest) -> Result<Job, RuntimeError> {
        let request = Qwen3SpeakRequest {
            output: absolute(request.output.as_deref())?,
            reference_audio: absolute(request.reference_audio.as_deref())?,
            ..request
        };
        if let Some(remote) = self.inner.remote() {
            return Err(RuntimeError::InvalidRequest(format!(
                "speech goes to the remote server {}, which takes a voice of the library by \
                 name (a clone goes with its recording) but no sample, seed or language of \
                 this request's own: speak with a library voice, or on this machine \
                 (`izwi --backend local`)",
                remote.url()
            )));
        }
        let mut voice = match self.inner.choose_voice(&request.voice).await? {
            VoiceChoice::Qwen3(voice) => voice,
            VoiceChoice::Lfm2(speech) => return self.speak_lfm2(speech, request).await,
            _ => {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{} is not a Qwen3-TTS or LFM2-Audio voice, model or checkpoint folder",
                    request.voice
                )))
            }
        };
        if let Some(sample) = &request.reference_audio {
            if !sample.is_file() {
                return Err(RuntimeError::InvalidRequest(format!(
                    "no voice sample at {}",
                    sample.display()
                )));
            }
            self.inner.qwen3_model(&voice.model_id, "base")?;
            voice.reference_audio = Some(sample.clone());
            // A stored transcript is of the voice's own recording, not this one.
            voice.reference_text = None;
        }
        if let Some(transcript) = &request.reference_text {
            if voice.reference_audio.is_none() {
                return Err(RuntimeError::InvalidRequest(
                    "a reference text is the transcript of a voice sample: give the sample \
                     (reference audio) too"
                        .into(),
                ));
            }
            if !crate::qwen3_voices::has_words(transcript) {
                return Err(RuntimeError::InvalidRequest(
                    "the reference text has no words: give what is said in the sample".into(),
                ));
            }
            voice.reference_text = Some(transcript.clone());
        }
        if request.speaker.is_some() {
            voice.speaker = request.speaker.clone();
        }
        if request.instructions.is_some() {
            voice.instructions = request.instructions.clone();
        }
        self.start_sampled(SampledVoice::Qwen3(voice), request)
            .await
    }

    /// Queues a speak job in an LFM2-Audio voice: the request's speaker (one of the
    /// built-in voices) instead of the voice's, and its seed; a voice sample,
    /// instructions or a language are refused by name.
    async fn speak_lfm2(
        &self,
        mut speech: Lfm2Speech,
        request: Qwen3SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        let refused = [
            (
                "a voice sample (reference audio)",
                request.reference_audio.is_some(),
            ),
            ("a reference text", request.reference_text.is_some()),
            ("instructions", request.instructions.is_some()),
            ("a language", request.language.is_some()),
        ];
        if let Some((what, _)) = refused.iter().find(|(_, given)| *given) {
            return Err(RuntimeError::InvalidRequest(format!(
                "an LFM2-Audio voice takes no {what}: it speaks in its built-in voices only"
            )));
        }
        if let Some(speaker) = &request.speaker {
            speech.voice = Some(lfm2_voice(speaker)?);
        }
        self.start_sampled(SampledVoice::Lfm2(speech), request)
            .await
    }

    /// Queues a plain speak request in a Qwen3-TTS or LFM2-Audio voice.
    pub(crate) async fn speak_sampled(
        &self,
        voice: SampledVoice,
        request: &SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        voice.check(&self.inner, request.speed)?;
        let request = Qwen3SpeakRequest {
            voice: request.voice.clone(),
            text: request.text.clone(),
            output: request.output.clone(),
            replace: request.replace,
            ..Qwen3SpeakRequest::default()
        };
        self.start_sampled(voice, request).await
    }

    /// Queues a file (or text) spoken sentence by sentence in a Qwen3-TTS or
    /// LFM2-Audio voice, as a Piper voice speaks one: each sentence an utterance, a
    /// pause between them, the file read as it is spoken.
    pub(crate) async fn speak_script_sampled(
        &self,
        voice: SampledVoice,
        params: &SpeakParams<'_>,
        input: String,
        script: Script,
    ) -> Result<Job, RuntimeError> {
        let requested = Instant::now();
        voice.check(&self.inner, params.speed)?;
        if let Some(output) = params.output {
            check_output_file(self.inner.store.data_dir(), output, params.replace)?;
        }
        let params_row = serde_json::to_value(params)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?;
        let job = self
            .create_job(
                JobKind::Speak,
                voice.model_id().to_string(),
                input,
                params_row,
            )
            .await?;
        let utterance = Utterance {
            job_id: job.id,
            requested,
            language: None,
            seed: None,
        };
        let output = OutputWav::asked(params.output, params.replace);
        let sentences = script_sentences(script.clone());
        self.spawn_speaking(&job, utterance, voice, sentences, Some(script), output);
        Ok(job)
    }

    /// Runs a queued speak job: `texts` said in `voice` one after another into `output`
    /// (by default the data folder's `speech-<job id>.wav`); `script`, when they are a
    /// file's sentences, is counted for the job's progress.
    fn spawn_speaking(
        &self,
        job: &Job,
        utterance: Utterance,
        voice: SampledVoice,
        texts: mpsc::Receiver<Result<String, RuntimeError>>,
        script: Option<Script>,
        output: Option<OutputWav>,
    ) {
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            job,
            move || async move {
                let output = OutputWav::of_job(output, &inner, job_id);
                let metrics = run(&inner, &utterance, &voice, texts, script, &output).await?;
                Ok((Some(output.path.display().to_string()), metrics))
            },
        );
    }

    async fn start_sampled(
        &self,
        voice: SampledVoice,
        request: Qwen3SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        let requested = Instant::now();
        check_text(&request.text)?;
        voice.check(&self.inner, None)?;
        let (qwen3, speaker) = match &voice {
            SampledVoice::Qwen3(voice) => (Some(voice), voice.speaker.as_deref()),
            SampledVoice::Lfm2(speech) => (None, speech.voice.map(Lfm2Voice::id)),
        };
        if let Some(output) = &request.output {
            check_output_file(self.inner.store.data_dir(), output, request.replace)?;
        }
        let params = Params {
            voice: &request.voice,
            chars: request.text.chars().count(),
            output: request.output.as_deref(),
            reference_audio: qwen3.and_then(|v| v.reference_audio.as_deref()),
            in_context: qwen3
                .and_then(|v| v.reference_text.as_deref())
                .is_some_and(crate::qwen3_voices::has_words),
            speaker,
            instructions: qwen3.and_then(|v| v.instructions.as_deref()),
            language: request.language.as_deref(),
            seed: request.seed,
        };
        let params = serde_json::to_value(&params)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?;
        let job = self
            .create_job(
                JobKind::Speak,
                voice.model_id().to_string(),
                excerpt(&request.text),
                params,
            )
            .await?;
        let utterance = Utterance {
            job_id: job.id,
            requested,
            language: request.language.clone(),
            seed: request.seed,
        };
        let (tx, texts) = mpsc::channel(1);
        // The channel has room for it: the send cannot fail.
        let _ = tx.try_send(Ok(request.text.clone()));
        drop(tx);
        let output = OutputWav::asked(request.output.as_deref(), request.replace);
        self.spawn_speaking(&job, utterance, voice, texts, None, output);
        Ok(job)
    }
}

/// One codec frame: the 12 Hz tokenizer's 80 ms.
const FRAME_SECONDS: f64 = 0.08;

/// The longest text a whole-text checkpoint says as one utterance (about half a minute
/// of speech); a longer one goes sentence by sentence, as a file does.
const WHOLE_TEXT_MAX_CHARS: usize = 500;

/// `text`'s sentences, paragraph by paragraph (blank lines part paragraphs).
pub(crate) fn sentences_of(text: &str) -> Vec<String> {
    text.split("\n\n")
        .flat_map(paragraph_sentences)
        .map(|s| s.text())
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect()
}

/// What a job's utterances share.
struct Utterance {
    job_id: i64,
    /// When the job was asked for: time to first audio counts from here.
    requested: Instant,
    language: Option<String>,
    seed: Option<u64>,
}

/// Speaks each of `texts` in turn into `output` (a pause between them, as between a
/// Piper voice's sentences), each decoded piece also sent as `Event::SpeechAudio` as it
/// comes; the metrics keep how long after the request the first piece came.
async fn run(
    inner: &Arc<Inner>,
    utterance: &Utterance,
    voice: &SampledVoice,
    mut texts: mpsc::Receiver<Result<String, RuntimeError>>,
    script: Option<Script>,
    output: &OutputWav,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let file_sentences = match script {
        Some(script) => Some(blocking(move || script.count_sentences()).await??),
        None => None,
    };
    let speaker = SampledSpeaker::load(inner, voice, utterance.language.clone()).await?;
    let rate = speaker.sample_rate();
    let audio_error = |source| RuntimeError::Audio {
        path: output.path.clone(),
        source,
    };
    let mut wav = output.create(rate).map_err(audio_error)?;
    let gap = vec![0f32; (SENTENCE_GAP_SECONDS * rate as f32) as usize];
    // Pieces are at most a second of audio: written as they come.
    let mut failed = None;
    let mut index = 0;
    let mut first_audio = None;
    let mut sentences = 0;
    while let Some(text) = texts.recv().await {
        let text = text?;
        let parts = if speaker.splits(&text) {
            sentences_of(&text)
        } else {
            vec![text]
        };
        // A file's sentences were counted; a text's are all here (a sentence split
        // further makes more).
        let known = file_sentences.unwrap_or(0).max(sentences + parts.len());
        for text in parts {
            let mut gap_before = if sentences > 0 {
                SENTENCE_GAP_SECONDS
            } else {
                0.0
            };
            sentences += 1;
            speaker
                .speak(&text, utterance.seed, |piece| {
                    if piece.is_empty() {
                        return;
                    }
                    if failed.is_none() && gap_before > 0.0 {
                        failed = wav.write(&gap).err();
                    }
                    if failed.is_none() {
                        failed = wav.write(&piece).err();
                    }
                    first_audio.get_or_insert_with(|| utterance.requested.elapsed());
                    inner.events.emit(Event::SpeechAudio {
                        job_id: utterance.job_id,
                        index,
                        total: index + 1,
                        sample_rate: rate,
                        gap_before,
                        samples: piece,
                    });
                    gap_before = 0.0;
                    index += 1;
                })
                .await?;
            if let Some(source) = failed.take() {
                return Err(audio_error(source));
            }
            // Progress by utterance, as a Piper voice's is by sentence (its audio comes
            // in pieces, counted by `SpeechAudio`).
            let elapsed = started.elapsed().as_secs_f64();
            inner.events.emit(Event::JobProgress {
                job_id: utterance.job_id,
                progress: sentences as f64 / known as f64,
                windows_done: sentences,
                windows_total: known,
                eta_seconds: Some(elapsed / sentences as f64 * (known - sentences) as f64),
            });
        }
    }
    if sentences == 0 {
        return Err(nothing_to_say());
    }
    let seconds = wav.samples() as f64 / f64::from(rate);
    wav.finish().map_err(audio_error)?;
    Ok(JobMetrics {
        first_audio_ms: first_audio.map(|t| t.as_millis() as u64),
        ..metrics(started, seconds)
    })
}

/// A voice sample as mono samples at `rate`.
fn voice_sample(path: &Path, rate: u32) -> Result<Vec<f32>, RuntimeError> {
    let (mono, from) = voice_recording(path)?;
    izwi_audio::resample(&mono, from, rate).map_err(|source| RuntimeError::Audio {
        path: path.to_path_buf(),
        source,
    })
}

/// A voice sample as mono samples at its own rate, and that rate; at most
/// [`MAX_REFERENCE_SECONDS`].
pub(crate) fn voice_recording(path: &Path) -> Result<(Vec<f32>, u32), RuntimeError> {
    let audio = izwi_audio::decode_file(path).map_err(|source| RuntimeError::Audio {
        path: path.to_path_buf(),
        source,
    })?;
    let mono = audio.to_mono();
    let seconds = mono.len() as f64 / f64::from(audio.sample_rate);
    if seconds > MAX_REFERENCE_SECONDS {
        return Err(RuntimeError::InvalidRequest(format!(
            "the voice sample is {seconds:.0} s long; a clone takes at most {MAX_REFERENCE_SECONDS:.0} s"
        )));
    }
    Ok((mono, audio.sample_rate))
}
