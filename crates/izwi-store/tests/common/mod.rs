//! Helpers shared by the integration tests.

use izwi_store::{
    Job, JobKind, JobMetrics, NewJob, NewTranscript, SegmentRecord, Store, StoreError,
};

/// A queued transcription job for `input`.
pub fn new_job(input: &str) -> NewJob {
    NewJob {
        kind: JobKind::Transcribe,
        model_id: Some("whisper-tiny".into()),
        input: input.into(),
        params: serde_json::json!({ "language": "en" }),
    }
}

/// A transcript of `title`, made by `job_id`.
pub fn new_transcript(job_id: Option<i64>, title: &str) -> NewTranscript {
    NewTranscript {
        job_id,
        title: title.into(),
        source_path: format!("/home/user/{title}.wav"),
        audio_path: None,
        language: Some("en".into()),
        duration: 12.5,
        model_id: Some("whisper-tiny".into()),
        rtf: Some(0.1),
    }
}

pub fn segment(idx: i64, start: f64, text: &str) -> SegmentRecord {
    SegmentRecord {
        idx,
        start,
        end: start + 1.0,
        text: text.into(),
        original: None,
        words: Vec::new(),
    }
}

/// Runs a transcription job to the end: create, start, save its transcript, finish.
pub async fn transcribe(
    store: &Store,
    input: &str,
    segments: &[SegmentRecord],
) -> Result<(Job, i64), StoreError> {
    let job = store.create_job(new_job(input)).await?;
    store.start_job(job.id).await?;
    let transcript_id = store
        .save_transcript(new_transcript(Some(job.id), input), segments)
        .await?;
    let metrics = JobMetrics {
        rtf: Some(0.1),
        ..JobMetrics::default()
    };
    let job = store.finish_job(job.id, None, &metrics).await?;
    Ok((job, transcript_id))
}
