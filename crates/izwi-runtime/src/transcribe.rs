//! A transcription job: decode the file, cut it at silences, run Whisper (or Voxtral
//! Realtime, or LFM2-Audio) on the engine, report segments as windows finish, and save the transcript.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use izwi_core::models::whisper::{
    is_multilingual_dir, Task, TranscribeError, TranscribeOptions, WhisperTokenizer, WindowDone,
};
use izwi_core::transcript::{Segment, Transcript};
use izwi_hub::Family;
use izwi_store::{Job, JobKind, JobMetrics, NewJob, NewTranscript, SegmentRecord, WordRecord};
use serde::{Deserialize, Serialize};

use crate::models::TranscriptionModel;
use crate::remote::{wav_bytes, Remote, RemoteTranscribe};
use crate::runtime::Inner;
use crate::{Event, JobStage, Runtime, RuntimeError};

/// Seconds per window, at most Whisper's 30.
const WINDOW_SECONDS: f32 = 30.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TranscribeRequest {
    /// An audio or video file (WAV, FLAC, MP3, OGG, M4A/AAC, ...).
    pub path: PathBuf,
    pub model_id: String,
    /// ISO code; detected when None.
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub task: Task,
    /// Segment timestamps from the model; without them a window is one segment.
    #[serde(default = "yes")]
    pub timestamps: bool,
    /// Text that primes names and spelling.
    #[serde(default)]
    pub initial_prompt: Option<String>,
    /// Beams per window; 1 decodes greedily.
    #[serde(default = "default_beam_size")]
    pub beam_size: usize,
    /// Each word's time too (one more decoder pass per window).
    #[serde(default)]
    pub word_timestamps: bool,
    /// Voxtral Realtime only: how far its text runs behind the audio, in milliseconds
    /// (a multiple of 80 up to 2400); None takes the checkpoint's default.
    #[serde(default)]
    pub delay_ms: Option<u32>,
}

fn yes() -> bool {
    true
}

fn default_beam_size() -> usize {
    1
}

impl TranscribeRequest {
    pub fn new(path: impl Into<PathBuf>, model_id: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            model_id: model_id.into(),
            language: None,
            task: Task::Transcribe,
            timestamps: true,
            initial_prompt: None,
            beam_size: default_beam_size(),
            word_timestamps: false,
            delay_ms: None,
        }
    }

    fn options(&self) -> TranscribeOptions {
        TranscribeOptions {
            language: self.language.clone(),
            task: self.task,
            timestamps: self.timestamps,
            initial_prompt: self.initial_prompt.clone(),
            beam_size: self.beam_size.max(1),
            word_timestamps: self.word_timestamps,
            ..TranscribeOptions::default()
        }
    }
}

/// Where to cut the audio into windows: the VAD's chunks of speech (silence is not
/// decoded at all), or without a VAD the quietest points at most 30 s apart.
pub(crate) async fn windows(
    inner: &Inner,
    samples: &Arc<Vec<f32>>,
) -> Result<Vec<Range<usize>>, RuntimeError> {
    let Some(vad) = inner.vad.get(inner.store.data_dir()).await else {
        return Ok(izwi_audio::split_at_silence(samples, WINDOW_SECONDS)
            .into_iter()
            .map(|w| w.start_sample..w.end_sample)
            .collect());
    };
    let samples = samples.clone();
    tokio::task::spawn_blocking(move || vad.speech_chunks(&samples, f64::from(WINDOW_SECONDS)))
        .await
        .map_err(|e| {
            RuntimeError::InvalidRequest(format!("voice activity detection stopped: {e}"))
        })?
        .map_err(|e| RuntimeError::InvalidRequest(format!("voice activity detection failed: {e}")))
}

/// The file's samples at 16 kHz and the windows to transcribe.
async fn speech(
    inner: &Arc<Inner>,
    request: &TranscribeRequest,
) -> Result<(Arc<Vec<f32>>, Vec<Range<usize>>), RuntimeError> {
    let decoding_started = Instant::now();
    let path = request.path.clone();
    let samples = tokio::task::spawn_blocking(move || izwi_audio::load_for_asr(&path))
        .await
        .map_err(|e| RuntimeError::InvalidRequest(format!("decoding stopped: {e}")))?
        .map_err(|source| RuntimeError::Audio {
            path: request.path.clone(),
            source,
        })?;
    tracing::debug!(
        seconds = decoding_started.elapsed().as_secs_f64(),
        "audio decoded"
    );
    let samples = Arc::new(samples);
    let vad_started = Instant::now();
    let windows = windows(inner, &samples).await?;
    tracing::debug!(
        seconds = vad_started.elapsed().as_secs_f64(),
        chunks = windows.len(),
        "speech found"
    );
    Ok((samples, windows))
}

/// Runs a started job to its transcript; returns the transcript's id and the metrics.
pub(crate) async fn run(
    inner: &Arc<Inner>,
    job_id: i64,
    request: &TranscribeRequest,
) -> Result<(i64, JobMetrics), RuntimeError> {
    let started = Instant::now();
    let stage = |stage| inner.events.emit(Event::JobStage { job_id, stage });
    let loaded = inner
        .models
        .loaded()
        .iter()
        .any(|m| m.id == request.model_id);
    // The file is read and its speech found while the model loads: both take a few
    // tenths of a second, and neither needs the other.
    let audio = speech(inner, request);
    let (model, audio) = if loaded {
        stage(JobStage::Decoding);
        (
            inner
                .models
                .transcription(&request.model_id, request.delay_ms)
                .await,
            audio.await,
        )
    } else {
        stage(JobStage::LoadingModel);
        let model = async {
            let model = inner
                .models
                .transcription(&request.model_id, request.delay_ms)
                .await;
            stage(JobStage::Decoding);
            model
        };
        tokio::join!(model, audio)
    };
    let model = model?;
    let (samples, windows) = audio?;

    stage(JobStage::Transcribing);
    // Known now: shells show a determinate bar from the start, not after a window.
    inner.events.emit(Event::JobProgress {
        job_id,
        progress: 0.0,
        windows_done: 0,
        windows_total: windows.len(),
        eta_seconds: None,
    });
    // The callback runs inside the engine's futures: it only queues progress, which
    // this job writes to the store beside the transcription.
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel::<f64>();
    let events = inner.events.clone();
    let transcribing_since = Instant::now();
    let on_window = move |w: WindowDone| {
        let progress = w.done as f64 / w.total.max(1) as f64;
        let elapsed = transcribing_since.elapsed().as_secs_f64();
        events.emit(Event::JobSegments {
            job_id,
            window: w.index,
            segments: w.segments,
        });
        events.emit(Event::JobProgress {
            job_id,
            progress,
            windows_done: w.done,
            windows_total: w.total,
            eta_seconds: Some(elapsed / w.done as f64 * (w.total - w.done) as f64),
        });
        let _ = progress_tx.send(progress);
    };
    let options = request.options();
    let transcribe = async {
        match &model {
            TranscriptionModel::Whisper(whisper) => whisper
                .transcriber
                .transcribe(&samples, &windows, &options, on_window)
                .await
                .map_err(RuntimeError::from),
            TranscriptionModel::Lfm2Audio(model) => {
                crate::lfm2_audio_transcribe::transcribe(model, &samples, &windows, on_window).await
            }
            TranscriptionModel::Voxtral(voxtral) => voxtral
                .transcribe(&samples, &windows, on_window)
                .await
                .map_err(|e| TranscribeError::from(e).into()),
        }
    };
    let record_progress = async {
        while let Some(progress) = progress_rx.recv().await {
            if let Err(e) = inner.store.set_job_progress(job_id, progress).await {
                tracing::warn!(job_id, error = %e, "could not record progress");
            }
        }
    };
    let (transcript, ()) = tokio::join!(transcribe, record_progress);
    save(inner, job_id, request, &transcript?, started).await
}

/// Keeps a finished job's transcript in the store; its id and the job's metrics.
async fn save(
    inner: &Arc<Inner>,
    job_id: i64,
    request: &TranscribeRequest,
    transcript: &Transcript,
    started: Instant,
) -> Result<(i64, JobMetrics), RuntimeError> {
    let title = request
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| request.path.display().to_string());
    let segments: Vec<SegmentRecord> = transcript
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| SegmentRecord {
            idx: i as i64,
            start: s.start,
            end: s.end,
            text: s.text.trim().to_string(),
            original: None,
            words: s
                .words
                .iter()
                .map(|w| WordRecord {
                    word: w.word.clone(),
                    start: w.start,
                    end: w.end,
                    probability: w.probability,
                })
                .collect(),
        })
        .collect();
    let processing_seconds = started.elapsed().as_secs_f64();
    let metrics = JobMetrics {
        audio_seconds: Some(transcript.duration),
        processing_seconds: Some(processing_seconds),
        rtf: Some(transcript.rtf),
        ..JobMetrics::default()
    };
    let transcript_id = inner
        .store
        .save_transcript(
            NewTranscript {
                job_id: Some(job_id),
                title,
                source_path: request.path.display().to_string(),
                audio_path: None,
                language: transcript.language.clone(),
                duration: transcript.duration,
                model_id: Some(request.model_id.clone()),
                rtf: Some(transcript.rtf),
            },
            &segments,
        )
        .await?;
    Ok((transcript_id, metrics))
}

/// Windows a remote job has in flight at once: a serving cluster batches them.
const REMOTE_WINDOWS: usize = 4;

/// Runs a started job on the remote backend: the file decoded and cut into windows
/// here, each window's text from the server (a few at once, reported in order), the
/// transcript kept here as a local job's is.
async fn run_remote(
    inner: &Arc<Inner>,
    remote: &Remote,
    job_id: i64,
    request: &TranscribeRequest,
) -> Result<(i64, JobMetrics), RuntimeError> {
    let started = Instant::now();
    inner.events.emit(Event::JobStage {
        job_id,
        stage: JobStage::Decoding,
    });
    let (samples, windows) = speech(inner, request).await?;
    inner.events.emit(Event::JobStage {
        job_id,
        stage: JobStage::Transcribing,
    });
    let total = windows.len();
    inner.events.emit(Event::JobProgress {
        job_id,
        progress: 0.0,
        windows_done: 0,
        windows_total: total,
        eta_seconds: None,
    });
    let ask = RemoteTranscribe {
        model: &request.model_id,
        translate: request.task == Task::Translate,
        language: request.language.as_deref(),
        prompt: request.initial_prompt.as_deref(),
        words: request.word_timestamps,
    };
    let ask = &ask;
    let mut texts = futures::stream::iter(windows.iter().cloned())
        .map(|window| {
            let wav = wav_bytes(&samples[window.clone()], izwi_audio::ASR_SAMPLE_RATE);
            async move { remote.transcribe(wav, ask).await.map(|text| (window, text)) }
        })
        .buffered(REMOTE_WINDOWS);
    let mut transcript = Transcript {
        language: request.language.clone(),
        duration: samples.len() as f64 / f64::from(izwi_audio::ASR_SAMPLE_RATE),
        segments: Vec::new(),
        rtf: 0.0,
    };
    let mut done = 0;
    while let Some(result) = texts.next().await {
        let (window, text) = result?;
        let offset = window.start as f64 / f64::from(izwi_audio::ASR_SAMPLE_RATE);
        let window_end = window.end as f64 / f64::from(izwi_audio::ASR_SAMPLE_RATE);
        let segments: Vec<Segment> = text
            .segments
            .into_iter()
            .map(|s| Segment {
                start: (offset + s.start).min(window_end),
                end: (offset + s.end).min(window_end),
                words: s
                    .words
                    .into_iter()
                    .map(|w| izwi_core::transcript::Word {
                        start: offset + w.start,
                        end: offset + w.end,
                        ..w
                    })
                    .collect(),
                ..s
            })
            .collect();
        if transcript.language.is_none() {
            transcript.language = text.language;
        }
        inner.events.emit(Event::JobSegments {
            job_id,
            window: done,
            segments: segments.clone(),
        });
        transcript.segments.extend(segments);
        done += 1;
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
    transcript.rtf = started.elapsed().as_secs_f64() / transcript.duration.max(1e-3);
    save(inner, job_id, request, &transcript, started).await
}

impl Runtime {
    /// A transcription on the remote backend: what the model can do is the server's
    /// to say (its errors fail the job); the job is this machine's.
    async fn transcribe_remote(
        &self,
        remote: Arc<Remote>,
        request: TranscribeRequest,
    ) -> Result<Job, RuntimeError> {
        let mut params = serde_json::to_value(&request)
            .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?;
        params["remote"] = remote.url().into();
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Transcribe,
                model_id: Some(request.model_id.clone()),
                input: request.path.display().to_string(),
                params,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let (transcript_id, metrics) =
                    run_remote(&inner, &remote, job_id, &request).await?;
                Ok((Some(format!("transcript:{transcript_id}")), metrics))
            },
        );
        Ok(job)
    }

    /// Records a transcription job and starts it; the returned job is `queued`. A model
    /// that is unknown, not installed, not for transcription, English-only when asked
    /// to translate or for another language, or a language the model does not know, is
    /// refused here; what goes wrong later (an unreadable file, say) fails the job with
    /// its reason.
    pub async fn transcribe(&self, request: TranscribeRequest) -> Result<Job, RuntimeError> {
        let request = TranscribeRequest {
            path: crate::files::absolute_path(&request.path)?,
            ..request
        };
        if let Some(remote) = self.inner.remote() {
            return self.transcribe_remote(remote, request).await;
        }
        let info = self.inner.hub.info(&request.model_id)?;
        match info.family {
            Family::Whisper => self.check_whisper_request(&info, &request).await?,
            Family::VoxtralRealtime => {
                check_voxtral_request(
                    &info.name,
                    request.task == Task::Translate,
                    request.language.is_some(),
                    request.initial_prompt.is_some(),
                )?;
                check_delay_ms(request.delay_ms)?;
                self.inner.hub.model_dir(&request.model_id)?;
            }
            Family::Lfm2Audio => {
                crate::lfm2_audio_transcribe::check_request(&info.name, &request)?;
                self.inner.hub.model_dir(&request.model_id)?;
            }
            family => {
                return Err(RuntimeError::WrongModel {
                    id: info.id,
                    family: format!("{family:?}").to_lowercase(),
                    task: "transcribe",
                })
            }
        }
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Transcribe,
                model_id: Some(request.model_id.clone()),
                input: request.path.display().to_string(),
                params: serde_json::to_value(&request)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let (transcript_id, metrics) = run(&inner, job_id, &request).await?;
                Ok((Some(format!("transcript:{transcript_id}")), metrics))
            },
        );
        Ok(job)
    }

    /// What a Whisper model cannot do, refused before a job is made.
    async fn check_whisper_request(
        &self,
        info: &izwi_hub::ModelInfo,
        request: &TranscribeRequest,
    ) -> Result<(), RuntimeError> {
        let dir = self.inner.hub.model_dir(&request.model_id)?;
        refuse_delay(&info.name, request.delay_ms)?;
        let english_only = !is_multilingual_dir(&dir).map_err(TranscribeError::from)?;
        if request.task == Task::Translate && english_only {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is English-only: it cannot translate to English. Transcribe with it, or \
                 translate with a multilingual model (whisper-tiny, whisper-base, ...)",
                info.name
            )));
        }
        if english_only && request.language.as_deref().is_some_and(|l| l != "en") {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is English-only: it cannot transcribe {:?}. Use a multilingual model \
                 (whisper-tiny, whisper-base, ...)",
                info.name,
                request.language.as_deref().unwrap_or_default()
            )));
        }
        if let (false, Some(code)) = (english_only, request.language.clone()) {
            let tokenizer_dir = dir.clone();
            let tokenizer =
                tokio::task::spawn_blocking(move || WhisperTokenizer::from_dir(&tokenizer_dir))
                    .await
                    .map_err(|e| RuntimeError::InvalidRequest(format!("reading the model: {e}")))?
                    .map_err(TranscribeError::from)?;
            if tokenizer.language_token(&code).is_none() {
                let known: Vec<&str> = tokenizer
                    .special
                    .languages
                    .iter()
                    .map(|(c, _)| c.as_str())
                    .collect();
                return Err(RuntimeError::InvalidRequest(format!(
                    "{} does not know the language {code:?}; it knows: {}",
                    info.name,
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// The longest delay Voxtral Realtime is made for (Mistral's range is 80 ms to 2.4 s,
/// in 80 ms positions).
const MAX_DELAY_MS: u32 = 2400;

/// A delay Voxtral Realtime can be loaded with: a whole number of its 80 ms positions
/// up to [`MAX_DELAY_MS`].
pub(crate) fn check_delay_ms(delay_ms: Option<u32>) -> Result<(), RuntimeError> {
    match delay_ms {
        Some(ms) if ms == 0 || ms % 80 != 0 || ms > MAX_DELAY_MS => {
            Err(RuntimeError::InvalidRequest(format!(
                "a delay of {ms} ms is not one Voxtral Realtime takes: give a multiple of 80 \
                 ms from 80 to {MAX_DELAY_MS}"
            )))
        }
        _ => Ok(()),
    }
}

/// Only Voxtral Realtime writes a chosen delay behind the audio.
pub(crate) fn refuse_delay(model_name: &str, delay_ms: Option<u32>) -> Result<(), RuntimeError> {
    match delay_ms {
        Some(_) => Err(RuntimeError::InvalidRequest(format!(
            "{model_name} does not take a delay: only Voxtral Realtime models do"
        ))),
        None => Ok(()),
    }
}

/// Voxtral Realtime writes what it hears, in the language it hears, from audio alone:
/// a translation, a language or a prompt asked of it is refused by name.
pub(crate) fn check_voxtral_request(
    model_name: &str,
    translate: bool,
    language: bool,
    prompt: bool,
) -> Result<(), RuntimeError> {
    let unsupported = [
        (translate, "translate"),
        (language, "take a language"),
        (prompt, "take a prompt"),
    ];
    match unsupported.iter().find(|(asked, _)| *asked) {
        Some((_, what)) => Err(RuntimeError::InvalidRequest(format!(
            "{model_name} (Voxtral Realtime) cannot {what}; it transcribes what it hears"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_a_whole_number_of_positions_within_voxtral_s_range() {
        for ms in [None, Some(80), Some(480), Some(2400)] {
            assert!(check_delay_ms(ms).is_ok(), "{ms:?}");
        }
        for ms in [0, 40, 100, 2480, u32::MAX] {
            let error = check_delay_ms(Some(ms)).unwrap_err().to_string();
            assert!(error.contains(&format!("a delay of {ms} ms")), "{error}");
        }
        assert!(refuse_delay("whisper-tiny", None).is_ok());
        let error = refuse_delay("whisper-tiny", Some(480))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("whisper-tiny does not take a delay"),
            "{error}"
        );
    }
}
