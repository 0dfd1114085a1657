//! Speech jobs: text → sentences → phoneme ids (espeak-ng, one process per job) →
//! a Piper voice, sentence by sentence, so the first sentence can play while the rest
//! are made. `speak` writes one WAV; `speak_batch` one WAV per line, with a manifest
//! rewritten after every line, so a cancelled batch keeps what it finished.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_core::models::vits::{phonemize, PhonemizedSentence, Scales, Vits};
use izwi_core::text::{split_sentences, Espeak, Sentence};
use izwi_store::{Job, JobKind, JobMetrics, JobStatus, NewJob, VoiceSettings};
use serde::{Deserialize, Serialize};

use crate::files;
use crate::runtime::Inner;
use crate::voices::{check_settings, VoiceChoice};
use crate::{Event, Runtime, RuntimeError};

/// Silence between sentences: the voice's own trailing silence is short.
const SENTENCE_GAP_SECONDS: f32 = 0.15;
/// Peak level each sentence is normalized to (piper normalizes to full scale; a
/// little headroom keeps 16-bit files from clipping after resampling).
const PEAK: f32 = 0.95;
/// What a preview says when given nothing.
const PREVIEW_TEXT: &str = "Hello! This is how I sound. Type anything, and I will read it.";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeakRequest {
    /// A library voice's id or name, a voice model's id, or a Piper `.onnx` path.
    pub voice: String,
    pub text: String,
    /// Where the WAV goes; default `<data dir>/audio/speech-<job id>.wav`.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Overrides the voice's speed (1 = its normal pace).
    #[serde(default)]
    pub speed: Option<f32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeakBatchRequest {
    pub voice: String,
    /// One WAV per line: `001.wav`, `002.wav`, ... (as many digits as the count needs).
    pub lines: Vec<String>,
    /// Gets the WAVs and `manifest.csv` (line,file,seconds,text).
    pub output_dir: PathBuf,
    #[serde(default)]
    pub speed: Option<f32>,
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
}

impl Speaker {
    pub(crate) async fn load(
        inner: &Inner,
        choice: &VoiceChoice,
        speed: Option<f32>,
    ) -> Result<Speaker, RuntimeError> {
        let settings = VoiceSettings {
            speed: speed.unwrap_or(choice.settings().speed),
            ..choice.settings().clone()
        };
        check_settings(&settings)?;
        let espeak = Espeak::find().map_err(|e| RuntimeError::Speech(e.to_string()))?;
        let vits = match choice {
            VoiceChoice::Model { model_id, .. } => inner.models.voice(model_id).await?,
            VoiceChoice::File { path, .. } => inner.models.voice_file(path).await?,
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
        })
    }

    pub(crate) fn sample_rate(&self) -> u32 {
        self.vits.sample_rate()
    }

    /// Phoneme ids for `sentences`, in one espeak-ng run.
    pub(crate) async fn phonemize(
        &self,
        sentences: Vec<Sentence>,
    ) -> Result<Vec<PhonemizedSentence>, RuntimeError> {
        let (espeak, vits) = (self.espeak.clone(), self.vits.clone());
        let phonemized = blocking(move || phonemize(&espeak, vits.config(), &sentences)).await?;
        let phonemized = phonemized.map_err(|e| RuntimeError::Speech(e.to_string()))?;
        for s in &phonemized {
            if !s.unknown.is_empty() {
                tracing::debug!(sentence = %s.text, unknown = ?s.unknown, "phonemes the voice lacks were skipped");
            }
        }
        Ok(phonemized)
    }

    /// One sentence's audio, pitch-shifted and normalized. `seed` fixes the noise.
    pub(crate) async fn sentence(
        &self,
        ids: Vec<i64>,
        seed: u64,
    ) -> Result<Vec<f32>, RuntimeError> {
        let (vits, scales, speaker, ratio) = (
            self.vits.clone(),
            self.scales,
            self.speaker,
            self.pitch_ratio,
        );
        blocking(move || -> Result<Vec<f32>, RuntimeError> {
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
        .await?
    }

    /// Every sentence of `phonemized` one after another with a pause between, calling
    /// `each` with each sentence's audio as it is ready.
    async fn speak_all(
        &self,
        phonemized: &[PhonemizedSentence],
        mut each: impl FnMut(usize, &[f32]),
    ) -> Result<Vec<f32>, RuntimeError> {
        let gap = vec![0f32; (SENTENCE_GAP_SECONDS * self.sample_rate() as f32) as usize];
        let mut out = Vec::new();
        for (i, sentence) in phonemized.iter().enumerate() {
            let audio = self.sentence(sentence.ids.clone(), i as u64).await?;
            if i > 0 {
                out.extend_from_slice(&gap);
            }
            out.extend_from_slice(&audio);
            each(i, &audio);
        }
        Ok(out)
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, RuntimeError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RuntimeError::Speech(format!("synthesis stopped: {e}")))
}

/// The sentences of `text`, or why there is nothing to say.
pub(crate) fn sentences_of(text: &str) -> Result<Vec<Sentence>, RuntimeError> {
    let sentences = split_sentences(text);
    if sentences.is_empty() {
        return Err(RuntimeError::InvalidRequest(
            "nothing to say: the text has no words".into(),
        ));
    }
    Ok(sentences)
}

/// A preview: the voice saying `text` (or a stock line), no job, no file.
pub(crate) async fn preview(
    inner: &Inner,
    choice: &VoiceChoice,
    text: Option<&str>,
) -> Result<SpeechClip, RuntimeError> {
    let sentences = sentences_of(text.unwrap_or(PREVIEW_TEXT))?;
    let speaker = Speaker::load(inner, choice, None).await?;
    let phonemized = speaker.phonemize(sentences).await?;
    let samples = speaker.speak_all(&phonemized, |_, _| {}).await?;
    Ok(SpeechClip {
        sample_rate: speaker.sample_rate(),
        samples,
    })
}

/// Runs a started speak job; returns the WAV's path and the metrics.
pub(crate) async fn run(
    inner: &Arc<Inner>,
    job_id: i64,
    choice: &VoiceChoice,
    request: &SpeakRequest,
    output: &Path,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let speaker = Speaker::load(inner, choice, request.speed).await?;
    let phonemized = speaker.phonemize(sentences_of(&request.text)?).await?;
    let total = phonemized.len();
    let rate = speaker.sample_rate();
    let events = inner.events.clone();
    let speaking_since = Instant::now();
    let audio = speaker
        .speak_all(&phonemized, |index, samples| {
            let done = index + 1;
            let elapsed = speaking_since.elapsed().as_secs_f64();
            events.emit(Event::SpeechAudio {
                job_id,
                index,
                total,
                sample_rate: rate,
                samples: samples.to_vec(),
            });
            events.emit(Event::JobProgress {
                job_id,
                progress: done as f64 / total as f64,
                windows_done: done,
                windows_total: total,
                eta_seconds: Some(elapsed / done as f64 * (total - done) as f64),
            });
        })
        .await?;
    let (path, samples) = (output.to_path_buf(), audio);
    let seconds = samples.len() as f64 / f64::from(rate);
    blocking(move || izwi_audio::write_wav(&path, &samples, rate))
        .await?
        .map_err(|source| RuntimeError::Audio {
            path: output.to_path_buf(),
            source,
        })?;
    Ok(metrics(started, seconds))
}

/// Runs a started batch: one WAV per line, the manifest rewritten after each.
pub(crate) async fn run_batch(
    inner: &Arc<Inner>,
    job_id: i64,
    choice: &VoiceChoice,
    request: &SpeakBatchRequest,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let speaker = Speaker::load(inner, choice, request.speed).await?;
    let lines: Vec<Vec<Sentence>> = request
        .lines
        .iter()
        .map(|l| sentences_of(l))
        .collect::<Result<_, _>>()?;
    let counts: Vec<usize> = lines.iter().map(Vec::len).collect();
    let mut phonemized = speaker
        .phonemize(lines.into_iter().flatten().collect())
        .await?
        .into_iter();
    let rate = speaker.sample_rate();
    let total = request.lines.len();
    let width = total.to_string().len().max(3);
    let mut manifest = String::from("line,file,seconds,text\n");
    let mut all_seconds = 0.0;
    for (line, count) in counts.into_iter().enumerate() {
        let sentences: Vec<PhonemizedSentence> = phonemized.by_ref().take(count).collect();
        let audio = speaker.speak_all(&sentences, |_, _| {}).await?;
        let file = format!("{:0width$}.wav", line + 1);
        let path = request.output_dir.join(&file);
        let seconds = audio.len() as f64 / f64::from(rate);
        manifest.push_str(&format!(
            "{},{},{:.3},{}\n",
            line + 1,
            file,
            seconds,
            csv_field(&request.lines[line])
        ));
        // The WAV, then the manifest that lists it, in one blocking task: a cancel
        // lands before or after both, so every WAV in the folder is in the manifest.
        let (target, manifest_path, bytes) = (
            path.clone(),
            request.output_dir.join(MANIFEST_NAME),
            manifest.clone().into_bytes(),
        );
        blocking(move || {
            izwi_audio::write_wav(&target, &audio, rate).map_err(|source| RuntimeError::Audio {
                path: target.clone(),
                source,
            })?;
            crate::files::write_atomically(&manifest_path, &bytes)
        })
        .await??;
        all_seconds += seconds;
        let done = line + 1;
        inner.events.emit(Event::BatchLineDone {
            job_id,
            line,
            file: path.display().to_string(),
            seconds,
        });
        let elapsed = started.elapsed().as_secs_f64();
        inner.events.emit(Event::JobProgress {
            job_id,
            progress: done as f64 / total as f64,
            windows_done: done,
            windows_total: total,
            eta_seconds: Some(elapsed / done as f64 * (total - done) as f64),
        });
        if let Err(e) = inner
            .store
            .set_job_progress(job_id, done as f64 / total as f64)
            .await
        {
            tracing::warn!(job_id, error = %e, "could not record progress");
        }
    }
    Ok(metrics(started, all_seconds))
}

fn metrics(started: Instant, audio_seconds: f64) -> JobMetrics {
    let processing = started.elapsed().as_secs_f64();
    JobMetrics {
        audio_seconds: Some(audio_seconds),
        processing_seconds: Some(processing),
        rtf: (audio_seconds > 0.0).then(|| processing / audio_seconds),
        tokens: None,
    }
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
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
            .filter_map(|row| row.into_iter().nth(column))
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

/// RFC 4180 CSV: commas, quoted fields with `""` for a quote, line breaks inside quotes.
fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.trim_start_matches('\u{feff}').chars().peekable();
    let mut quoted = false;
    let mut line = 1;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                line += 1;
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("a quoted field is not closed (line {line})"));
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_round_trip() {
        let rows =
            parse_csv("text,id\n\"Hello, \"\"you\"\"\",1\r\nplain,2\n\"two\nlines\",3").unwrap();
        assert_eq!(rows[1], ["Hello, \"you\"", "1"]);
        assert_eq!(rows[2], ["plain", "2"]);
        assert_eq!(rows[3], ["two\nlines", "3"]);
        assert_eq!(csv_field("Hello, \"you\""), "\"Hello, \"\"you\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
        assert!(parse_csv("\"open").unwrap_err().contains("not closed"));
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

/// Refuses, before a job exists, what would only fail it: a voice model not
/// installed, settings out of range, espeak-ng missing.
fn check_voice_ready(choice: &VoiceChoice, speed: Option<f32>) -> Result<(), RuntimeError> {
    let settings = VoiceSettings {
        speed: speed.unwrap_or(choice.settings().speed),
        ..choice.settings().clone()
    };
    check_settings(&settings)?;
    izwi_core::text::Espeak::find().map_err(|e| RuntimeError::Speech(e.to_string()))?;
    Ok(())
}

/// The folder of an output file must exist.
fn check_output_file(path: &Path) -> Result<(), RuntimeError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} is a folder; give a file name ending in .wav",
            path.display()
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

    /// Queues a speak job: `text` in a voice, to one WAV file (the job's output),
    /// each sentence reported as `Event::SpeechAudio` as soon as it is made.
    pub async fn speak(&self, request: SpeakRequest) -> Result<Job, RuntimeError> {
        sentences_of(&request.text)?;
        let choice = self.inner.choose_voice(&request.voice).await?;
        check_voice_ready(&choice, request.speed)?;
        if let Some(output) = &request.output {
            check_output_file(output)?;
        }
        let job = self
            .create_job(
                JobKind::Speak,
                &choice,
                request.text.chars().take(200).collect(),
                &request,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = match &request.output {
                    Some(path) => path.clone(),
                    None => inner.store.audio_dir().join(format!("speech-{job_id}.wav")),
                };
                let metrics = run(&inner, job_id, &choice, &request, &output).await?;
                Ok((Some(output.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Queues a batch: one WAV per line into `output_dir`, with `manifest.csv`. Every
    /// line is checked first; a folder that already holds a batch is refused.
    pub async fn speak_batch(&self, request: SpeakBatchRequest) -> Result<Job, RuntimeError> {
        if request.lines.is_empty() {
            return Err(RuntimeError::InvalidRequest(
                "the batch has no lines".into(),
            ));
        }
        for (i, line) in request.lines.iter().enumerate() {
            sentences_of(line).map_err(|_| {
                RuntimeError::InvalidRequest(format!("line {} has no words to say", i + 1))
            })?;
        }
        let choice = self.inner.choose_voice(&request.voice).await?;
        check_voice_ready(&choice, request.speed)?;
        let dir = &request.output_dir;
        std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        if dir.join(MANIFEST_NAME).exists() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} already holds a batch ({MANIFEST_NAME}); choose an empty folder",
                dir.display()
            )));
        }
        let job = self
            .create_job(
                JobKind::SpeakBatch,
                &choice,
                dir.display().to_string(),
                &request,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let metrics = run_batch(&inner, job_id, &choice, &request).await?;
                Ok((Some(request.output_dir.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Copies a finished speak job's WAV to `path`, atomically.
    pub async fn save_speech(&self, job_id: i64, path: &Path) -> Result<(), RuntimeError> {
        let job = self.job(job_id).await?;
        let source = match (job.kind, job.status, &job.output) {
            (JobKind::Speak, JobStatus::Done, Some(output)) => PathBuf::from(output),
            _ => {
                return Err(RuntimeError::InvalidRequest(format!(
                    "job {job_id} is not a finished speak job"
                )))
            }
        };
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

    async fn create_job<R: serde::Serialize>(
        &self,
        kind: JobKind,
        choice: &VoiceChoice,
        input: String,
        request: &R,
    ) -> Result<Job, RuntimeError> {
        let model_id = match choice {
            VoiceChoice::Model { model_id, .. } => Some(model_id.clone()),
            VoiceChoice::File { path, .. } => Some(path.display().to_string()),
        };
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind,
                model_id,
                input,
                params: serde_json::to_value(request)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        Ok(job)
    }
}
