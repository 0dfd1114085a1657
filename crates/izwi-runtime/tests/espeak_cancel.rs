//! A cancel stops espeak-ng: a stand-in espeak-ng (IZWI_ESPEAK_NG, set for this test
//! binary alone) that never answers is killed when its speak job is cancelled.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::open_recording;
use izwi_runtime::{JobStatus, SpeakRequest};
use izwi_test_support::asset;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_speak_job_kills_its_espeak() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = dir.path().join("espeak-ng");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec sleep 600\n",
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The only test in this binary, so no other test sees it.
    std::env::set_var("IZWI_ESPEAK_NG", &program);

    let (runtime, _) = open_recording(common::config(dir.path())).await;
    runtime
        .import_model(
            &asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
            Some("joe"),
        )
        .unwrap();
    let job = runtime
        .speak(SpeakRequest {
            voice: "joe".into(),
            text: "Hello there.".into(),
            output: None,
            replace: false,
            speed: None,
        })
        .await
        .unwrap();
    let mut pid = String::new();
    for _ in 0..1200 {
        pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if !pid.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let proc = format!("/proc/{}", pid.trim());
    assert!(Path::new(&proc).exists(), "espeak-ng never started");
    runtime.cancel_job(job.id).await.unwrap();
    assert_eq!(
        runtime.job(job.id).await.unwrap().status,
        JobStatus::Cancelled
    );
    // The kill lands on the blocking thread a poll later.
    for _ in 0..200 {
        if !Path::new(&proc).exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("espeak-ng ({proc}) outlived the cancelled job");
}
