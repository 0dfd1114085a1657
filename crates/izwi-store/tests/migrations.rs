//! Opening the store: schema, pragmas, reopening, and the data dir's path helpers.

#[allow(dead_code)]
mod common;

use std::path::Path;

use izwi_store::{Store, StoreError, AUDIO_DIR_NAME, DB_FILE_NAME, OPEN_LOCK_NAME};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

/// How many migrations the crate ships: every one runs once.
fn migrations_shipped() -> i64 {
    std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"))
        .unwrap()
        .count() as i64
}

#[tokio::test]
async fn open_creates_the_data_dir_database_and_schema() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("not/yet/there");
    let store = Store::open(&data_dir).await.unwrap();

    assert!(data_dir.join(DB_FILE_NAME).is_file());
    assert!(data_dir.join(AUDIO_DIR_NAME).is_dir());
    assert_eq!(store.audio_dir(), store.data_dir().join(AUDIO_DIR_NAME));
    assert_eq!(store.interrupted_at_open(), 0);

    let journal_mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(journal_mode, "wal");
    let foreign_keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(foreign_keys, 1);
    let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(synchronous, 2, "synchronous should be FULL");

    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT GLOB '*_fts_*' \
         ORDER BY name",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(
        tables,
        [
            "_sqlx_migrations",
            "chats",
            "jobs",
            "messages",
            "segments",
            "segments_fts",
            "settings",
            // AUTOINCREMENT's record of the highest id each table has used.
            "sqlite_sequence",
            "transcripts",
            "transcripts_fts",
            "voices",
        ]
    );
    let triggers: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(triggers, 6);
    assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
    store.close().await;
}

#[tokio::test]
async fn bundled_sqlite_has_fts5() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    let fts5: i64 = sqlx::query_scalar("SELECT sqlite_compileoption_used('ENABLE_FTS5')")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(fts5, 1);
    store.close().await;
}

#[tokio::test]
async fn reopening_keeps_data_and_does_not_rerun_migrations() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    let (job, transcript_id) =
        common::transcribe(&store, "meeting", &[common::segment(0, 0.0, "hello there")])
            .await
            .unwrap();
    store.set_setting("theme", "dark").await.unwrap();
    store.close().await;

    for _ in 0..2 {
        let store = Store::open(temp.path()).await.unwrap();
        assert_eq!(store.interrupted_at_open(), 0);
        let migrations: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(migrations, migrations_shipped());
        assert_eq!(store.job(job.id).await.unwrap().unwrap(), job);
        assert_eq!(store.segments(transcript_id).await.unwrap().len(), 1);
        assert_eq!(
            store
                .get_setting::<String>("theme")
                .await
                .unwrap()
                .as_deref(),
            Some("dark")
        );
        assert_eq!(
            store.search_transcripts("hello", 10).await.unwrap().len(),
            1
        );
        assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_opening_a_new_dir_at_once_both_succeed() {
    let temp = tempfile::tempdir().unwrap();
    let (a, b) = tokio::join!(Store::open(temp.path()), Store::open(temp.path()));
    let (a, b) = (a.unwrap(), b.unwrap());
    let migrations: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(a.pool())
        .await
        .unwrap();
    assert_eq!(migrations, migrations_shipped());
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn relative_accepts_paths_inside_the_data_dir() {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();

    // Need not exist yet.
    let file = store.audio_dir().join("take 1.wav");
    let relative = store.relative(&file).unwrap();
    assert_eq!(relative, "audio/take 1.wav");
    assert_eq!(store.resolve(&relative), file);

    let dotted = store.data_dir().join("audio/./x/../y.wav");
    assert_eq!(store.relative(&dotted).unwrap(), "audio/y.wav");
    store.close().await;
}

#[tokio::test]
async fn relative_refuses_paths_outside_the_data_dir() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let store = Store::open(&data_dir).await.unwrap();

    let outside = [
        temp.path().join("elsewhere.wav"),
        temp.path().join("data-other/a.wav"),
        store.data_dir().join("audio/../../escape.wav"),
        store.data_dir().to_path_buf(),
        std::path::PathBuf::from("/etc/passwd"),
    ];
    for path in outside {
        assert!(
            matches!(
                store.relative(&path),
                Err(StoreError::PathOutsideDataDir(_))
            ),
            "{} accepted",
            path.display()
        );
    }
    store.close().await;
}

#[cfg(unix)]
#[tokio::test]
async fn relative_sees_through_symlinks_to_the_data_dir() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let store = Store::open(&data_dir).await.unwrap();
    let link = temp.path().join("link");
    std::os::unix::fs::symlink(&data_dir, &link).unwrap();

    let through_link = link.join("audio/new.wav");
    assert_eq!(store.relative(&through_link).unwrap(), "audio/new.wav");
    store.close().await;
}

/// A data dir as the first release left it: the first migration only, with a
/// transcript of two segments.
async fn first_schema_with_rows(data_dir: &Path) {
    let only_first = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/20261122000001_initial.sql"),
        only_first.path().join("20261122000001_initial.sql"),
    )
    .unwrap();
    std::fs::create_dir_all(data_dir).unwrap();
    let options = SqliteConnectOptions::new()
        .filename(data_dir.join(DB_FILE_NAME))
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::migrate::Migrator::new(only_first.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for sql in [
        "INSERT INTO jobs (id, kind, status, input, created_at) \
         VALUES (1, 'transcribe', 'done', '/home/user/talk.wav', 1)",
        "INSERT INTO transcripts (id, job_id, title, source_path, created_at) \
         VALUES (1, 1, 'talk.wav', '/home/user/talk.wav', 1)",
        "INSERT INTO segments (transcript_id, idx, start_secs, end_secs, text) \
         VALUES (1, 0, 0.0, 2.0, 'Ask not what your country')",
        "INSERT INTO segments (transcript_id, idx, start_secs, end_secs, text) \
         VALUES (1, 1, 2.0, 4.0, 'can do for you, Mr Kenedy')",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;
}

#[tokio::test]
async fn segments_of_the_first_schema_migrate_unedited_and_can_be_edited() {
    let temp = tempfile::tempdir().unwrap();
    first_schema_with_rows(temp.path()).await;

    let store = Store::open(temp.path()).await.unwrap();
    let segments = store.segments(1).await.unwrap();
    assert_eq!(
        segments
            .iter()
            .map(|s| (s.idx, s.text.as_str(), s.original.as_deref()))
            .collect::<Vec<_>>(),
        [
            (0, "Ask not what your country", None),
            (1, "can do for you, Mr Kenedy", None),
        ]
    );
    assert_eq!(
        store.search_transcripts("kenedy", 10).await.unwrap().len(),
        1
    );

    let edited = store
        .edit_segment(1, 1, "can do for you, Mr Kennedy")
        .await
        .unwrap();
    assert_eq!(
        edited.original.as_deref(),
        Some("can do for you, Mr Kenedy")
    );
    assert!(store
        .search_transcripts("kenedy", 10)
        .await
        .unwrap()
        .is_empty());
    let hits = store.search_transcripts("kennedy", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snippet, "can do for you, Mr [Kennedy]");
    store.close().await;

    // The edit and the index survive reopening.
    let store = Store::open(temp.path()).await.unwrap();
    assert_eq!(store.segments(1).await.unwrap()[1], edited);
    assert_eq!(
        store.search_transcripts("kennedy", 10).await.unwrap().len(),
        1
    );
    let check = "INSERT INTO segments_fts (segments_fts) VALUES ('integrity-check')";
    sqlx::query(check).execute(store.pool()).await.unwrap();
    assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
    store.close().await;
}

/// A data dir whose database has only the first schema (ids that could be reused),
/// with jobs 1 to 3 (3 then deleted), and a transcript and segment of job 2.
async fn old_data_dir(data_dir: &Path) {
    std::fs::create_dir_all(data_dir).unwrap();
    let first = tempfile::tempdir().unwrap();
    let name = "20261122000001_initial.sql";
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    std::fs::copy(migrations.join(name), first.path().join(name)).unwrap();
    let options = SqliteConnectOptions::new()
        .filename(data_dir.join(DB_FILE_NAME))
        .create_if_missing(true)
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(first.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for id in 1..=3 {
        sqlx::query(
            "INSERT INTO jobs (id, kind, status, input, created_at) \
             VALUES (?, 'transcribe', 'done', ?, ?)",
        )
        .bind(id)
        .bind(format!("/home/user/take{id}.wav"))
        .bind(1_700_000_000_000i64 + id)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO transcripts (id, job_id, title, source_path, created_at) \
         VALUES (7, 2, 'take two', '/home/user/take2.wav', 1)",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO segments (transcript_id, idx, start_secs, end_secs, text) \
         VALUES (7, 0, 0, 1, 'hello from the old schema')",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("DELETE FROM jobs WHERE id = 3")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn an_old_database_keeps_every_row_and_job_ids_are_never_reused() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    old_data_dir(&data_dir).await;

    let store = Store::open(&data_dir).await.unwrap();
    let migrations: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(migrations, migrations_shipped());
    let jobs = store
        .list_jobs(&izwi_store::JobFilter::default())
        .await
        .unwrap();
    let ids: Vec<(i64, String)> = jobs.iter().map(|j| (j.id, j.input.clone())).collect();
    assert_eq!(
        ids,
        [
            (2, "/home/user/take2.wav".to_owned()),
            (1, "/home/user/take1.wav".to_owned())
        ]
    );
    // Rebuilding the jobs table did not cascade to what refers to it.
    let transcript = store.transcript_for_job(2).await.unwrap().unwrap();
    assert_eq!(transcript.id, 7);
    assert_eq!(store.segments(7).await.unwrap().len(), 1);
    assert_eq!(store.search_transcripts("old", 10).await.unwrap().len(), 1);
    let foreign_keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(foreign_keys, 1);
    assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());

    // The newest job deleted: its id is not handed out again.
    let newest = store.create_job(common::new_job("new.wav")).await.unwrap();
    assert_eq!(newest.id, 3);
    store.delete_job(newest.id).await.unwrap();
    let next = store.create_job(common::new_job("next.wav")).await.unwrap();
    assert_eq!(next.id, 4);
    store.close().await;

    // Still so after reopening.
    let store = Store::open(&data_dir).await.unwrap();
    store.delete_job(4).await.unwrap();
    let after = store
        .create_job(common::new_job("after.wav"))
        .await
        .unwrap();
    assert_eq!(after.id, 5);
    store.close().await;
}

#[tokio::test]
async fn an_open_lock_held_too_long_names_the_other_izwi() {
    let temp = tempfile::tempdir().unwrap();
    Store::open(temp.path()).await.unwrap().close().await;
    let held = std::fs::File::open(temp.path().join(OPEN_LOCK_NAME)).unwrap();
    held.lock().unwrap();
    // Bounded so the test ends on a build that would wait for ever.
    let opened = tokio::time::timeout(izwi_store::OPEN_LOCK_WAIT * 6, Store::open(temp.path()))
        .await
        .expect("open gave up waiting");
    let err = opened.unwrap_err();
    assert!(matches!(err, StoreError::InUse(_)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("another Izwi (the app or the CLI) is using the data folder"),
        "{message}"
    );
    drop(held);
    Store::open(temp.path()).await.unwrap().close().await;
}

#[tokio::test]
async fn chat_jobs_come_in_and_a_deleted_newest_id_stays_unused() {
    // The schema before chat jobs, its newest job (3) deleted.
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let earlier = tempfile::tempdir().unwrap();
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&migrations).unwrap() {
        let name = entry.unwrap().file_name();
        if name.to_string_lossy().as_ref() < "20261126000002" {
            std::fs::copy(migrations.join(&name), earlier.path().join(&name)).unwrap();
        }
    }
    let options = SqliteConnectOptions::new()
        .filename(data_dir.join(DB_FILE_NAME))
        .create_if_missing(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(earlier.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for id in 1..=3 {
        sqlx::query(
            "INSERT INTO jobs (kind, status, input, created_at) VALUES ('speak', 'done', ?, 1)",
        )
        .bind(format!("line {id}"))
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query("DELETE FROM jobs WHERE id = 3")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let store = Store::open(&data_dir).await.unwrap();
    let chat = store
        .create_job(izwi_store::NewJob {
            kind: izwi_store::JobKind::Chat,
            model_id: Some("local/smollm2".into()),
            input: "What is the capital of France?".into(),
            params: serde_json::json!({}),
        })
        .await
        .unwrap();
    assert_eq!(chat.id, 4, "3 was deleted, never to be given again");
    let kinds: Vec<_> = store
        .list_jobs(&izwi_store::JobFilter::default())
        .await
        .unwrap()
        .iter()
        .map(|j| (j.id, j.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (4, izwi_store::JobKind::Chat),
            (2, izwi_store::JobKind::Speak),
            (1, izwi_store::JobKind::Speak)
        ]
    );
    assert_eq!(store.integrity_check().await.unwrap(), Vec::<String>::new());
    store.close().await;
}
