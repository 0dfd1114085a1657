//! Voxtral Realtime's delay through the runtime, on the tiny random-weight checkpoint of
//! izwi-core's parity tests: a transcription asking another delay than the loaded
//! model's reloads it and writes the reference's text for that delay; a delay is refused
//! by name where it cannot apply.

mod common;

use std::path::{Path, PathBuf};

use common::{config, open_recording, Events};
use izwi_runtime::{Event, JobStatus, Runtime, TranscribeRequest};
use izwi_test_support::asset;
use serde_json::Value;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/voxtral-realtime-tiny")
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect()
}

/// The fixture's audio: the first 2 s of jfk.wav.
fn recording(dir: &Path) -> PathBuf {
    let jfk = izwi_runtime::load_for_asr(asset("speech/jfk.wav")).unwrap();
    let path = dir.join("two-seconds.wav");
    izwi_runtime::write_wav(&path, &jfk[..32_000], 16_000).unwrap();
    path
}

async fn text_of(runtime: &Runtime, request: TranscribeRequest) -> String {
    let job = runtime.transcribe(request).await.unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let record = runtime.transcript_for_job(job.id).await.unwrap().unwrap();
    let (_, segments) = runtime.transcript(record.id).await.unwrap();
    squeeze(&segments.iter().map(|s| s.text.as_str()).collect::<String>())
}

fn loads(events: &Events) -> usize {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::ModelLoaded { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_delay_reloads_the_model_and_writes_that_delay_s_text() {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("reference.json")).unwrap())
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wav = recording(dir.path());
    let (runtime, events) = open_recording(config(dir.path())).await;
    let model = runtime.import_model(&fixture(), Some("voxtral")).unwrap();

    let default = TranscribeRequest::new(&wav, &model.id);
    let at_160 = TranscribeRequest {
        delay_ms: Some(160),
        ..TranscribeRequest::new(&wav, &model.id)
    };
    let want_default = squeeze(reference["text"].as_str().unwrap());
    let want_160 = squeeze(reference["delay_160ms"]["text"].as_str().unwrap());
    assert_eq!(text_of(&runtime, default.clone()).await, want_default);
    assert_eq!(loads(&events), 1);
    // The checkpoint's own delay asked by number is the loaded model.
    let at_480 = TranscribeRequest {
        delay_ms: Some(480),
        ..default.clone()
    };
    assert_eq!(text_of(&runtime, at_480).await, want_default);
    assert_eq!(loads(&events), 1);
    assert_eq!(text_of(&runtime, at_160).await, want_160);
    assert_eq!(loads(&events), 2);
    assert_eq!(runtime.loaded_models().len(), 1);
    assert_eq!(text_of(&runtime, default).await, want_default);
    assert_eq!(loads(&events), 3);

    // Refused before a job is made: a delay Voxtral does not take, and any delay for
    // Whisper.
    let whisper = runtime
        .import_model(&asset("models/whisper-tiny.en"), Some("tiny"))
        .unwrap();
    for (model_id, delay_ms, why) in [
        (&model.id, 500, "a delay of 500 ms"),
        (&whisper.id, 480, "does not take a delay"),
    ] {
        let request = TranscribeRequest {
            delay_ms: Some(delay_ms),
            ..TranscribeRequest::new(&wav, model_id)
        };
        let error = runtime.transcribe(request).await.unwrap_err().to_string();
        assert!(error.contains(why), "{error}");
    }
    let jobs = runtime
        .jobs(&izwi_runtime::JobFilter::default())
        .await
        .unwrap();
    assert_eq!(jobs.len(), 4);
    runtime.shutdown().await;
}
