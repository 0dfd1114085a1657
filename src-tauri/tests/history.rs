//! History's commands on a real runtime: a job's detail by kind, with exactly the
//! recordings it made granted to the webview; corrections and their refusals. Speaks
//! with the Piper voice en_US-joe-medium (scripts/fetch-assets.sh) and espeak-ng.

use std::path::Path;
use std::sync::{Arc, Mutex};

use izwi_desktop::error::ErrorKind;
use izwi_desktop::state::AppState;
use izwi_runtime::{JobDetail, JobStatus, NoEvents, Runtime, RuntimeConfig, SpeakBatchRequest};

async fn state(dir: &Path) -> (AppState, Arc<Mutex<Vec<String>>>) {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    let allowed: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = allowed.clone();
    let state = AppState::new(
        runtime,
        Arc::default(),
        vec![],
        Box::new(move |p| seen.lock().unwrap().push(p.display().to_string())),
    );
    (state, allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn details_grant_exactly_the_recordings_a_job_made() {
    let dir = tempfile::tempdir().unwrap();
    let (state, allowed) = state(dir.path()).await;
    let joe = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../.assets/voices/en_US-joe-medium/en_US-joe-medium.onnx");
    assert!(joe.is_file(), "run scripts/fetch-assets.sh first");
    state.runtime.import_model(&joe, Some("joe")).unwrap();

    let job = state
        .speak("joe".into(), "Hello.".into(), None)
        .await
        .unwrap();
    let job = state.runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let JobDetail::Speech(speech) = state.get_job_detail(job.id).await.unwrap() else {
        panic!("not speech");
    };
    assert_eq!(speech.text, "Hello.");
    assert_eq!(
        *allowed.lock().unwrap(),
        [speech.audio_path.clone().unwrap()]
    );

    let out = dir.path().join("lines");
    let batch = state
        .runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines: vec!["One.".into(), "Two.".into()],
            output_dir: out.clone(),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap();
    let batch = state.runtime.wait_job(batch.id).await.unwrap();
    assert_eq!(batch.status, JobStatus::Done, "{:?}", batch.error);
    std::fs::remove_file(out.join("002.wav")).unwrap();
    allowed.lock().unwrap().clear();
    let JobDetail::Batch(detail) = state.get_job_detail(batch.id).await.unwrap() else {
        panic!("not a batch");
    };
    assert_eq!(detail.lines.len(), 2);
    // The file that is gone is not granted.
    assert_eq!(
        *allowed.lock().unwrap(),
        [out.join("001.wav").display().to_string()]
    );

    let missing = state.get_job_detail(99).await.unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn corrections_of_what_does_not_exist_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = state(dir.path()).await;
    let edit = state.edit_segment(5, 0, "words".into()).await.unwrap_err();
    assert_eq!(edit.kind, ErrorKind::NotFound, "{edit:?}");
    assert_eq!(edit.message, "transcript 5 does not exist");
    let revert = state.revert_segment(5, 0).await.unwrap_err();
    assert_eq!(revert.kind, ErrorKind::NotFound);
}
