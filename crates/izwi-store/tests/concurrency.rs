//! Many writers and readers at once, through one store and through a second store on
//! the same data dir (as a second process would): no "database is locked", no lost rows.

#[allow(dead_code)]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{new_job, new_transcript, segment};
use izwi_store::{JobFilter, JobMetrics, JobStatus, Store, StoreError};

const WRITERS: usize = 4;
const JOBS_PER_WRITER: usize = 50;
const SEGMENTS_PER_JOB: usize = 6;

/// Runs one writer's jobs. Even jobs save the transcript in one go, odd ones append
/// its segments in two batches after creating it.
async fn writer(store: Store, writer: usize) -> Result<(), StoreError> {
    for n in 0..JOBS_PER_WRITER {
        let name = format!("w{writer}j{n}");
        let job = store.create_job(new_job(&name)).await?;
        store.start_job(job.id).await?;
        let segments: Vec<_> = (0..SEGMENTS_PER_JOB)
            .map(|i| {
                segment(
                    i as i64,
                    i as f64,
                    &format!("writer{writer} job{n} shared words"),
                )
            })
            .collect();
        if n % 2 == 0 {
            store
                .save_transcript(new_transcript(Some(job.id), &name), &segments)
                .await?;
        } else {
            let id = store
                .create_transcript(new_transcript(Some(job.id), &name))
                .await?;
            let (first, rest) = segments.split_at(SEGMENTS_PER_JOB / 2);
            store.append_segments(id, first).await?;
            store.set_job_progress(job.id, 0.5).await?;
            store.append_segments(id, rest).await?;
        }
        store
            .finish_job(job.id, None, &JobMetrics::default())
            .await?;
    }
    Ok(())
}

/// Reads until the writers are done; returns how many reads it made.
async fn reader(store: Store, done: Arc<AtomicBool>) -> Result<usize, StoreError> {
    let mut reads = 0;
    while !done.load(Ordering::Relaxed) {
        let jobs = store.list_jobs(&JobFilter::default()).await?;
        let hits = store.search_transcripts("shared wor", 20).await?;
        if let Some(hit) = hits.first() {
            store.segments(hit.transcript_id).await?;
        }
        if let Some(job) = jobs.first() {
            store.transcript_for_job(job.id).await?;
        }
        reads += 1;
    }
    Ok(reads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_and_readers_on_two_stores_never_fail() {
    let temp = tempfile::tempdir().unwrap();
    let first = Store::open(temp.path()).await.unwrap();
    // Opened before any job runs: opening marks running jobs interrupted.
    let second = Store::open(temp.path()).await.unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = [&first, &second]
        .into_iter()
        .map(|store| tokio::spawn(reader(store.clone(), done.clone())))
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = if w % 2 == 0 { &first } else { &second };
            tokio::spawn(writer(store.clone(), w))
        })
        .collect();

    for handle in writers {
        handle.await.unwrap().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for handle in readers {
        let reads = handle.await.unwrap().unwrap();
        assert!(reads > 0);
    }

    let total = WRITERS * JOBS_PER_WRITER;
    for store in [&first, &second] {
        let all = JobFilter {
            limit: -1,
            ..JobFilter::default()
        };
        let jobs = store.list_jobs(&all).await.unwrap();
        assert_eq!(jobs.len(), total);
        assert!(jobs.iter().all(|j| j.status == JobStatus::Done));
        assert_eq!(store.list_transcripts(-1, 0).await.unwrap().len(), total);
        let segments: i64 = sqlx::query_scalar("SELECT count(*) FROM segments")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(segments as usize, total * SEGMENTS_PER_JOB);
        let hits = store.search_transcripts("shared", 10_000).await.unwrap();
        assert_eq!(hits.len(), total * SEGMENTS_PER_JOB);
        let hits = store.search_transcripts("writer1 job7", 100).await.unwrap();
        assert_eq!(hits.len(), SEGMENTS_PER_JOB);
        // Through connections whose search index state other connections changed.
        assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
    }
    first.close().await;
    second.close().await;
}
