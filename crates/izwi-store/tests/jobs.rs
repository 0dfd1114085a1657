//! Jobs: lifecycle, guarded transitions, listing, deletion, interruption.

#[allow(dead_code)]
mod common;

use izwi_store::{
    JobFilter, JobKind, JobMetrics, JobStatus, NewJob, Store, StoreError, INTERRUPTED_ERROR,
};

async fn open() -> (tempfile::TempDir, Store) {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    (temp, store)
}

#[tokio::test]
async fn a_job_goes_from_queued_to_done() {
    let (_temp, store) = open().await;
    let new = NewJob {
        kind: JobKind::Speak,
        model_id: Some("kokoro".into()),
        input: "Hello, world.".into(),
        params: serde_json::json!({ "voice": 3, "speed": 1.25 }),
    };
    let job = store.create_job(new.clone()).await.unwrap();
    assert_eq!(job.kind, JobKind::Speak);
    assert_eq!(job.status, JobStatus::Queued);
    assert_eq!(job.model_id, new.model_id);
    assert_eq!(job.input, new.input);
    assert_eq!(job.params, new.params);
    assert_eq!(
        (job.progress, job.started_at, job.finished_at),
        (0.0, None, None)
    );
    assert_eq!(job.metrics, JobMetrics::default());
    assert!(job.created_at > 1_700_000_000_000, "unix milliseconds");

    let running = store.start_job(job.id).await.unwrap();
    assert_eq!(running.status, JobStatus::Running);
    assert!(running.started_at.unwrap() >= job.created_at);

    store.set_job_progress(job.id, 0.5).await.unwrap();
    assert_eq!(store.job(job.id).await.unwrap().unwrap().progress, 0.5);
    store.set_job_progress(job.id, 7.0).await.unwrap();
    assert_eq!(store.job(job.id).await.unwrap().unwrap().progress, 1.0);

    let metrics = JobMetrics {
        audio_seconds: Some(2.5),
        processing_seconds: Some(0.5),
        rtf: Some(0.2),
        tokens: Some(42),
        first_audio_ms: Some(1380),
    };
    let done = store
        .finish_job(job.id, Some("audio/speak-1.wav"), &metrics)
        .await
        .unwrap();
    assert_eq!(done.status, JobStatus::Done);
    assert!(done.status.is_finished());
    assert_eq!(done.output.as_deref(), Some("audio/speak-1.wav"));
    assert_eq!(done.metrics, metrics);
    assert_eq!(done.progress, 1.0);
    assert!(done.finished_at.unwrap() >= running.started_at.unwrap());
    assert_eq!(done.error, None);
    assert_eq!(store.job(job.id).await.unwrap().unwrap(), done);
    store.close().await;
}

#[tokio::test]
async fn jobs_fail_or_cancel_from_queued_or_running() {
    let (_temp, store) = open().await;
    let queued = store.create_job(common::new_job("a")).await.unwrap();
    let failed = store.fail_job(queued.id, "model missing").await.unwrap();
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("model missing"));
    assert!(failed.finished_at.is_some());

    let running = store.create_job(common::new_job("b")).await.unwrap();
    store.start_job(running.id).await.unwrap();
    let failed = store.fail_job(running.id, "out of memory").await.unwrap();
    assert_eq!(failed.status, JobStatus::Failed);

    for start in [false, true] {
        let job = store.create_job(common::new_job("c")).await.unwrap();
        if start {
            store.start_job(job.id).await.unwrap();
        }
        let cancelled = store.cancel_job(job.id, None).await.unwrap();
        assert_eq!(cancelled.status, JobStatus::Cancelled);
        assert!(cancelled.finished_at.is_some());
        assert_eq!(cancelled.error, None);
    }
    // Cancelled for a reason other than the user's: the history keeps it.
    let job = store.create_job(common::new_job("d")).await.unwrap();
    let cancelled = store
        .cancel_job(job.id, Some("the request timed out"))
        .await
        .unwrap();
    assert_eq!(cancelled.error.as_deref(), Some("the request timed out"));
    store.close().await;
}

#[tokio::test]
async fn invalid_transitions_are_refused_and_named() {
    let (_temp, store) = open().await;
    let job = store.create_job(common::new_job("a")).await.unwrap();
    let id = job.id;

    let err = store
        .finish_job(id, None, &JobMetrics::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        StoreError::InvalidTransition {
            from: JobStatus::Queued,
            to: JobStatus::Done,
            ..
        }
    ));

    store.start_job(id).await.unwrap();
    let err = store.start_job(id).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("job {id} is running; it cannot become running")
    );

    store
        .finish_job(id, None, &JobMetrics::default())
        .await
        .unwrap();
    let err = store.start_job(id).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("job {id} is done; it cannot become running")
    );
    let err = store.cancel_job(id, None).await.unwrap_err();
    assert!(matches!(
        err,
        StoreError::InvalidTransition {
            from: JobStatus::Done,
            to: JobStatus::Cancelled,
            ..
        }
    ));
    let err = store.fail_job(id, "late").await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidTransition { .. }));

    // A late progress report does not touch a finished job.
    store.set_job_progress(id, 0.25).await.unwrap();
    let after = store.job(id).await.unwrap().unwrap();
    assert_eq!((after.status, after.progress), (JobStatus::Done, 1.0));
    assert_eq!(after.error, None);

    assert!(matches!(
        store.set_job_progress(id, f64::NAN).await,
        Err(StoreError::InvalidInput(_))
    ));
    store.close().await;
}

#[tokio::test]
async fn unknown_jobs_are_not_found() {
    let (_temp, store) = open().await;
    let missing = 999;
    let not_found = |result: Result<_, StoreError>| {
        matches!(
            result,
            Err(StoreError::NotFound {
                what: "job",
                id: 999
            })
        )
    };
    assert!(not_found(store.start_job(missing).await.map(drop)));
    assert!(not_found(
        store
            .finish_job(missing, None, &JobMetrics::default())
            .await
            .map(drop)
    ));
    assert!(not_found(store.fail_job(missing, "x").await.map(drop)));
    assert!(not_found(store.cancel_job(missing, None).await.map(drop)));
    assert!(not_found(store.set_job_progress(missing, 0.5).await));
    assert!(not_found(store.delete_job(missing).await));
    assert_eq!(store.job(missing).await.unwrap(), None);
    assert_eq!(
        StoreError::NotFound {
            what: "job",
            id: missing
        }
        .to_string(),
        "job 999 does not exist"
    );
    store.close().await;
}

#[tokio::test]
async fn list_jobs_filters_newest_first() {
    let (_temp, store) = open().await;
    let mut ids = Vec::new();
    for (i, kind) in [JobKind::Transcribe, JobKind::Speak, JobKind::SpeakBatch]
        .into_iter()
        .cycle()
        .take(9)
        .enumerate()
    {
        let mut new = common::new_job(&format!("job {i}"));
        new.kind = kind;
        ids.push(store.create_job(new).await.unwrap().id);
    }
    store.start_job(ids[0]).await.unwrap();
    store.start_job(ids[3]).await.unwrap();

    let all = store.list_jobs(&JobFilter::default()).await.unwrap();
    let listed: Vec<i64> = all.iter().map(|j| j.id).collect();
    let newest_first: Vec<i64> = ids.iter().rev().copied().collect();
    assert_eq!(listed, newest_first);

    let transcribe = JobFilter {
        kind: Some(JobKind::Transcribe),
        ..JobFilter::default()
    };
    let listed: Vec<i64> = store
        .list_jobs(&transcribe)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(listed, [ids[6], ids[3], ids[0]]);

    let running_transcribe = JobFilter {
        status: Some(JobStatus::Running),
        ..transcribe
    };
    let listed: Vec<i64> = store
        .list_jobs(&running_transcribe)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(listed, [ids[3], ids[0]]);

    let page = JobFilter {
        limit: 2,
        offset: 3,
        ..JobFilter::default()
    };
    let listed: Vec<i64> = store
        .list_jobs(&page)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(listed, [ids[5], ids[4]]);
    store.close().await;
}

#[tokio::test]
async fn deleting_a_job_deletes_its_transcript_and_segments() {
    let (_temp, store) = open().await;
    let segments = [
        common::segment(0, 0.0, "the quick brown fox"),
        common::segment(1, 1.0, "jumps over the lazy dog"),
    ];
    let (job, transcript_id) = common::transcribe(&store, "fox", &segments).await.unwrap();
    let (other, other_transcript) = common::transcribe(
        &store,
        "other",
        &[common::segment(0, 0.0, "quick thinking")],
    )
    .await
    .unwrap();
    assert_eq!(
        store.search_transcripts("quick", 10).await.unwrap().len(),
        2
    );

    store.delete_job(job.id).await.unwrap();
    assert_eq!(store.job(job.id).await.unwrap(), None);
    assert_eq!(store.transcript(transcript_id).await.unwrap(), None);
    assert_eq!(store.transcript_for_job(job.id).await.unwrap(), None);
    assert!(store.segments(transcript_id).await.unwrap().is_empty());
    let hits = store.search_transcripts("quick", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].transcript_id, other_transcript);
    assert!(store
        .search_transcripts("fox", 10)
        .await
        .unwrap()
        .is_empty());
    assert!(matches!(
        store.delete_job(job.id).await,
        Err(StoreError::NotFound { what: "job", .. })
    ));

    let segment_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM segments")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(segment_rows, 1);
    assert!(store.job(other.id).await.unwrap().is_some());
    assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
    store.close().await;
}

#[tokio::test]
async fn jobs_running_when_the_store_closed_are_interrupted_at_open() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    let running = store.create_job(common::new_job("a")).await.unwrap();
    store.start_job(running.id).await.unwrap();
    let queued = store.create_job(common::new_job("b")).await.unwrap();
    let (done, _) = common::transcribe(&store, "c", &[]).await.unwrap();
    store.close().await;

    let store = Store::open(temp.path()).await.unwrap();
    assert_eq!(store.interrupted_at_open(), 2);
    let interrupted = store.job(running.id).await.unwrap().unwrap();
    assert_eq!(interrupted.status, JobStatus::Interrupted);
    assert_eq!(interrupted.error.as_deref(), Some(INTERRUPTED_ERROR));
    assert!(interrupted.finished_at.is_some());
    assert!(matches!(
        store.start_job(running.id).await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Interrupted,
            ..
        })
    ));
    // Its queue died with it: a queued job would never run. Finished ones are untouched.
    assert_eq!(
        store.job(queued.id).await.unwrap().unwrap().status,
        JobStatus::Interrupted
    );
    assert_eq!(store.job(done.id).await.unwrap().unwrap(), done);
    store.close().await;

    let store = Store::open(temp.path()).await.unwrap();
    assert_eq!(store.interrupted_at_open(), 0);
    store.close().await;
}

#[tokio::test]
async fn jobs_of_a_live_process_are_left_alone_at_open() {
    let temp = tempfile::tempdir().unwrap();
    // The desktop app runs a job...
    let app = Store::open(temp.path()).await.unwrap();
    let job = app.create_job(common::new_job("a")).await.unwrap();
    app.start_job(job.id).await.unwrap();
    // ...while the CLI opens the same data dir.
    let cli = Store::open(temp.path()).await.unwrap();
    assert_ne!(cli.session_id(), app.session_id());
    assert_eq!(cli.interrupted_at_open(), 0);
    assert_eq!(
        cli.job(job.id).await.unwrap().unwrap().status,
        JobStatus::Running
    );
    app.finish_job(job.id, None, &Default::default())
        .await
        .unwrap();

    let second = app.create_job(common::new_job("b")).await.unwrap();
    app.start_job(second.id).await.unwrap();
    app.close().await;
    cli.close().await;
    let sessions = temp.path().join(izwi_store::SESSIONS_DIR_NAME);
    let store = Store::open(temp.path()).await.unwrap();
    assert_eq!(store.interrupted_at_open(), 1);
    assert_eq!(
        store.job(second.id).await.unwrap().unwrap().status,
        JobStatus::Interrupted
    );
    assert_eq!(
        store.job(job.id).await.unwrap().unwrap().status,
        JobStatus::Done
    );
    // Ended sessions' lock files are swept; only the open store's remains.
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), 1);
    store.close().await;
}

/// A speak job that wrote `output`.
async fn spoken(store: &Store, output: &std::path::Path) -> i64 {
    std::fs::write(output, b"RIFF").unwrap();
    let job = store
        .create_job(NewJob {
            kind: JobKind::Speak,
            model_id: Some("local/joe".into()),
            input: "Hello.".into(),
            params: serde_json::json!({}),
        })
        .await
        .unwrap();
    store.start_job(job.id).await.unwrap();
    let output = output.display().to_string();
    store
        .finish_job(job.id, Some(&output), &JobMetrics::default())
        .await
        .unwrap();
    job.id
}

#[tokio::test]
async fn deleting_a_speak_job_deletes_its_audio_only_in_the_audio_folder() {
    let (temp, store) = open().await;
    let own = store.audio_dir().join("speech-1.wav");
    let id = spoken(&store, &own).await;
    store.delete_job(id).await.unwrap();
    assert!(!own.exists());

    // A file the user chose as the output stays.
    let chosen = temp.path().join("mine.wav");
    let id = spoken(&store, &chosen).await;
    store.delete_job(id).await.unwrap();
    assert!(chosen.exists());

    // So does one that only looks inside: through `..`, or a linked folder.
    let user_dir = tempfile::tempdir().unwrap();
    let escaped = store.audio_dir().join("../mine.wav");
    let id = spoken(&store, &escaped).await;
    store.delete_job(id).await.unwrap();
    assert!(store.data_dir().join("mine.wav").exists());
    #[cfg(unix)]
    {
        let link = store.audio_dir().join("linked");
        std::os::unix::fs::symlink(user_dir.path(), &link).unwrap();
        let through = link.join("take.wav");
        let id = spoken(&store, &through).await;
        store.delete_job(id).await.unwrap();
        assert!(user_dir.path().join("take.wav").exists());
    }
    store.close().await;
}

#[tokio::test]
async fn deleting_a_transcription_deletes_its_upload_only() {
    let (temp, store) = open().await;
    let transcribed = |input: std::path::PathBuf| {
        let store = &store;
        async move {
            std::fs::write(&input, b"RIFF").unwrap();
            store
                .create_job(NewJob {
                    kind: JobKind::Transcribe,
                    model_id: Some("local/tiny".into()),
                    input: input.display().to_string(),
                    params: serde_json::json!({}),
                })
                .await
                .unwrap()
                .id
        }
    };
    std::fs::create_dir_all(store.uploads_dir()).unwrap();
    let upload = store.uploads_dir().join("0123456789abcdef.wav");
    let id = transcribed(upload.clone()).await;
    store.delete_job(id).await.unwrap();
    assert!(!upload.exists());
    // The user's own file, transcribed from where it is, stays.
    let mine = temp.path().join("talk.wav");
    let id = transcribed(mine.clone()).await;
    store.delete_job(id).await.unwrap();
    assert!(mine.exists());
    store.close().await;
}

#[tokio::test]
async fn a_dictation_recording_goes_with_the_last_job_that_reads_it() {
    let (_temp, store) = open().await;
    std::fs::create_dir_all(store.recordings_dir()).unwrap();
    let recording = store.recordings_dir().join("dictation-1.wav");
    std::fs::write(&recording, b"RIFF").unwrap();
    let job = || {
        store.create_job(NewJob {
            kind: JobKind::Transcribe,
            model_id: Some("local/tiny".into()),
            input: recording.display().to_string(),
            params: serde_json::json!({}),
        })
    };
    // The dictation, interrupted, and the transcription of its recording afterwards.
    let interrupted = job().await.unwrap().id;
    let retried = job().await.unwrap().id;
    store.delete_job(interrupted).await.unwrap();
    assert!(recording.exists());
    store.delete_job(retried).await.unwrap();
    assert!(!recording.exists());
    store.close().await;
}
