//! Speech jobs: text → sentences → phoneme ids (espeak-ng) → a Piper voice, sentence
//! by sentence, so the first sentence can play while the rest are made. `speak` and
//! `speak_file` write one WAV; `speak_batch` one WAV per line (batch.rs runs it), with
//! a manifest rewritten after every line, so a cancelled batch keeps what it finished.
//!
//! A speak job works in bounded memory and linear time whatever the length of its
//! text: a blocking task reads the text a paragraph at a time, splits it and
//! phonemizes [`PHONEMIZE_BATCH`] sentences per espeak-ng run into a queue of at most
//! [`QUEUED_SENTENCES`]; the job makes [`SENTENCES_AT_ONCE`] of them at a time and
//! appends each, in order, to the WAV on disk as it is made. Its row keeps an excerpt
//! of the text (or the file's path), not the text.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_audio::{AudioError, WavFile};
use izwi_core::models::qwen3_tts::REFERENCE_SAMPLE_RATE;
use izwi_core::models::vits::{phonemize, PhonemizedSentence, Scales, Vits};
use izwi_core::text::{
    paragraph_sentences, split_sentences, Espeak, Paragraphs, Sentence, StopFlag,
};
use izwi_store::{Job, JobKind, JobMetrics, JobStatus, NewJob, VoiceSettings};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::{JoinError, JoinHandle};

use crate::batch::{batch_file_name, run_batch, BatchSource};
use crate::files::{self, absolute, check_output_file};
use crate::qwen3_tts::{voice_recording, SampledVoice};
use crate::remote::{wav_data_url, Remote, RemoteVoice, REMOTE_SPEECH_MODEL};
use crate::runtime::Inner;
use crate::voices::{check_settings, VoiceChoice};
use crate::{Event, Runtime, RuntimeError};

/// Silence between sentences: the voice's own trailing silence is short.
pub const SENTENCE_GAP_SECONDS: f32 = 0.15;
/// Peak level each sentence is normalized to (piper normalizes to full scale; a
/// little headroom keeps 16-bit files from clipping after resampling).
const PEAK: f32 = 0.95;
/// What a preview says when given nothing.
const PREVIEW_TEXT: &str = "Hello! This is how I sound. Type anything, and I will read it.";

/// The most characters one interactive request ([`Runtime::speak`], a preview) may
/// hold; the desktop app's Speak page reads it from here (through its settings). A
/// longer text is read from a file ([`Runtime::speak_file`]), which has no limit.
pub const MAX_SPEAK_CHARS: usize = 20_000;
/// Sentences phonemized in one espeak-ng run (after the first, which goes alone so
/// speaking starts after one short run).
pub const PHONEMIZE_BATCH: usize = 32;
/// Sentences a speak job makes at once. Each sentence's own operations leave a core
/// idle now and then (its many small steps, the flow's sequence of layers); a second
/// sentence fills those gaps, at the memory of one more sentence. A cancelled job
/// lets the syntheses it started finish (a sentence, a fraction of a second) and drops
/// their audio.
const SENTENCES_AT_ONCE: usize = 2;
/// Phonemized sentences waiting to be spoken, at most.
pub const QUEUED_SENTENCES: usize = 64;
/// Characters of a job's text its row keeps.
const EXCERPT_CHARS: usize = 200;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeakRequest {
    /// A library voice's id or name, a voice model's id, or a Piper `.onnx` path.
    pub voice: String,
    pub text: String,
    /// Where the WAV goes; default `<data dir>/audio/speech-<job id>.wav`.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Whether `output` may replace a file already there (refused otherwise).
    #[serde(default)]
    pub replace: bool,
    /// Overrides the voice's speed (1 = its normal pace).
    #[serde(default)]
    pub speed: Option<f32>,
}

/// A text file read out as one recording, of any length: it is read as it is spoken.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeakFileRequest {
    pub voice: String,
    /// UTF-8 text.
    pub file: PathBuf,
    /// Where the WAV goes; default `<data dir>/audio/speech-<job id>.wav`.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Whether `output` may replace a file already there (refused otherwise).
    #[serde(default)]
    pub replace: bool,
    #[serde(default)]
    pub speed: Option<f32>,
}

/// What a speak job's row keeps of its request: enough to show and redo it, never
/// the whole text (the row's `input` holds an excerpt, or the file's path).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SpeakParams<'a> {
    voice: &'a str,
    /// The text's length, when it came in the request.
    chars: Option<usize>,
    file: Option<&'a Path>,
    pub(crate) output: Option<&'a Path>,
    /// Whether `output` may replace a file there (asked for this once, not kept).
    #[serde(skip)]
    pub(crate) replace: bool,
    pub(crate) speed: Option<f32>,
}

/// What a batch job's row keeps of its request: not its lines.
#[derive(Debug, Clone, Serialize)]
struct BatchParams<'a> {
    voice: &'a str,
    lines: usize,
    output_dir: &'a Path,
    speed: Option<f32>,
    max_wer: Option<f64>,
}

/// The text of a speak job.
#[derive(Debug, Clone)]
pub(crate) enum Script {
    Text(String),
    File(PathBuf),
}

impl Script {
    /// The text's paragraphs, read as they are asked for.
    fn paragraphs(&self) -> Result<Paragraphs<Box<dyn BufRead + Send>>, RuntimeError> {
        let reader: Box<dyn BufRead + Send> = match self {
            Script::Text(text) => Box::new(Cursor::new(text.clone().into_bytes())),
            Script::File(path) => Box::new(BufReader::new(File::open(path).map_err(|source| {
                RuntimeError::Io {
                    path: path.clone(),
                    source,
                }
            })?)),
        };
        Ok(Paragraphs::new(reader))
    }

    fn read_error(&self, source: std::io::Error) -> RuntimeError {
        match self {
            Script::File(path) => RuntimeError::Io {
                path: path.clone(),
                source,
            },
            Script::Text(_) => RuntimeError::InvalidRequest(source.to_string()),
        }
    }

    /// How many sentences the text has: one pass, a paragraph at a time.
    pub(crate) fn count_sentences(&self) -> Result<usize, RuntimeError> {
        let mut count = 0;
        for paragraph in self.paragraphs()? {
            let paragraph = paragraph.map_err(|e| self.read_error(e))?;
            count += paragraph_sentences(&paragraph).len();
        }
        Ok(count)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeakBatchRequest {
    pub voice: String,
    /// One WAV per line: `001.wav`, `002.wav`, ... (as many digits as the count needs).
    pub lines: Vec<String>,
    /// Gets the WAVs and `manifest.csv`
    /// (line,file,seconds,text,seed,transcript,wer,flagged).
    pub output_dir: PathBuf,
    #[serde(default)]
    pub speed: Option<f32>,
    /// The self-check's threshold: a line whose transcript has a higher word error
    /// rate is flagged; [`crate::DEFAULT_MAX_WER`] when None.
    #[serde(default)]
    pub max_wer: Option<f64>,
}

/// Audio handed back directly (a preview), not written to a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeechClip {
    pub sample_rate: u32,
    pub samples: Vec<f32>,
}

/// The name of a batch's manifest in its output folder.
pub const MANIFEST_NAME: &str = "manifest.csv";

/// A loaded voice with the settings a request asked for.
pub(crate) struct Speaker {
    vits: Arc<Vits>,
    espeak: Espeak,
    scales: Scales,
    speaker: Option<i64>,
    /// Frequency ratio of the pitch shift (1 = none).
    pitch_ratio: f64,
    /// Raised when the speaker is dropped: kills its espeak-ng runs.
    stop: StopFlag,
}

impl Speaker {
    pub(crate) async fn load(
        inner: &Inner,
        choice: &VoiceChoice,
        speed: Option<f32>,
    ) -> Result<Speaker, RuntimeError> {
        let settings = VoiceSettings {
            speed: speed.unwrap_or(choice.settings().speed),
            ..choice.settings()
        };
        check_settings(&settings)?;
        let stop = StopFlag::default();
        let espeak = Espeak::find()
            .map_err(|e| RuntimeError::Speech(e.to_string()))?
            .with_stop(stop.clone());
        let vits = match choice {
            VoiceChoice::Model { model_id, .. } => inner.models.voice(model_id).await?,
            VoiceChoice::File { path, .. } => inner.models.voice_file(path).await?,
            VoiceChoice::Qwen3(_) | VoiceChoice::Lfm2(_) => {
                let family = if matches!(choice, VoiceChoice::Qwen3(_)) {
                    "a Qwen3-TTS"
                } else {
                    "an LFM2-Audio"
                };
                return Err(RuntimeError::InvalidRequest(format!(
                    "{} is {family} voice: it speaks texts and batches, not previews or \
                     voice chat replies yet",
                    choice.model_id()
                )));
            }
        };
        let defaults = vits.config().inference;
        let pitch_ratio = 2f64.powf(f64::from(settings.pitch) / 12.0);
        Ok(Speaker {
            scales: Scales {
                noise_scale: settings.noise_scale.unwrap_or(defaults.noise_scale),
                noise_w: settings.noise_w.unwrap_or(defaults.noise_w),
                // A pitch shift resamples, which shortens by the same ratio: speak
                // that much slower first.
                length_scale: defaults.length_scale / settings.speed * pitch_ratio as f32,
            },
            speaker: settings.speaker,
            vits,
            espeak,
            pitch_ratio,
            stop,
        })
    }

    pub(crate) fn sample_rate(&self) -> u32 {
        self.vits.sample_rate()
    }

    /// Starts reading, splitting and phonemizing `script` on a blocking task; its
    /// sentences arrive in order on the queue this returns. The task ends when the
    /// text does, at the first error (sent last), or when the queue is dropped.
    fn phonemize_script(
        &self,
        script: Script,
    ) -> mpsc::Receiver<Result<PhonemizedSentence, RuntimeError>> {
        let (tx, rx) = mpsc::channel(QUEUED_SENTENCES);
        let (espeak, vits) = (self.espeak.clone(), self.vits.clone());
        tokio::task::spawn_blocking(move || {
            let phonemized = |batch: &[Sentence]| {
                phonemize(&espeak, vits.config(), batch)
                    .map_err(|e| RuntimeError::Speech(e.to_string()))
            };
            // False once the job has stopped listening.
            let send_all = |batch: &mut Vec<Sentence>| match phonemized(batch.as_slice()) {
                Ok(sentences) => {
                    batch.clear();
                    sentences.into_iter().all(|s| {
                        log_unknown(&s);
                        tx.blocking_send(Ok(s)).is_ok()
                    })
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    false
                }
            };
            let paragraphs = match script.paragraphs() {
                Ok(paragraphs) => paragraphs,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            let mut batch = Vec::new();
            let mut first = true;
            for paragraph in paragraphs {
                let paragraph = match paragraph {
                    Ok(paragraph) => paragraph,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(script.read_error(e)));
                        return;
                    }
                };
                batch.extend(paragraph_sentences(&paragraph));
                if first && !batch.is_empty() {
                    first = false;
                    let rest = batch.split_off(1);
                    if !send_all(&mut batch) {
                        return;
                    }
                    batch = rest;
                }
                if batch.len() >= PHONEMIZE_BATCH && !send_all(&mut batch) {
                    return;
                }
            }
            if !batch.is_empty() {
                send_all(&mut batch);
            }
        });
        rx
    }

    /// Phoneme ids for `sentences`, in one espeak-ng run.
    pub(crate) async fn phonemize(
        &self,
        sentences: Vec<Sentence>,
    ) -> Result<Vec<PhonemizedSentence>, RuntimeError> {
        let (espeak, vits) = (self.espeak.clone(), self.vits.clone());
        let phonemized = blocking(move || phonemize(&espeak, vits.config(), &sentences)).await?;
        let phonemized = phonemized.map_err(|e| RuntimeError::Speech(e.to_string()))?;
        phonemized.iter().for_each(log_unknown);
        Ok(phonemized)
    }

    /// One sentence's audio, pitch-shifted and normalized. `seed` fixes the noise.
    pub(crate) async fn sentence(
        &self,
        ids: Vec<i64>,
        seed: u64,
    ) -> Result<Vec<f32>, RuntimeError> {
        joined(self.start_sentence(ids, seed).await)?
    }

    /// Starts making one sentence's audio (as [`Speaker::sentence`]) on a blocking
    /// task, so the caller can start the next before this one is done.
    fn start_sentence(&self, ids: Vec<i64>, seed: u64) -> JoinHandle<SentenceAudio> {
        let (vits, scales, speaker, ratio) = (
            self.vits.clone(),
            self.scales,
            self.speaker,
            self.pitch_ratio,
        );
        tokio::task::spawn_blocking(move || -> SentenceAudio {
            let mut audio = vits
                .synthesize(&ids, speaker, scales, seed)
                .map_err(|e| RuntimeError::Speech(e.to_string()))?;
            if (ratio - 1.0).abs() > 1e-6 {
                let rate = vits.sample_rate();
                let from = (f64::from(rate) * ratio).round() as u32;
                audio = izwi_audio::resample(&audio, from, rate)
                    .map_err(|source| RuntimeError::Speech(format!("pitch shift: {source}")))?;
            }
            let peak = audio.iter().fold(0f32, |m, v| m.max(v.abs()));
            if peak > 1e-4 {
                let gain = PEAK / peak;
                audio.iter_mut().for_each(|v| *v *= gain);
            }
            Ok(audio)
        })
    }

    /// Every sentence of `phonemized` one after another with a pause between, in
    /// memory (a preview, a batch's line); `seed` fixes the noise of them all (take 0
    /// is what a speak job of the same text says).
    pub(crate) async fn speak_all(
        &self,
        phonemized: &[PhonemizedSentence],
        seed: u64,
    ) -> Result<Vec<f32>, RuntimeError> {
        let gap = vec![0f32; (SENTENCE_GAP_SECONDS * self.sample_rate() as f32) as usize];
        let mut out = Vec::new();
        for (i, sentence) in phonemized.iter().enumerate() {
            let sentence_seed = seed.wrapping_shl(32).wrapping_add(i as u64);
            let audio = self.sentence(sentence.ids.clone(), sentence_seed).await?;
            if i > 0 {
                out.extend_from_slice(&gap);
            }
            out.extend_from_slice(&audio);
        }
        Ok(out)
    }
}

impl Drop for Speaker {
    /// A job that ends, however it ends (a cancel drops it mid-sentence), leaves no
    /// espeak-ng running.
    fn drop(&mut self) {
        self.stop.stop();
    }
}

fn log_unknown(sentence: &PhonemizedSentence) {
    if !sentence.unknown.is_empty() {
        tracing::debug!(sentence = %sentence.text, unknown = ?sentence.unknown, "phonemes the voice lacks were skipped");
    }
}

/// One sentence's samples, or why it could not be made.
type SentenceAudio = Result<Vec<f32>, RuntimeError>;

/// A blocking task's result, or why it gave none (it panicked or was cancelled).
fn joined<T>(result: Result<T, JoinError>) -> Result<T, RuntimeError> {
    result.map_err(|e| RuntimeError::Speech(format!("synthesis stopped: {e}")))
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, RuntimeError> {
    joined(tokio::task::spawn_blocking(f).await)
}

/// Refuses an interactive text that is too long or has nothing to say. Cheap enough
/// for the async thread: one scan of at most [`MAX_SPEAK_CHARS`] characters.
pub(crate) fn check_text(text: &str) -> Result<(), RuntimeError> {
    let chars = text.chars().count();
    if chars > MAX_SPEAK_CHARS {
        return Err(RuntimeError::InvalidRequest(format!(
            "the text has {chars} characters; one request takes at most {MAX_SPEAK_CHARS}: \
             read a longer text from a file instead"
        )));
    }
    // A text has sentences exactly when it has a letter or a digit.
    if !text.chars().any(char::is_alphanumeric) {
        return Err(nothing_to_say());
    }
    Ok(())
}

pub(crate) fn nothing_to_say() -> RuntimeError {
    RuntimeError::InvalidRequest("nothing to say: the text has no words".into())
}

/// The sentences of `text`, or why there is nothing to say.
pub(crate) fn sentences_of(text: &str) -> Result<Vec<Sentence>, RuntimeError> {
    let sentences = split_sentences(text);
    if sentences.is_empty() {
        return Err(nothing_to_say());
    }
    Ok(sentences)
}

/// The first characters of `text`, for a job's row.
pub(crate) fn excerpt(text: &str) -> String {
    let mut excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
    if excerpt.len() < text.len() {
        excerpt.push('…');
    }
    excerpt
}

/// A preview: the voice saying `text` (or a stock line), no job, no file.
pub(crate) async fn preview(
    inner: &Inner,
    choice: &VoiceChoice,
    text: Option<&str>,
) -> Result<SpeechClip, RuntimeError> {
    let text = text.unwrap_or(PREVIEW_TEXT).to_owned();
    check_text(&text)?;
    let sentences = blocking(move || sentences_of(&text)).await??;
    let speaker = Speaker::load(inner, choice, None).await?;
    let phonemized = speaker.phonemize(sentences).await?;
    let samples = speaker.speak_all(&phonemized, 0).await?;
    Ok(SpeechClip {
        sample_rate: speaker.sample_rate(),
        samples,
    })
}

/// Where a speak job's WAV goes, and whether a file there may be replaced.
#[derive(Debug, Clone)]
pub(crate) struct OutputWav {
    pub(crate) path: PathBuf,
    pub(crate) replace: bool,
}

impl OutputWav {
    /// The file a request asked for, replacing one there only if it said so.
    pub(crate) fn asked(path: Option<&Path>, replace: bool) -> Option<OutputWav> {
        path.map(|path| OutputWav {
            path: path.to_path_buf(),
            replace,
        })
    }

    /// The job's WAV: the one asked for, else `<data dir>/audio/speech-<job id>.wav`,
    /// Izwi's own.
    pub(crate) fn of_job(asked: Option<OutputWav>, inner: &Inner, job_id: i64) -> OutputWav {
        asked.unwrap_or_else(|| OutputWav {
            path: inner.store.audio_dir().join(format!("speech-{job_id}.wav")),
            replace: true,
        })
    }

    /// Its writer: a file the user did not ask to replace is never written over, even
    /// one that appears while the job runs.
    pub(crate) fn create(&self, rate: u32) -> Result<WavFile, AudioError> {
        if self.replace {
            WavFile::create(&self.path, rate)
        } else {
            WavFile::create_new(&self.path, rate)
        }
    }
}

/// Runs a started speak job: its sentences spoken in order, each appended to the WAV
/// at `output` as soon as it is made (the file appears, whole, at the end).
async fn run(
    inner: &Arc<Inner>,
    job_id: i64,
    choice: &VoiceChoice,
    script: Script,
    speed: Option<f32>,
    output: &OutputWav,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let speaker = Speaker::load(inner, choice, speed).await?;
    let counted = script.clone();
    let total = blocking(move || counted.count_sentences()).await??;
    if total == 0 {
        return Err(nothing_to_say());
    }
    let rate = speaker.sample_rate();
    let audio_error = |source| RuntimeError::Audio {
        path: output.path.clone(),
        source,
    };
    let out = output.clone();
    let mut wav = blocking(move || out.create(rate))
        .await?
        .map_err(audio_error)?;
    let gap: Arc<[f32]> = vec![0f32; (SENTENCE_GAP_SECONDS * rate as f32) as usize].into();
    let mut sentences = speaker.phonemize_script(script);
    let speaking_since = Instant::now();
    // Sentences being made, oldest first: the next starts while one is finishing.
    let mut making = VecDeque::with_capacity(SENTENCES_AT_ONCE);
    let mut more = true;
    let mut index = 0;
    loop {
        let room = more && making.len() < SENTENCES_AT_ONCE;
        let finished = tokio::select! {
            biased;
            next = sentences.recv(), if room => {
                match next {
                    Some(sentence) => {
                        let seed = (index + making.len()) as u64;
                        making.push_back(speaker.start_sentence(sentence?.ids, seed));
                    }
                    None => more = false,
                }
                continue;
            }
            finished = async { making.front_mut().expect("a sentence is being made").await },
                if !making.is_empty() => finished,
            else => break,
        };
        making.pop_front();
        let audio = joined(finished)??;
        // The count can be off when a sentence has nothing espeak-ng can say.
        let total = total.max(index + 1);
        inner.events.emit(Event::SpeechAudio {
            job_id,
            index,
            total,
            sample_rate: rate,
            gap_before: if index > 0 { SENTENCE_GAP_SECONDS } else { 0.0 },
            samples: audio.clone(),
        });
        let done = index + 1;
        let elapsed = speaking_since.elapsed().as_secs_f64();
        inner.events.emit(Event::JobProgress {
            job_id,
            progress: done as f64 / total as f64,
            windows_done: done,
            windows_total: total,
            eta_seconds: Some(elapsed / done as f64 * total.saturating_sub(done) as f64),
        });
        let gap = (index > 0).then(|| gap.clone());
        wav = blocking(move || {
            if let Some(gap) = gap {
                wav.write(&gap)?;
            }
            wav.write(&audio)?;
            Ok::<_, izwi_audio::AudioError>(wav)
        })
        .await?
        .map_err(audio_error)?;
        index += 1;
    }
    if index == 0 {
        return Err(nothing_to_say());
    }
    let seconds = wav.samples() as f64 / f64::from(rate);
    blocking(move || wav.finish()).await?.map_err(audio_error)?;
    Ok(metrics(started, seconds))
}

/// The sentences of `script` as text, read on a blocking task into a queue that
/// bounds what is held (a book is read as it is spoken).
pub(crate) fn script_sentences(script: Script) -> mpsc::Receiver<Result<String, RuntimeError>> {
    let (tx, rx) = mpsc::channel(QUEUED_SENTENCES);
    tokio::task::spawn_blocking(move || {
        let paragraphs = match script.paragraphs() {
            Ok(paragraphs) => paragraphs,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        for paragraph in paragraphs {
            let sentences = match paragraph {
                Ok(paragraph) => paragraph_sentences(&paragraph),
                Err(e) => {
                    let _ = tx.blocking_send(Err(script.read_error(e)));
                    return;
                }
            };
            for sentence in sentences {
                if tx.blocking_send(Ok(sentence.text())).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// What a remote server is sent for the voice `spec`. A Qwen3-TTS voice of the library
/// goes with what makes it (a server knows it by no name): a clone's recording (as a
/// WAV at no more than the model's 24 kHz) and transcript, a designed voice's description, a
/// preset's speaker and how it speaks. Anything else is a name the server knows.
pub(crate) async fn remote_voice(
    inner: &Inner,
    spec: &str,
    speed: Option<f32>,
) -> Result<RemoteVoice, RuntimeError> {
    let named = RemoteVoice {
        voice: spec.to_string(),
        ..RemoteVoice::default()
    };
    let Ok(VoiceChoice::Qwen3(voice)) = inner.choose_voice(spec).await else {
        return Ok(named);
    };
    if speed.is_some() {
        return Err(RuntimeError::InvalidRequest(
            "a Qwen3-TTS voice has no speed setting: leave the speed out".into(),
        ));
    }
    if let Some(recording) = voice.reference_audio {
        let (samples, rate) = blocking(move || voice_recording_for_remote(&recording)).await??;
        return Ok(RemoteVoice {
            task_type: Some("Base"),
            ref_audio: Some(wav_data_url(&samples, rate)),
            ref_text: voice.reference_text,
            ..named
        });
    }
    if let Some(speaker) = voice.speaker {
        return Ok(RemoteVoice {
            voice: speaker,
            task_type: Some("CustomVoice"),
            instructions: voice.instructions,
            ..named
        });
    }
    if let Some(description) = voice.instructions {
        return Ok(RemoteVoice {
            task_type: Some("VoiceDesign"),
            instructions: Some(description),
            ..named
        });
    }
    Ok(named)
}

/// A clone's recording as it goes with every remote sentence: above the 24 kHz
/// Qwen3-TTS hears, resampled to it here (a 48 kHz microphone recording goes at half
/// the size; the server would resample it to the same rate).
fn voice_recording_for_remote(path: &Path) -> Result<(Vec<f32>, u32), RuntimeError> {
    let (samples, rate) = voice_recording(path)?;
    if rate <= REFERENCE_SAMPLE_RATE {
        return Ok((samples, rate));
    }
    let samples =
        izwi_audio::resample(&samples, rate, REFERENCE_SAMPLE_RATE).map_err(|source| {
            RuntimeError::Audio {
                path: path.to_path_buf(),
                source,
            }
        })?;
    Ok((samples, REFERENCE_SAMPLE_RATE))
}

/// Runs a started speak job on the remote backend: a request per sentence (so the job
/// reports each as it comes, and cancelling drops the one under way), written to the
/// WAV at `output` as a local job's are, at the rate of the first sentence.
async fn run_remote(
    inner: &Arc<Inner>,
    remote: &Remote,
    job_id: i64,
    voice: &RemoteVoice,
    script: Script,
    speed: Option<f32>,
    output: &OutputWav,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let counted = script.clone();
    let total = blocking(move || counted.count_sentences()).await??;
    if total == 0 {
        return Err(nothing_to_say());
    }
    let audio_error = |source| RuntimeError::Audio {
        path: output.path.clone(),
        source,
    };
    let mut sentences = script_sentences(script);
    let mut wav: Option<(WavFile, u32)> = None;
    let mut index = 0;
    while let Some(sentence) = sentences.recv().await {
        let (rate, audio) = remote
            .speak(REMOTE_SPEECH_MODEL, voice, &sentence?, speed)
            .await?;
        let (file, wav_rate) = match wav.take() {
            Some(open) => open,
            None => {
                let out = output.clone();
                let file = blocking(move || out.create(rate))
                    .await?
                    .map_err(audio_error)?;
                (file, rate)
            }
        };
        let audio = if rate == wav_rate {
            audio
        } else {
            izwi_audio::resample(&audio, rate, wav_rate).map_err(audio_error)?
        };
        let total = total.max(index + 1);
        inner.events.emit(Event::SpeechAudio {
            job_id,
            index,
            total,
            sample_rate: wav_rate,
            gap_before: if index > 0 { SENTENCE_GAP_SECONDS } else { 0.0 },
            samples: audio.clone(),
        });
        let done = index + 1;
        let elapsed = started.elapsed().as_secs_f64();
        inner.events.emit(Event::JobProgress {
            job_id,
            progress: done as f64 / total as f64,
            windows_done: done,
            windows_total: total,
            eta_seconds: Some(elapsed / done as f64 * total.saturating_sub(done) as f64),
        });
        let gap =
            (index > 0).then(|| vec![0f32; (SENTENCE_GAP_SECONDS * wav_rate as f32) as usize]);
        let file = blocking(move || {
            let mut file = file;
            if let Some(gap) = gap {
                file.write(&gap)?;
            }
            file.write(&audio)?;
            Ok::<_, izwi_audio::AudioError>(file)
        })
        .await?
        .map_err(audio_error)?;
        wav = Some((file, wav_rate));
        index += 1;
    }
    let Some((file, rate)) = wav else {
        return Err(nothing_to_say());
    };
    let seconds = file.samples() as f64 / f64::from(rate);
    blocking(move || file.finish())
        .await?
        .map_err(audio_error)?;
    Ok(metrics(started, seconds))
}

pub(crate) fn metrics(started: Instant, audio_seconds: f64) -> JobMetrics {
    let processing = started.elapsed().as_secs_f64();
    JobMetrics {
        audio_seconds: Some(audio_seconds),
        processing_seconds: Some(processing),
        rtf: (audio_seconds > 0.0).then(|| processing / audio_seconds),
        ..JobMetrics::default()
    }
}

/// The lines of a script: a `.csv` file's `text` column (or its first column when no
/// header is named `text`), or any other file's non-blank lines.
pub fn read_lines(path: &Path) -> Result<Vec<String>, RuntimeError> {
    let text = std::fs::read_to_string(path).map_err(|source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let lines: Vec<String> = if is_csv {
        let rows = parse_csv(&text)
            .map_err(|e| RuntimeError::InvalidRequest(format!("{}: {e}", path.display())))?;
        let column = rows.first().and_then(|header| {
            header
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case("text"))
        });
        let skip = usize::from(column.is_some());
        let column = column.unwrap_or(0);
        rows.into_iter()
            .skip(skip)
            .filter_map(|row| row.get(column).map(str::to_owned))
            .map(|cell| cell.trim().to_string())
            .filter(|cell| !cell.is_empty())
            .collect()
    } else {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    if lines.is_empty() {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} has no lines to say",
            path.display()
        )));
    }
    Ok(lines)
}

/// RFC 4180 CSV: commas, quoted fields with `""` for a quote, line breaks inside
/// quotes; rows may have different lengths, and a byte-order mark is skipped.
pub(crate) fn parse_csv(text: &str) -> Result<Vec<csv::StringRecord>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let rows: Vec<csv::StringRecord> = reader
        .records()
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // The csv crate ends an unclosed quoted field at the end of the text; a quote
    // that opens a field and is never closed leaves an odd number of quotes.
    if text.matches('"').count() % 2 == 1 {
        let line = rows
            .last()
            .and_then(|r| r.position())
            .map_or(1, |p| p.line());
        return Err(format!("a quoted field is not closed (line {line})"));
    }
    Ok(rows)
}

/// Refuses, before a job exists, what would only fail it: a voice model not
/// installed, settings out of range, espeak-ng missing.
fn check_voice_ready(choice: &VoiceChoice, speed: Option<f32>) -> Result<(), RuntimeError> {
    let settings = VoiceSettings {
        speed: speed.unwrap_or(choice.settings().speed),
        ..choice.settings()
    };
    check_settings(&settings)?;
    izwi_core::text::Espeak::find().map_err(|e| RuntimeError::Speech(e.to_string()))?;
    Ok(())
}

/// Refuses, before a job exists, a batch voice that would only fail it: a Qwen3-TTS or
/// LFM2-Audio voice with a speed (or an LFM2-Audio one that cannot speak), a Piper
/// voice that is not ready.
pub(crate) fn check_batch_voice(
    inner: &Inner,
    choice: &VoiceChoice,
    speed: Option<f32>,
) -> Result<(), RuntimeError> {
    match SampledVoice::of(choice) {
        Some(voice) => voice.check(inner, speed),
        None => check_voice_ready(choice, speed),
    }
}

/// A word error rate threshold is a number from 0 up.
pub(crate) fn check_max_wer(max: f64) -> Result<(), RuntimeError> {
    if !(max.is_finite() && max >= 0.0) {
        return Err(RuntimeError::InvalidRequest(format!(
            "the word error rate a line may have must be 0 or more, not {max}"
        )));
    }
    Ok(())
}

impl Runtime {
    /// A voice saying `text` (or a stock line), returned as samples: no job, no file.
    pub async fn preview_voice(
        &self,
        voice: &str,
        text: Option<String>,
    ) -> Result<SpeechClip, RuntimeError> {
        let choice = self.inner.choose_voice(voice).await?;
        preview(&self.inner, &choice, text.as_deref()).await
    }

    /// Queues a speak job: `text` (at most [`MAX_SPEAK_CHARS`]) in a voice, to one WAV
    /// file (the job's output), each sentence reported as `Event::SpeechAudio` as soon
    /// as it is made.
    pub async fn speak(&self, request: SpeakRequest) -> Result<Job, RuntimeError> {
        check_text(&request.text)?;
        let request = SpeakRequest {
            output: absolute(request.output.as_deref())?,
            ..request
        };
        if self.inner.remote().is_none() {
            let choice = self.inner.choose_voice(&request.voice).await?;
            if let Some(voice) = SampledVoice::of(&choice) {
                return self.speak_sampled(voice, &request).await;
            }
        }
        let params = SpeakParams {
            voice: &request.voice,
            chars: Some(request.text.chars().count()),
            file: None,
            output: request.output.as_deref(),
            replace: request.replace,
            speed: request.speed,
        };
        let input = excerpt(&request.text);
        self.start_speaking(&params, input, Script::Text(request.text.clone()))
            .await
    }

    /// Queues a speak job that reads a UTF-8 text file of any length, as it speaks it:
    /// a book goes to one WAV in time and memory that do not grow with it (beyond the
    /// WAV on disk). The job's input is the file's path.
    pub async fn speak_file(&self, request: SpeakFileRequest) -> Result<Job, RuntimeError> {
        let request = SpeakFileRequest {
            output: absolute(request.output.as_deref())?,
            file: files::absolute_path(&request.file)?,
            ..request
        };
        let meta = std::fs::metadata(&request.file).map_err(|source| RuntimeError::Io {
            path: request.file.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is not a file",
                request.file.display()
            )));
        }
        let params = SpeakParams {
            voice: &request.voice,
            chars: None,
            file: Some(&request.file),
            output: request.output.as_deref(),
            replace: request.replace,
            speed: request.speed,
        };
        let input = request.file.display().to_string();
        self.start_speaking(&params, input, Script::File(request.file.clone()))
            .await
    }

    async fn start_speaking(
        &self,
        params: &SpeakParams<'_>,
        input: String,
        script: Script,
    ) -> Result<Job, RuntimeError> {
        if let Some(remote) = self.inner.remote() {
            return self.speak_remote(remote, params, input, script).await;
        }
        let choice = self.inner.choose_voice(params.voice).await?;
        if let Some(voice) = SampledVoice::of(&choice) {
            return self
                .speak_script_sampled(voice, params, input, script)
                .await;
        }
        check_voice_ready(&choice, params.speed)?;
        if let Some(output) = params.output {
            check_output_file(self.inner.store.data_dir(), output, params.replace)?;
        }
        let job = self
            .create_job(
                JobKind::Speak,
                choice.model_id(),
                input,
                serde_json::to_value(params)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        let output = OutputWav::asked(params.output, params.replace);
        let speed = params.speed;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = OutputWav::of_job(output, &inner, job_id);
                let metrics = run(&inner, job_id, &choice, script, speed, &output).await?;
                Ok((Some(output.path.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// A speak job on the remote backend: a Qwen3-TTS voice of this machine's library
    /// goes with what makes it; any other voice is a name the server knows, sent as it is.
    async fn speak_remote(
        &self,
        remote: Arc<Remote>,
        params: &SpeakParams<'_>,
        input: String,
        script: Script,
    ) -> Result<Job, RuntimeError> {
        if let Some(output) = params.output {
            check_output_file(self.inner.store.data_dir(), output, params.replace)?;
        }
        let voice = remote_voice(&self.inner, params.voice, params.speed).await?;
        let mut row = serde_json::to_value(params)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?;
        row["remote"] = remote.url().into();
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Speak,
                model_id: Some(REMOTE_SPEECH_MODEL.to_string()),
                input,
                params: row,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        let output = OutputWav::asked(params.output, params.replace);
        let speed = params.speed;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = OutputWav::of_job(output, &inner, job_id);
                let metrics =
                    run_remote(&inner, &remote, job_id, &voice, script, speed, &output).await?;
                Ok((Some(output.path.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Queues a batch: one WAV per line into `output_dir`, with `manifest.csv`. Every
    /// line is checked first; a folder that already holds a batch is refused.
    pub async fn speak_batch(&self, request: SpeakBatchRequest) -> Result<Job, RuntimeError> {
        let request = SpeakBatchRequest {
            output_dir: files::absolute_path(&request.output_dir)?,
            ..request
        };
        if request.lines.is_empty() {
            return Err(RuntimeError::InvalidRequest(
                "the batch has no lines".into(),
            ));
        }
        for (i, line) in request.lines.iter().enumerate() {
            if !line.chars().any(char::is_alphanumeric) {
                return Err(RuntimeError::InvalidRequest(format!(
                    "line {} has no words to say",
                    i + 1
                )));
            }
        }
        if let Some(max) = request.max_wer {
            check_max_wer(max)?;
        }
        let source = BatchSource::choose(&self.inner, &request.voice, request.speed).await?;
        let dir = &request.output_dir;
        std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        let total = request.lines.len();
        let taken: Vec<String> = (0..total)
            .map(|line| batch_file_name(line, total))
            .filter(|name| dir.join(name).exists())
            .collect();
        if !taken.is_empty() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} already holds {} that this batch would write ({}); choose an empty folder",
                dir.display(),
                if taken.len() == 1 { "a file" } else { "files" },
                taken.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
                    + if taken.len() > 3 { ", ..." } else { "" },
            )));
        }
        // The manifest is created (never replaced) before the job exists: of two batches
        // sent to one folder at once, the second finds it and is refused.
        let manifest = dir.join(MANIFEST_NAME);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&manifest)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AlreadyExists if files::is_empty_file(&manifest) => {
                    RuntimeError::InvalidRequest(format!(
                        "{} holds an empty {MANIFEST_NAME}: a batch there is starting, or \
                         one ended before its first line; delete it or choose another folder",
                        dir.display()
                    ))
                }
                std::io::ErrorKind::AlreadyExists => RuntimeError::InvalidRequest(format!(
                    "{} already holds a batch ({MANIFEST_NAME}); choose an empty folder",
                    dir.display()
                )),
                _ => RuntimeError::Io {
                    path: manifest.clone(),
                    source,
                },
            })?;
        let params = BatchParams {
            voice: &request.voice,
            lines: request.lines.len(),
            output_dir: dir,
            speed: request.speed,
            max_wer: request.max_wer,
        };
        let job = match self
            .create_job(
                JobKind::SpeakBatch,
                source.model_id(),
                dir.display().to_string(),
                source.params(&params)?,
            )
            .await
        {
            Ok(job) => job,
            Err(e) => {
                // Nothing was made: the reserved, empty manifest goes.
                let _ = std::fs::remove_file(&manifest);
                return Err(e);
            }
        };
        let inner = self.inner.clone();
        let job_id = job.id;
        // However the job ends (failed, or cancelled: its work dropped, started or
        // not), a manifest still empty frees the folder again.
        let reserved = files::RemoveIfEmpty(manifest);
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let _reserved = reserved;
                let metrics = run_batch(&inner, job_id, &source, &request).await?;
                Ok((Some(request.output_dir.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// The WAV a finished speak job made.
    pub async fn speech_file(&self, job_id: i64) -> Result<PathBuf, RuntimeError> {
        let job = self.job(job_id).await?;
        match (job.kind, job.status, &job.output) {
            (JobKind::Speak, JobStatus::Done, Some(output)) => Ok(PathBuf::from(output)),
            _ => Err(RuntimeError::InvalidRequest(format!(
                "job {job_id} is not a finished speak job"
            ))),
        }
    }

    /// Copies a finished speak job's WAV to `path`, atomically, replacing a file there
    /// (the shell asked the user first: a save dialog does). The data folder is
    /// refused.
    pub async fn save_speech(&self, job_id: i64, path: &Path) -> Result<(), RuntimeError> {
        check_output_file(self.inner.store.data_dir(), path, true)?;
        let source = self.speech_file(job_id).await?;
        let (target, from) = (path.to_path_buf(), source.clone());
        tokio::task::spawn_blocking(move || {
            let bytes = std::fs::read(&from).map_err(|source| RuntimeError::Io {
                path: from.clone(),
                source,
            })?;
            files::write_atomically(&target, &bytes)
        })
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("saving stopped: {e}")))?
    }

    pub(crate) async fn create_job(
        &self,
        kind: JobKind,
        model_id: String,
        input: String,
        params: serde_json::Value,
    ) -> Result<Job, RuntimeError> {
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind,
                model_id: Some(model_id),
                input,
                params,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_clones_recording_goes_at_no_more_than_24_khz() {
        let dir = tempfile::tempdir().unwrap();
        let tone = |rate: u32| -> Vec<f32> {
            (0..rate)
                .map(|n| 0.3 * (2.0 * std::f32::consts::PI * 220.0 * n as f32 / rate as f32).sin())
                .collect()
        };
        for (rate, sent) in [(48_000, 24_000), (24_000, 24_000), (16_000, 16_000)] {
            let path = dir.path().join(format!("{rate}.wav"));
            crate::write_wav(&path, &tone(rate), rate).unwrap();
            let (samples, got) = voice_recording_for_remote(&path).unwrap();
            assert_eq!(got, sent, "a {rate} Hz recording");
            // One second, whatever the rate it goes at.
            assert!(
                samples.len().abs_diff(sent as usize) < 64,
                "{}",
                samples.len()
            );
        }
    }

    #[test]
    fn csv_fields_round_trip() {
        let rows: Vec<Vec<String>> =
            parse_csv("text,id\n\"Hello, \"\"you\"\"\",1\r\nplain,2\n\"two\nlines\",3")
                .unwrap()
                .iter()
                .map(|row| row.iter().map(str::to_owned).collect())
                .collect();
        assert_eq!(rows[1], ["Hello, \"you\"", "1"]);
        assert_eq!(rows[2], ["plain", "2"]);
        assert_eq!(rows[3], ["two\nlines", "3"]);
        assert!(parse_csv("a,b\n\"open")
            .unwrap_err()
            .contains("not closed (line 2)"));
        let mut manifest = csv::Writer::from_writer(Vec::new());
        manifest.write_record(["Hello, \"you\"", "plain"]).unwrap();
        let written = String::from_utf8(manifest.into_inner().unwrap()).unwrap();
        assert_eq!(written, "\"Hello, \"\"you\"\"\",plain\n");
    }

    #[test]
    fn lines_from_txt_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("script.txt");
        std::fs::write(&txt, "One.\n\n  Two.  \n").unwrap();
        assert_eq!(read_lines(&txt).unwrap(), ["One.", "Two."]);
        let csv = dir.path().join("script.csv");
        std::fs::write(&csv, "id,Text\n1,\"Hi, there.\"\n2,\n3,Bye.\n").unwrap();
        assert_eq!(read_lines(&csv).unwrap(), ["Hi, there.", "Bye."]);
        let headless = dir.path().join("plain.csv");
        std::fs::write(&headless, "First,x\nSecond,y\n").unwrap();
        assert_eq!(read_lines(&headless).unwrap(), ["First", "Second"]);
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "\n \n").unwrap();
        assert!(read_lines(&empty)
            .unwrap_err()
            .to_string()
            .contains("no lines"));
    }
}
