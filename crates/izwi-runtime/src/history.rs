//! History: the jobs of every kind and what each made (a transcript, a recording, a
//! batch's files), transcripts' corrections, search and export.

use std::path::{Path, PathBuf};

use izwi_core::transcript::{Segment, Transcript, Word};
use izwi_store::{
    Job, JobFilter, JobKind, JobStatus, SearchHit, SegmentRecord, TranscriptRecord, VoiceSettings,
};
use serde::{Deserialize, Serialize};

use crate::batch::read_manifest;
use crate::files::{self, ExportFormat};
use crate::speak::MANIFEST_NAME;
use crate::{Runtime, RuntimeError};

/// A job with what it made, in the shape of its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobDetail {
    Transcript(TranscriptDetail),
    Speech(SpeechDetail),
    Batch(BatchDetail),
    Chat(ChatJobDetail),
}

/// A chat completion of the API: the last thing the user said (the job's input) and
/// the reply, once made (the job's output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChatJobDetail {
    pub job: Job,
    /// How many messages the conversation sent had.
    pub messages: usize,
}

/// A transcription job and its transcript (none while queued, or when it failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TranscriptDetail {
    pub job: Job,
    pub transcript: Option<TranscriptRecord>,
    /// In time order.
    pub segments: Vec<SegmentRecord>,
}

/// A speak job: what it said, in which voice, and its recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpeechDetail {
    pub job: Job,
    /// What was said: the whole text, or its start when the job kept only that.
    pub text: String,
    /// Whether `text` is all of it.
    pub text_complete: bool,
    /// The text file that was read out, when it came from one.
    pub text_file: Option<String>,
    pub voice: VoiceUsed,
    /// The WAV, absolute; `None` until the job has made it.
    pub audio_path: Option<String>,
    /// Whether the WAV is still there.
    pub audio_exists: bool,
}

/// A batch: its voice, folder, and every line with its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BatchDetail {
    pub job: Job,
    pub voice: VoiceUsed,
    /// The folder that gets the WAVs and the manifest, absolute.
    pub output_dir: String,
    /// The manifest, when the batch has written one.
    pub manifest_path: Option<String>,
    /// In order, each line once.
    pub lines: Vec<BatchLine>,
}

/// One line of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BatchLine {
    /// From 1, as in the manifest.
    pub line: u32,
    /// `None` for a line not made whose text the job did not keep.
    pub text: Option<String>,
    /// Its WAV, absolute, once made.
    pub file: Option<String>,
    pub seconds: Option<f64>,
    pub status: BatchLineStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum BatchLineStatus {
    /// Its WAV is in the folder.
    Made,
    /// The manifest lists it but its WAV is gone.
    Missing,
    /// Not made (yet): the batch is still running, or stopped before it.
    NotMade,
}

/// The voice a speech job asked for and the settings it speaks with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VoiceUsed {
    /// As the request named it: a library voice's id or name, a model id, or a path.
    pub requested: String,
    /// The library voice that names, as it is now; `None` when it names none.
    pub name: Option<String>,
    /// The voice model (or `.onnx` path) that spoke.
    pub model_id: Option<String>,
    /// The library voice's settings as they are now (a model's defaults when the job
    /// named no library voice), with the job's own speed.
    pub settings: VoiceSettings,
    /// The speed the job asked for over the voice's own.
    pub speed: Option<f32>,
}

/// What a speech job's params hold. Rows written by every version of the speak
/// request are read: `text` and `lines` were once kept whole, later only counted.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SpeechParams {
    voice: String,
    text: Option<String>,
    /// The text's length, when only an excerpt is kept in the job's `input`.
    chars: Option<usize>,
    file: Option<PathBuf>,
    speed: Option<f32>,
    lines: Option<serde_json::Value>,
    output_dir: Option<PathBuf>,
}

impl Runtime {
    /// A job with what it made, by kind: a transcript, a recording, a batch's lines and
    /// files (read from its folder now, so files moved away show as missing).
    pub async fn job_detail(&self, job_id: i64) -> Result<JobDetail, RuntimeError> {
        let job = self.job(job_id).await?;
        match job.kind {
            JobKind::Transcribe => {
                let transcript = self.inner.store.transcript_for_job(job_id).await?;
                let segments = match &transcript {
                    Some(t) => self.inner.store.segments(t.id).await?,
                    None => Vec::new(),
                };
                Ok(JobDetail::Transcript(TranscriptDetail {
                    job,
                    transcript,
                    segments,
                }))
            }
            JobKind::Speak => {
                let params = speech_params(&job)?;
                let voice = self.voice_used(&job, &params).await?;
                let text_complete = params.text.is_some()
                    || params
                        .chars
                        .is_some_and(|chars| chars <= job.input.chars().count());
                let (text_file, text) = match (&params.file, params.text) {
                    (Some(file), _) => (Some(file.display().to_string()), String::new()),
                    (None, Some(text)) => (None, text),
                    (None, None) => (None, job.input.clone()),
                };
                let audio_path = job.output.clone();
                let audio_exists = audio_path
                    .as_deref()
                    .is_some_and(|p| Path::new(p).is_file());
                Ok(JobDetail::Speech(SpeechDetail {
                    text,
                    text_complete: text_complete && text_file.is_none(),
                    text_file,
                    voice,
                    audio_path,
                    audio_exists,
                    job,
                }))
            }
            JobKind::Chat => Ok(JobDetail::Chat(ChatJobDetail {
                messages: job.params["messages"].as_u64().unwrap_or_default() as usize,
                job,
            })),
            JobKind::SpeakBatch => {
                let params = speech_params(&job)?;
                let voice = self.voice_used(&job, &params).await?;
                let output_dir = params
                    .output_dir
                    .clone()
                    .or_else(|| job.output.as_ref().map(PathBuf::from))
                    .unwrap_or_else(|| PathBuf::from(&job.input));
                let lines = batch_lines(&output_dir, params.lines.as_ref())?;
                let manifest = output_dir.join(MANIFEST_NAME);
                Ok(JobDetail::Batch(BatchDetail {
                    job,
                    voice,
                    manifest_path: manifest.is_file().then(|| manifest.display().to_string()),
                    output_dir: output_dir.display().to_string(),
                    lines,
                }))
            }
        }
    }

    /// Resolves the voice a job named against the library as it is now, read only
    /// (unlike choosing a voice to speak with, nothing is added to the library).
    async fn voice_used(
        &self,
        job: &Job,
        params: &SpeechParams,
    ) -> Result<VoiceUsed, RuntimeError> {
        let spec = params.voice.trim();
        let library = self.inner.store.list_voices().await?;
        let row = match spec.parse::<i64>() {
            Ok(id) => library.iter().find(|v| v.id == id),
            Err(_) => library
                .iter()
                .find(|v| v.name.eq_ignore_ascii_case(spec))
                .or_else(|| library.iter().find(|v| v.model_id == spec)),
        };
        let mut settings = row.map(|r| r.settings.clone()).unwrap_or_default();
        if let Some(speed) = params.speed {
            settings.speed = speed;
        }
        Ok(VoiceUsed {
            requested: params.voice.clone(),
            name: row.map(|r| r.name.clone()),
            model_id: job.model_id.clone(),
            settings,
            speed: params.speed,
        })
    }

    pub async fn job(&self, job_id: i64) -> Result<Job, RuntimeError> {
        self.inner
            .store
            .job(job_id)
            .await?
            .ok_or(RuntimeError::NoSuchJob(job_id))
    }

    pub async fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, RuntimeError> {
        Ok(self.inner.store.list_jobs(filter).await?)
    }

    /// Where files received through the HTTP API are kept, each the source of its
    /// transcription job (deleted with it).
    pub fn uploads_dir(&self) -> PathBuf {
        self.inner.store.uploads_dir()
    }

    /// Deletes a job with its transcript, cancelling it first if it runs. A dictation
    /// under way is refused: its recording is still being written.
    pub async fn delete_job(&self, job_id: i64) -> Result<(), RuntimeError> {
        if self.inner.jobs.cancel(job_id, None) {
            self.inner.jobs.wait(job_id).await;
        } else if let Some(job) = self.inner.store.job(job_id).await? {
            if matches!(job.status, JobStatus::Queued | JobStatus::Running) {
                return Err(RuntimeError::InvalidRequest(format!(
                    "job {job_id} is a dictation still under way: stop it before deleting it"
                )));
            }
        }
        Ok(self.inner.store.delete_job(job_id).await?)
    }

    pub async fn transcripts(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<TranscriptRecord>, RuntimeError> {
        Ok(self.inner.store.list_transcripts(limit, offset).await?)
    }

    pub async fn transcript(
        &self,
        id: i64,
    ) -> Result<(TranscriptRecord, Vec<SegmentRecord>), RuntimeError> {
        let record = self.inner.store.transcript(id).await?.ok_or_else(|| {
            RuntimeError::InvalidRequest(format!("transcript {id} does not exist"))
        })?;
        let segments = self.inner.store.segments(id).await?;
        Ok((record, segments))
    }

    pub async fn transcript_for_job(
        &self,
        job_id: i64,
    ) -> Result<Option<TranscriptRecord>, RuntimeError> {
        Ok(self.inner.store.transcript_for_job(job_id).await?)
    }

    /// Corrects a segment's text; what the model heard is kept beside it, and exports
    /// and search use the correction. Returns the segment as it is now.
    pub async fn edit_segment(
        &self,
        transcript_id: i64,
        idx: i64,
        text: &str,
    ) -> Result<SegmentRecord, RuntimeError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RuntimeError::InvalidRequest(
                "a segment cannot be empty: type its words, or revert it to what was heard".into(),
            ));
        }
        Ok(self
            .inner
            .store
            .edit_segment(transcript_id, idx, text)
            .await?)
    }

    /// Puts back what the model heard in place of a segment's correction.
    pub async fn revert_segment(
        &self,
        transcript_id: i64,
        idx: i64,
    ) -> Result<SegmentRecord, RuntimeError> {
        Ok(self.inner.store.revert_segment(transcript_id, idx).await?)
    }

    /// Full-text search over every transcript; the last word matches as a prefix.
    pub async fn search(&self, text: &str, limit: i64) -> Result<Vec<SearchHit>, RuntimeError> {
        Ok(self.inner.store.search_transcripts(text, limit).await?)
    }

    /// A stored transcript in the shape the exporters (TXT, SRT, VTT, JSON) take.
    pub async fn transcript_for_export(&self, id: i64) -> Result<Transcript, RuntimeError> {
        let (record, segments) = self.transcript(id).await?;
        Ok(Transcript {
            language: record.language,
            duration: record.duration,
            segments: segments
                .into_iter()
                .map(|s| Segment {
                    start: s.start,
                    end: s.end,
                    // Word times belong to what the model heard, not to an edit.
                    words: if s.original.is_none() {
                        s.words
                            .into_iter()
                            .map(|w| Word {
                                word: w.word,
                                start: w.start,
                                end: w.end,
                                probability: w.probability,
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                    text: s.text,
                })
                .collect(),
            rtf: record.rtf.unwrap_or(0.0),
        })
    }

    /// A stored transcript rendered as `format`.
    pub async fn export_transcript(
        &self,
        id: i64,
        format: ExportFormat,
    ) -> Result<String, RuntimeError> {
        Ok(format.render(&self.transcript_for_export(id).await?))
    }

    /// Renders a stored transcript as `format` into `path`, atomically: `path` never
    /// holds half a transcript. A file there is replaced (the shell asked the user
    /// first: a save dialog does); the data folder is refused. Returns the text
    /// written.
    pub async fn export_transcript_to(
        &self,
        id: i64,
        format: ExportFormat,
        path: &Path,
    ) -> Result<String, RuntimeError> {
        files::check_output_file(self.inner.store.data_dir(), path, true)?;
        let text = self.export_transcript(id, format).await?;
        let (path, bytes) = (path.to_path_buf(), text.clone().into_bytes());
        tokio::task::spawn_blocking(move || files::write_atomically(&path, &bytes))
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("writing stopped: {e}")))??;
        Ok(text)
    }
}

fn speech_params(job: &Job) -> Result<SpeechParams, RuntimeError> {
    serde_json::from_value(job.params.clone()).map_err(|e| {
        RuntimeError::InvalidRequest(format!("job {} has settings Izwi cannot read: {e}", job.id))
    })
}

/// Every line of a batch in `dir`: those its manifest lists (made, or missing when the
/// WAV is gone), then the ones not made. `lines` is the job's record of its lines:
/// their texts, or only how many there were.
fn batch_lines(
    dir: &Path,
    lines: Option<&serde_json::Value>,
) -> Result<Vec<BatchLine>, RuntimeError> {
    let texts: Vec<Option<String>> = match lines {
        Some(serde_json::Value::Array(texts)) => texts
            .iter()
            .map(|t| t.as_str().map(str::to_string))
            .collect(),
        Some(serde_json::Value::Number(count)) => {
            vec![None; count.as_u64().unwrap_or(0) as usize]
        }
        _ => Vec::new(),
    };
    let manifest = dir.join(MANIFEST_NAME);
    let made = if manifest.is_file() {
        read_manifest(&manifest)?
    } else {
        Vec::new()
    };
    let mut out: Vec<BatchLine> = texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| BatchLine {
            line: i as u32 + 1,
            text,
            file: None,
            seconds: None,
            status: BatchLineStatus::NotMade,
        })
        .collect();
    for row in made {
        let file = dir.join(&row.file);
        let status = if file.is_file() {
            BatchLineStatus::Made
        } else {
            BatchLineStatus::Missing
        };
        let line = BatchLine {
            line: row.line,
            text: Some(row.text),
            file: Some(file.display().to_string()),
            seconds: Some(row.seconds),
            status,
        };
        match out.iter_mut().find(|l| l.line == row.line) {
            Some(slot) => *slot = line,
            None => out.push(line),
        }
    }
    out.sort_by_key(|l| l.line);
    Ok(out)
}
