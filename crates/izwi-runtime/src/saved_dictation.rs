//! Dictation kept in the history: the audio goes to a WAV in the data dir's recordings
//! folder as it is captured (valid after every block, so a crash leaves it readable),
//! and a transcription job reading that WAV exists from the first moment. When the
//! dictation ends, the job holds its final text as a transcript with the recording.
//! If the process dies first, the job is found `interrupted` at the next start and
//! its recording can be transcribed like any file (the job's input is its path).

use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use izwi_audio::{WavRecording, ASR_SAMPLE_RATE};
use izwi_hub::Family;
use izwi_store::{JobKind, JobMetrics, JobStatus, NewJob, NewTranscript, SegmentRecord};
use tokio::sync::mpsc;

use crate::dictation::no_vad;
use crate::transcribe::{check_delay_ms, check_voxtral_request, refuse_delay};
use crate::{
    AudioChunks, DictatedText, DictationEvent, DictationOptions, Event, Runtime, RuntimeError,
    TranscribeRequest,
};

/// A dictation that ended and was saved.
#[derive(Debug, Clone)]
pub struct SavedDictation {
    pub job_id: i64,
    pub transcript_id: i64,
    /// The WAV of everything dictated, absolute.
    pub recording: PathBuf,
    /// The final texts in order.
    pub text: Vec<DictatedText>,
}

impl Runtime {
    /// [`Runtime::dictate`], with the audio recorded and the result saved to the
    /// history as a transcription job (see the module's notes). `on_job` hears the
    /// job's id as soon as it exists. A dictation that fails fails its job; the
    /// recording stays either way.
    pub async fn dictate_and_save(
        &self,
        options: &DictationOptions,
        audio: AudioChunks,
        on_job: impl FnOnce(i64),
        on_event: impl Fn(DictationEvent),
    ) -> Result<SavedDictation, RuntimeError> {
        let inner = &self.inner;
        // What would fail at once is refused before a job or a file is made.
        let info = inner.hub.info(&options.model_id)?;
        let streaming = match info.family {
            Family::Whisper => false,
            Family::VoxtralRealtime => true,
            family => {
                return Err(RuntimeError::WrongModel {
                    id: info.id,
                    family: format!("{family:?}").to_lowercase(),
                    task: "dictate",
                })
            }
        };
        // A catalog model not downloaded yet has no folder.
        inner.hub.model_dir(&info.id)?;
        // Whisper finds the pauses with the voice activity detector.
        if !streaming && inner.vad.get(self.data_dir()).await.is_none() {
            return Err(no_vad());
        }
        if streaming {
            check_voxtral_request(&info.name, false, options.language.is_some(), false)?;
            check_delay_ms(options.delay_ms)?;
        } else {
            refuse_delay(&info.name, options.delay_ms)?;
        }
        let dir = inner.store.recordings_dir();
        std::fs::create_dir_all(&dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let path = dir.join(format!("dictation-{millis}.wav"));
        let recording =
            WavRecording::create(&path, ASR_SAMPLE_RATE).map_err(|source| RuntimeError::Audio {
                path: path.clone(),
                source,
            })?;
        // What transcribing the recording again would ask (History's Retry reads it).
        let request = TranscribeRequest {
            language: options.language.clone(),
            // A streaming model's words have their times anyway.
            word_timestamps: !streaming,
            delay_ms: options.delay_ms,
            ..TranscribeRequest::new(&path, &options.model_id)
        };
        let job = inner
            .store
            .create_job(NewJob {
                kind: JobKind::Transcribe,
                model_id: Some(options.model_id.clone()),
                input: path.display().to_string(),
                params: serde_json::to_value(&request)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        let job_id = job.id;
        inner.events.emit(Event::JobQueued { job });
        inner.store.start_job(job_id).await?;
        inner.events.emit(Event::JobStarted { job_id });
        on_job(job_id);

        let started = Instant::now();
        let (audio, recorded) = record(audio, recording);
        let dictated = self.dictate(options, audio, on_event).await;
        let recorded = recorded
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("recording stopped: {e}")));
        let saved = match (dictated, recorded) {
            (Ok(text), Ok(Ok(samples))) => self
                .save_dictation(job_id, options, &path, samples, &text, started)
                .await
                .map(|transcript_id| SavedDictation {
                    job_id,
                    transcript_id,
                    recording: path.clone(),
                    text,
                }),
            // The recording's own error first: dictation ends with it.
            (_, Ok(Err(source))) => Err(RuntimeError::Audio {
                path: path.clone(),
                source,
            }),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        let (status, error) = match &saved {
            Ok(_) => (JobStatus::Done, None),
            Err(e) => {
                let message = e.to_string();
                if let Err(e) = inner.store.fail_job(job_id, &message).await {
                    tracing::warn!(job_id, error = %e, "could not record the failure");
                }
                (JobStatus::Failed, Some(message))
            }
        };
        inner.events.emit(Event::JobFinished {
            job_id,
            status,
            error,
        });
        saved
    }

    /// The final text as the job's transcript, one segment per final piece.
    async fn save_dictation(
        &self,
        job_id: i64,
        options: &DictationOptions,
        path: &std::path::Path,
        samples: u64,
        text: &[DictatedText],
        started: Instant,
    ) -> Result<i64, RuntimeError> {
        let store = &self.inner.store;
        let segments: Vec<SegmentRecord> = text
            .iter()
            .enumerate()
            .map(|(i, t)| SegmentRecord {
                idx: i as i64,
                start: t.start_s,
                end: t.end_s,
                text: t.text.clone(),
                original: None,
                words: Vec::new(),
            })
            .collect();
        let duration = samples as f64 / f64::from(ASR_SAMPLE_RATE);
        let transcript_id = store
            .save_transcript(
                NewTranscript {
                    job_id: Some(job_id),
                    title: path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    source_path: path.display().to_string(),
                    audio_path: Some(store.relative(path)?),
                    language: options.language.clone(),
                    duration,
                    model_id: Some(options.model_id.clone()),
                    rtf: None,
                },
                &segments,
            )
            .await?;
        store
            .finish_job(
                job_id,
                Some(&format!("transcript:{transcript_id}")),
                &JobMetrics {
                    audio_seconds: Some(duration),
                    processing_seconds: Some(started.elapsed().as_secs_f64()),
                    ..JobMetrics::default()
                },
            )
            .await?;
        Ok(transcript_id)
    }
}

/// Writes each chunk to `recording` before passing it on, on a thread of its own (the
/// writes wait on the disk). Returns the chunks to dictate from and, once the audio
/// ends, how many samples were recorded. A failed write ends the audio with its error.
fn record(
    mut audio: AudioChunks,
    mut recording: WavRecording,
) -> (
    AudioChunks,
    tokio::task::JoinHandle<Result<u64, izwi_audio::AudioError>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let recorded = tokio::task::spawn_blocking(move || {
        while let Some(chunk) = audio.blocking_recv() {
            if let Ok(samples) = &chunk {
                if let Err(e) = recording.write(samples) {
                    let _ = tx.send(Err(RuntimeError::InvalidRequest(format!(
                        "the recording could not be written: {e}"
                    ))));
                    return Err(e);
                }
            }
            if tx.send(chunk).is_err() {
                // Dictation stopped (it failed): what was recorded is kept.
                break;
            }
        }
        let samples = recording.samples();
        recording.finish()?;
        Ok(samples)
    });
    (rx, recorded)
}
