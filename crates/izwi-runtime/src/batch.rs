//! Batches: one WAV per line into a folder, with `manifest.csv` rewritten after each
//! line (so a cancelled batch keeps what it finished, every WAV listed), checked by
//! ear. A Piper voice says the lines one after another; a Qwen3-TTS or LFM2-Audio
//! voice's lines go to its engine together, [`SAMPLED_LINES_AT_ONCE`] at a time, and
//! are batched there (an LFM2-Audio line sentence by sentence, each with the take's seed).
//!
//! The self-check: when a Whisper model is installed, each line's audio is transcribed
//! back, and the manifest gets the transcript and its word error rate against the
//! line; a line over the threshold is flagged. Sampled voices skip or repeat words now
//! and then; a re-take ([`Runtime::retake_flagged`]) says the flagged lines again with
//! the next seed, checks them again and replaces their WAVs and rows.
//!
//! With a remote backend the lines go to its server, a request per line, a few at a
//! time; the check runs here, with this machine's Whisper.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use izwi_core::models::vits::PhonemizedSentence;
use izwi_core::models::whisper::TranscribeOptions;
use izwi_core::word_errors::word_error_rate;
use izwi_store::{Job, JobFilter, JobKind, JobMetrics, JobStatus};
use serde::{Deserialize, Serialize};

use crate::qwen3_tts::{SampledSpeaker, SampledVoice};
use crate::remote::{Remote, RemoteVoice, REMOTE_SPEECH_MODEL};
use crate::runtime::Inner;
use crate::speak::{
    check_batch_voice, metrics, parse_csv, remote_voice, sentences_of, Speaker, MANIFEST_NAME,
};
use crate::voices::VoiceChoice;
use crate::{Event, Runtime, RuntimeError, SpeakBatchRequest};

/// A line whose transcript is further than this from its text (word error rate) is
/// flagged, unless the request says otherwise.
pub const DEFAULT_MAX_WER: f64 = 0.25;

/// The highest line number a manifest may list: far beyond any script, and a bound on
/// what a re-take sets aside for the lines' texts.
const MAX_BATCH_LINE: u32 = 1_000_000;
/// Lines of a Qwen3-TTS or LFM2-Audio batch in the engine at once: enough to fill its
/// batches.
const SAMPLED_LINES_AT_ONCE: usize = 8;
/// Lines of a batch on a remote server in flight at once.
const REMOTE_LINES_AT_ONCE: usize = 4;

/// One row of a batch's manifest: a line that was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ManifestRow {
    pub line: u32,
    /// Relative to the batch's folder.
    pub file: String,
    pub seconds: f64,
    pub text: String,
    /// The take's seed; a re-take uses the next.
    pub seed: u64,
    /// What Whisper heard, when the line was checked.
    pub transcript: Option<String>,
    /// Word error rate of the transcript against the text.
    pub wer: Option<f64>,
    /// Over the threshold: worth a re-take.
    pub flagged: bool,
}

const HEADER: [&str; 8] = [
    "line",
    "file",
    "seconds",
    "text",
    "seed",
    "transcript",
    "wer",
    "flagged",
];

/// The manifest's bytes: a header, then `rows` by line.
fn manifest_bytes(rows: &[ManifestRow]) -> Result<Vec<u8>, RuntimeError> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r.line);
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(HEADER).map_err(csv_error)?;
    for r in rows {
        out.write_record([
            r.line.to_string(),
            r.file,
            format!("{:.3}", r.seconds),
            r.text,
            r.seed.to_string(),
            r.transcript.unwrap_or_default(),
            r.wer.map(|w| format!("{w:.3}")).unwrap_or_default(),
            if r.flagged { "yes" } else { "" }.to_string(),
        ])
        .map_err(csv_error)?;
    }
    out.into_inner()
        .map_err(|e| RuntimeError::InvalidRequest(format!("writing {MANIFEST_NAME}: {e}")))
}

fn csv_error(error: csv::Error) -> RuntimeError {
    RuntimeError::InvalidRequest(format!("writing {MANIFEST_NAME}: {error}"))
}

/// The rows of a batch's manifest, as [`run_batch`] writes it (a manifest of an older
/// Izwi, `line,file,seconds,text`, reads as unchecked takes of seed 0).
pub fn read_manifest(path: &Path) -> Result<Vec<ManifestRow>, RuntimeError> {
    let text = std::fs::read_to_string(path).map_err(|source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |why: String| RuntimeError::InvalidRequest(format!("{}: {why}", path.display()));
    let rows = parse_csv(&text).map_err(bad)?;
    let rows: Vec<ManifestRow> = rows
        .iter()
        .skip(1)
        .enumerate()
        .map(|(i, row)| {
            let cell = |n: usize| row.get(n).map(|c| c.trim()).unwrap_or_default();
            let unreadable = || bad(format!("row {} is not line,file,seconds,text,...", i + 2));
            // A file name only: an edited manifest must not point out of the folder.
            let file = cell(1);
            if Path::new(file).file_name() != Some(std::ffi::OsStr::new(file)) {
                return Err(unreadable());
            }
            let optional = |n: usize| Some(cell(n)).filter(|c| !c.is_empty());
            Ok(ManifestRow {
                line: cell(0).parse().map_err(|_| unreadable())?,
                file: file.to_string(),
                seconds: cell(2).parse().map_err(|_| unreadable())?,
                text: cell(3).to_string(),
                seed: optional(4)
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| unreadable())?
                    .unwrap_or(0),
                transcript: optional(5).map(str::to_string),
                wer: optional(6)
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| unreadable())?,
                flagged: cell(7) == "yes",
            })
        })
        .collect::<Result<_, _>>()?;
    // An edited manifest must not make a re-take index outside its lines or hold a
    // line twice (two rows, one file).
    let mut seen = std::collections::HashSet::new();
    for row in &rows {
        if row.line == 0 || row.line > MAX_BATCH_LINE {
            return Err(bad(format!(
                "line {} is not a line of a batch (1 to {MAX_BATCH_LINE})",
                row.line
            )));
        }
        if !seen.insert(row.line) {
            return Err(bad(format!("line {} is listed twice", row.line)));
        }
    }
    Ok(rows)
}

/// The WAV of line `line` (from 0) of a batch of `total`: `001.wav`, wider when needed.
pub(crate) fn batch_file_name(line: usize, total: usize) -> String {
    let width = total.to_string().len().max(3);
    format!("{:0width$}.wav", line + 1)
}

/// Whose voice says a batch: one of this machine's, or the remote backend's.
pub(crate) enum BatchSource {
    Local(VoiceChoice),
    Remote(Arc<Remote>, RemoteVoice),
}

impl BatchSource {
    /// The voice `spec` where speech goes now, checked for a batch.
    pub(crate) async fn choose(
        inner: &Inner,
        spec: &str,
        speed: Option<f32>,
    ) -> Result<Self, RuntimeError> {
        if let Some(remote) = inner.remote() {
            let voice = remote_voice(inner, spec, speed).await?;
            return Ok(BatchSource::Remote(remote, voice));
        }
        let choice = inner.choose_voice(spec).await?;
        check_batch_voice(inner, &choice, speed)?;
        Ok(BatchSource::Local(choice))
    }

    /// The model the job's row names.
    pub(crate) fn model_id(&self) -> String {
        match self {
            BatchSource::Local(choice) => choice.model_id(),
            BatchSource::Remote(..) => REMOTE_SPEECH_MODEL.to_string(),
        }
    }

    /// The job's parameters: the request's, and the server a remote batch went to.
    pub(crate) fn params(
        &self,
        request: &impl Serialize,
    ) -> Result<serde_json::Value, RuntimeError> {
        let mut row = serde_json::to_value(request)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?;
        if let BatchSource::Remote(remote, _) = self {
            row["remote"] = remote.url().into();
        }
        Ok(row)
    }
}

/// A batch's voice, loaded.
enum BatchVoice {
    Piper(Speaker),
    /// A Qwen3-TTS or LFM2-Audio voice.
    Sampled(SampledSpeaker),
    Remote {
        remote: Arc<Remote>,
        voice: RemoteVoice,
        speed: Option<f32>,
    },
}

/// One take of a line: its audio (at `rate`) and what the check heard.
struct Take {
    /// From 0.
    line: usize,
    seed: u64,
    rate: u32,
    audio: Vec<f32>,
    heard: Option<(String, f64)>,
}

impl BatchVoice {
    async fn load(
        inner: &Inner,
        source: &BatchSource,
        speed: Option<f32>,
    ) -> Result<BatchVoice, RuntimeError> {
        Ok(match source {
            BatchSource::Local(choice) => match SampledVoice::of(choice) {
                Some(voice) => {
                    BatchVoice::Sampled(SampledSpeaker::load(inner, &voice, None).await?)
                }
                None => BatchVoice::Piper(Speaker::load(inner, choice, speed).await?),
            },
            BatchSource::Remote(remote, voice) => BatchVoice::Remote {
                remote: remote.clone(),
                voice: voice.clone(),
                speed,
            },
        })
    }

    /// `text` said with `seed` (a remote server takes none), and its sample rate; a
    /// Piper voice's sentences phonemized already, or now.
    async fn say(
        &self,
        text: &str,
        phonemized: Option<Vec<PhonemizedSentence>>,
        seed: u64,
    ) -> Result<(u32, Vec<f32>), RuntimeError> {
        match self {
            BatchVoice::Piper(speaker) => {
                let sentences = match phonemized {
                    Some(sentences) => sentences,
                    None => speaker.phonemize(sentences_of(text)?).await?,
                };
                let audio = speaker.speak_all(&sentences, seed).await?;
                Ok((speaker.sample_rate(), audio))
            }
            BatchVoice::Sampled(speaker) => {
                Ok((speaker.sample_rate(), speaker.say(text, seed).await?))
            }
            BatchVoice::Remote {
                remote,
                voice,
                speed,
            } => remote.speak(REMOTE_SPEECH_MODEL, voice, text, *speed).await,
        }
    }

    /// A take of line `line`, checked by `listener` (a Whisper model) when there is one.
    async fn take(
        &self,
        inner: &Inner,
        listener: Option<&str>,
        line: usize,
        text: &str,
        phonemized: Option<Vec<PhonemizedSentence>>,
        seed: u64,
    ) -> Result<Take, RuntimeError> {
        let (rate, audio) = self.say(text, phonemized, seed).await?;
        let heard = match listener {
            Some(model) => {
                let for_whisper = izwi_audio::resample(&audio, rate, izwi_audio::ASR_SAMPLE_RATE)
                    .map_err(|source| {
                    RuntimeError::Speech(format!("resampling for the check: {source}"))
                })?;
                // Greedy only: the check must hear the same take the same way, and a
                // take Whisper cannot read at temperature 0 is worth flagging anyway
                // (no fallback passes over noise).
                let options = TranscribeOptions {
                    temperatures: vec![0.0],
                    ..TranscribeOptions::default()
                };
                let heard =
                    crate::hear_back::transcribe_samples(inner, model, for_whisper, &options)
                        .await?;
                let wer = word_error_rate(text, &heard);
                Some((heard, wer))
            }
            None => None,
        };
        Ok(Take {
            line,
            seed,
            rate,
            audio,
            heard,
        })
    }
}

/// Where a batch's takes go: its folder, its manifest's rows, its job's progress.
struct Folder<'a> {
    inner: &'a Inner,
    job_id: i64,
    dir: &'a Path,
    rows: Vec<ManifestRow>,
    max_wer: f64,
    started: Instant,
    /// Takes written of this job's, and how many it makes.
    done: usize,
    total: usize,
    seconds: f64,
}

impl Folder<'_> {
    /// Writes a take's WAV (replacing a line's earlier take whole) and then the
    /// manifest that lists it, in one blocking task: a cancel lands before or after
    /// both.
    async fn keep(&mut self, take: Take, text: &str, lines: usize) -> Result<(), RuntimeError> {
        // A re-take replaces the file the manifest lists for its line.
        let listed = self.rows.iter().find(|r| r.line as usize == take.line + 1);
        let file = listed.map_or_else(|| batch_file_name(take.line, lines), |r| r.file.clone());
        let seconds = take.audio.len() as f64 / f64::from(take.rate);
        let (transcript, wer) = match take.heard {
            Some((heard, wer)) => (Some(heard), Some(wer)),
            None => (None, None),
        };
        let row = ManifestRow {
            line: take.line as u32 + 1,
            file: file.clone(),
            seconds,
            text: text.to_string(),
            seed: take.seed,
            transcript,
            flagged: wer.is_some_and(|w| w > self.max_wer),
            wer,
        };
        self.rows.retain(|r| r.line != row.line);
        self.rows.push(row);
        let bytes = manifest_bytes(&self.rows)?;
        let path = self.dir.join(&file);
        let (target, manifest, rate, audio) = (
            path.clone(),
            self.dir.join(MANIFEST_NAME),
            take.rate,
            take.audio,
        );
        tokio::task::spawn_blocking(move || {
            let partial = target.with_extension("wav.partial");
            izwi_audio::write_wav(&partial, &audio, rate).map_err(|source| {
                RuntimeError::Audio {
                    path: target.clone(),
                    source,
                }
            })?;
            std::fs::rename(&partial, &target).map_err(|source| RuntimeError::Io {
                path: target.clone(),
                source,
            })?;
            crate::files::write_atomically(&manifest, &bytes)
        })
        .await
        .map_err(|e| RuntimeError::Speech(format!("writing stopped: {e}")))??;
        self.seconds += seconds;
        self.done += 1;
        let (job_id, done, total) = (self.job_id, self.done, self.total);
        self.inner.events.emit(Event::BatchLineDone {
            job_id,
            line: take.line,
            file: path.display().to_string(),
            seconds,
        });
        let elapsed = self.started.elapsed().as_secs_f64();
        self.inner.events.emit(Event::JobProgress {
            job_id,
            progress: done as f64 / total as f64,
            windows_done: done,
            windows_total: total,
            eta_seconds: Some(elapsed / done as f64 * (total - done) as f64),
        });
        if let Err(e) = self
            .inner
            .store
            .set_job_progress(job_id, done as f64 / total as f64)
            .await
        {
            tracing::warn!(job_id, error = %e, "could not record progress");
        }
        Ok(())
    }
}

/// Says `lines` (indices into `texts`, each with its seed) and keeps each take.
async fn say_lines(
    inner: &Inner,
    voice: &BatchVoice,
    folder: &mut Folder<'_>,
    texts: &[String],
    lines: Vec<(usize, u64)>,
) -> Result<(), RuntimeError> {
    let listener = inner.installed_whisper().await;
    let listener = listener.as_deref();
    match voice {
        BatchVoice::Piper(speaker) => {
            // One espeak-ng run for every sentence of the lines.
            let sentences: Vec<Vec<_>> = lines
                .iter()
                .map(|&(line, _)| sentences_of(&texts[line]))
                .collect::<Result<_, _>>()?;
            let counts: Vec<usize> = sentences.iter().map(Vec::len).collect();
            let mut phonemized = speaker
                .phonemize(sentences.into_iter().flatten().collect())
                .await?
                .into_iter();
            for (&(line, seed), count) in lines.iter().zip(counts) {
                let sentences: Vec<_> = phonemized.by_ref().take(count).collect();
                let take = voice
                    .take(inner, listener, line, &texts[line], Some(sentences), seed)
                    .await?;
                folder.keep(take, &texts[line], texts.len()).await?;
            }
        }
        BatchVoice::Sampled(_) | BatchVoice::Remote { .. } => {
            let at_once = match voice {
                BatchVoice::Sampled(_) => SAMPLED_LINES_AT_ONCE,
                _ => REMOTE_LINES_AT_ONCE,
            };
            let mut takes = futures::stream::iter(lines)
                .map(|(line, seed)| voice.take(inner, listener, line, &texts[line], None, seed))
                .buffer_unordered(at_once);
            while let Some(take) = takes.next().await {
                let take = take?;
                let text = texts[take.line].clone();
                folder.keep(take, &text, texts.len()).await?;
            }
        }
    }
    Ok(())
}

/// Runs a started batch: every line, take 0.
pub(crate) async fn run_batch(
    inner: &Arc<Inner>,
    job_id: i64,
    source: &BatchSource,
    request: &SpeakBatchRequest,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let voice = BatchVoice::load(inner, source, request.speed).await?;
    let total = request.lines.len();
    let mut folder = Folder {
        inner,
        job_id,
        dir: &request.output_dir,
        rows: Vec::new(),
        max_wer: request.max_wer.unwrap_or(DEFAULT_MAX_WER),
        started,
        done: 0,
        total,
        seconds: 0.0,
    };
    let lines = (0..total).map(|line| (line, 0)).collect();
    say_lines(inner, &voice, &mut folder, &request.lines, lines).await?;
    Ok(metrics(started, folder.seconds))
}

/// Says a batch's flagged lines again.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RetakeRequest {
    /// The voice the batch was made with (or another).
    pub voice: String,
    /// The batch's folder, with its manifest.csv.
    pub output_dir: PathBuf,
    #[serde(default)]
    pub speed: Option<f32>,
    /// The word error rate above which a re-take is flagged again; [`DEFAULT_MAX_WER`]
    /// when None.
    #[serde(default)]
    pub max_wer: Option<f64>,
}

/// What a re-take's job row keeps.
#[derive(Serialize)]
struct RetakeParams<'a> {
    voice: &'a str,
    /// The batch's lines (the history shows them all).
    lines: usize,
    retaken: usize,
    output_dir: &'a Path,
    speed: Option<f32>,
    max_wer: Option<f64>,
}

impl Runtime {
    /// Queues a re-take of the lines a batch's self-check flagged: each said again with
    /// the next seed, checked again, its WAV and manifest row replaced.
    pub async fn retake_flagged(&self, request: RetakeRequest) -> Result<Job, RuntimeError> {
        let request = RetakeRequest {
            output_dir: crate::files::absolute_path(&request.output_dir)?,
            ..request
        };
        let manifest = request.output_dir.join(MANIFEST_NAME);
        if !manifest.is_file() {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} holds no batch ({MANIFEST_NAME} is missing)",
                request.output_dir.display()
            )));
        }
        if let Some(max) = request.max_wer {
            crate::speak::check_max_wer(max)?;
        }
        let rows = read_manifest(&manifest)?;
        let flagged: Vec<ManifestRow> = rows.iter().filter(|r| r.flagged).cloned().collect();
        if flagged.is_empty() {
            return Err(RuntimeError::InvalidRequest(format!(
                "no line of the batch in {} is flagged",
                request.output_dir.display()
            )));
        }
        if self.inner.installed_whisper().await.is_none() {
            return Err(RuntimeError::InvalidRequest(
                "a re-take is checked again by Whisper, and no Whisper model is installed".into(),
            ));
        }
        let source = BatchSource::choose(&self.inner, &request.voice, request.speed).await?;
        self.refuse_busy_batch(&request.output_dir).await?;
        let lines = rows.iter().map(|r| r.line as usize).max().unwrap_or(0);
        let params = RetakeParams {
            voice: &request.voice,
            lines,
            retaken: flagged.len(),
            output_dir: &request.output_dir,
            speed: request.speed,
            max_wer: request.max_wer,
        };
        let job = self
            .create_job(
                JobKind::SpeakBatch,
                source.model_id(),
                request.output_dir.display().to_string(),
                source.params(&params)?,
            )
            .await?;
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let started = Instant::now();
                let voice = BatchVoice::load(&inner, &source, request.speed).await?;
                // Texts by line number; lines not in the manifest are never said.
                let mut texts = vec![String::new(); lines];
                for row in &rows {
                    texts[row.line as usize - 1] = row.text.clone();
                }
                let retakes = flagged
                    .iter()
                    .map(|r| (r.line as usize - 1, r.seed.wrapping_add(1)))
                    .collect();
                let mut folder = Folder {
                    inner: &inner,
                    job_id,
                    dir: &request.output_dir,
                    rows,
                    max_wer: request.max_wer.unwrap_or(DEFAULT_MAX_WER),
                    started,
                    done: 0,
                    total: flagged.len(),
                    seconds: 0.0,
                };
                say_lines(&inner, &voice, &mut folder, &texts, retakes).await?;
                let metrics = metrics(started, folder.seconds);
                Ok((Some(request.output_dir.display().to_string()), metrics))
            },
        );
        Ok(job)
    }

    /// Refuses a folder a batch or a re-take is still writing (in this process or
    /// another on the same data folder: the store is shared), whose manifest two jobs
    /// would otherwise rewrite over each other.
    async fn refuse_busy_batch(&self, dir: &Path) -> Result<(), RuntimeError> {
        let folder = dir.display().to_string();
        // The same folder may be named by another path.
        let same = |input: &str| {
            input == folder || std::fs::canonicalize(input).ok() == std::fs::canonicalize(dir).ok()
        };
        for status in [JobStatus::Queued, JobStatus::Running] {
            let filter = JobFilter {
                kind: Some(JobKind::SpeakBatch),
                status: Some(status),
                limit: -1,
                offset: 0,
            };
            if let Some(job) = self
                .inner
                .store
                .list_jobs(&filter)
                .await?
                .iter()
                .find(|j| same(&j.input))
            {
                return Err(RuntimeError::InvalidRequest(format!(
                    "job {} is still writing the batch in {folder}: wait for it, or cancel it",
                    job.id
                )));
            }
        }
        Ok(())
    }

    /// A batch's manifest: each line made, with its self-check.
    pub fn batch_manifest(&self, output_dir: &Path) -> Result<Vec<ManifestRow>, RuntimeError> {
        read_manifest(&output_dir.join(MANIFEST_NAME))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_round_trips_and_reads_older_ones() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![
            ManifestRow {
                line: 2,
                file: "002.wav".into(),
                seconds: 1.5,
                text: "Hello, \"you\".".into(),
                seed: 3,
                transcript: Some("hello you".into()),
                wer: Some(0.0),
                flagged: false,
            },
            ManifestRow {
                line: 1,
                file: "001.wav".into(),
                seconds: 0.25,
                text: "One.".into(),
                seed: 0,
                transcript: Some("won".into()),
                wer: Some(1.0),
                flagged: true,
            },
        ];
        let path = dir.path().join(MANIFEST_NAME);
        std::fs::write(&path, manifest_bytes(&rows).unwrap()).unwrap();
        let read = read_manifest(&path).unwrap();
        assert_eq!(read, [rows[1].clone(), rows[0].clone()]);

        std::fs::write(&path, "line,file,seconds,text\n1,001.wav,0.500,Hi.\n").unwrap();
        let old = read_manifest(&path).unwrap();
        assert_eq!(
            (old[0].seed, &old[0].transcript, old[0].wer, old[0].flagged),
            (0, &None, None, false)
        );
        std::fs::write(&path, "line,file,seconds,text\n1,../x.wav,0.5,Hi.\n").unwrap();
        assert!(read_manifest(&path).is_err());
        // Line numbers a re-take could not index, or one line twice.
        for rows in [
            "0,000.wav,0.5,Hi.\n",
            "4000000000,x.wav,0.5,Hi.\n",
            "1,001.wav,0.5,Hi.\n1,002.wav,0.5,Ho.\n",
        ] {
            std::fs::write(&path, format!("line,file,seconds,text\n{rows}")).unwrap();
            let error = read_manifest(&path).unwrap_err().to_string();
            assert!(error.contains("line"), "{rows}: {error}");
        }
    }

    #[test]
    fn file_names_are_as_wide_as_the_count() {
        assert_eq!(batch_file_name(0, 5), "001.wav");
        assert_eq!(batch_file_name(1233, 1234), "1234.wav");
    }
}
