//! Transcripts and segments: round trips, atomic appends, listing, full-text search.

#[allow(dead_code)]
mod common;

use common::{new_transcript, segment};
use izwi_store::{NewTranscript, SegmentRecord, Store, StoreError};

async fn open() -> (tempfile::TempDir, Store) {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).await.unwrap();
    (temp, store)
}

#[tokio::test]
async fn a_transcript_and_its_segments_round_trip_in_time_order() {
    let (_temp, store) = open().await;
    let job = store
        .create_job(common::new_job("interview"))
        .await
        .unwrap();
    let new = NewTranscript {
        audio_path: Some("audio/interview.wav".into()),
        ..new_transcript(Some(job.id), "Interview")
    };
    // Given out of order; idx 2 and 3 start at the same time.
    let segments = [
        segment(3, 4.0, "fourth"),
        segment(0, 0.0, "first"),
        segment(2, 4.0, "third"),
        segment(1, 2.0, "second"),
    ];
    let id = store.save_transcript(new.clone(), &segments).await.unwrap();

    let record = store.transcript(id).await.unwrap().unwrap();
    assert_eq!(record.id, id);
    assert_eq!(record.job_id, Some(job.id));
    assert_eq!(record.title, new.title);
    assert_eq!(record.source_path, new.source_path);
    assert_eq!(record.audio_path, new.audio_path);
    assert_eq!(record.language, new.language);
    assert_eq!(record.duration, new.duration);
    assert_eq!(record.model_id, new.model_id);
    assert_eq!(record.rtf, new.rtf);
    assert_eq!(
        store.transcript_for_job(job.id).await.unwrap(),
        Some(record)
    );

    let texts: Vec<String> = store
        .segments(id)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert_eq!(texts, ["first", "second", "third", "fourth"]);
    assert_eq!(
        store.segments(id).await.unwrap()[1],
        SegmentRecord {
            idx: 1,
            start: 2.0,
            end: 3.0,
            text: "second".into(),
            original: None,
            words: Vec::new(),
        }
    );
    store.close().await;
}

#[tokio::test]
async fn appends_are_all_or_nothing() {
    let (_temp, store) = open().await;
    let id = store
        .create_transcript(new_transcript(None, "Live"))
        .await
        .unwrap();
    assert!(store.segments(id).await.unwrap().is_empty());
    store
        .append_segments(id, &[segment(0, 0.0, "one"), segment(1, 1.0, "two")])
        .await
        .unwrap();

    // idx 1 is taken: the whole batch is refused, "three" included.
    let err = store
        .append_segments(id, &[segment(2, 2.0, "three"), segment(1, 3.0, "again")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Sqlx(_)), "{err}");
    assert_eq!(store.segments(id).await.unwrap().len(), 2);
    assert!(store
        .search_transcripts("three", 10)
        .await
        .unwrap()
        .is_empty());

    assert!(matches!(
        store.append_segments(999, &[segment(0, 0.0, "x")]).await,
        Err(StoreError::NotFound {
            what: "transcript",
            id: 999
        })
    ));
    store.close().await;
}

#[tokio::test]
async fn bad_references_are_refused() {
    let (_temp, store) = open().await;
    assert!(matches!(
        store
            .save_transcript(new_transcript(Some(42), "orphan"), &[])
            .await,
        Err(StoreError::NotFound {
            what: "job",
            id: 42
        })
    ));
    for audio_path in ["../outside.wav", "/abs/a.wav", ""] {
        let new = NewTranscript {
            audio_path: Some(audio_path.into()),
            ..new_transcript(None, "escape")
        };
        assert!(
            matches!(
                store.create_transcript(new).await,
                Err(StoreError::PathOutsideDataDir(_))
            ),
            "{audio_path:?} accepted"
        );
    }
    assert!(store.list_transcripts(10, 0).await.unwrap().is_empty());
    store.close().await;
}

#[tokio::test]
async fn list_transcripts_is_newest_first_and_paged() {
    let (_temp, store) = open().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            store
                .create_transcript(new_transcript(None, &format!("t{i}")))
                .await
                .unwrap(),
        );
    }
    let listed: Vec<i64> = store
        .list_transcripts(100, 0)
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, [ids[4], ids[3], ids[2], ids[1], ids[0]]);
    let listed: Vec<i64> = store
        .list_transcripts(2, 1)
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, [ids[3], ids[2]]);

    store.delete_transcript(ids[2]).await.unwrap();
    assert_eq!(store.list_transcripts(100, 0).await.unwrap().len(), 4);
    assert!(matches!(
        store.delete_transcript(ids[2]).await,
        Err(StoreError::NotFound {
            what: "transcript",
            ..
        })
    ));
    store.close().await;
}

/// A store with two transcripts to search.
async fn searchable() -> (tempfile::TempDir, Store, i64, i64) {
    let (temp, store) = open().await;
    let weather = store
        .save_transcript(
            new_transcript(None, "Morning Weather Report"),
            &[
                segment(0, 0.0, "Good morning, here is the forecast."),
                segment(1, 5.0, "Expect heavy rain in the afternoon."),
                segment(2, 9.0, "The café on Main Street closes early."),
            ],
        )
        .await
        .unwrap();
    let meeting = store
        .save_transcript(
            new_transcript(None, "Team meeting"),
            &[
                segment(0, 0.0, "Let's review the rainfall numbers AND the budget."),
                segment(1, 3.0, "He said \"ship it\" near the end."),
            ],
        )
        .await
        .unwrap();
    (temp, store, weather, meeting)
}

#[tokio::test]
async fn search_finds_words_case_insensitively_with_snippets() {
    let (_temp, store, weather, _) = searchable().await;
    let hits = store.search_transcripts("FORECAST", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    let hit = &hits[0];
    assert_eq!(hit.transcript_id, weather);
    assert_eq!(hit.title, "Morning Weather Report");
    assert_eq!(
        (hit.segment_idx, hit.start, hit.end),
        (Some(0), Some(0.0), Some(1.0))
    );
    assert!(hit.snippet.contains("[forecast]"), "{}", hit.snippet);

    // Every word must match, in the same segment.
    let hits = store
        .search_transcripts("heavy afternoon", 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].segment_idx, Some(1));
    assert!(store
        .search_transcripts("heavy forecast", 10)
        .await
        .unwrap()
        .is_empty());

    // Accents are folded.
    let hits = store.search_transcripts("cafe", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].segment_idx, Some(2));
}

#[tokio::test]
async fn search_prefix_matches_the_last_word_only() {
    let (_temp, store, weather, meeting) = searchable().await;
    let mut found: Vec<i64> = store
        .search_transcripts("rai", 10)
        .await
        .unwrap()
        .iter()
        .map(|h| h.transcript_id)
        .collect();
    found.sort();
    assert_eq!(found, [weather, meeting], "rain and rainfall");

    // "heav" is not the last word, so it must match whole.
    assert!(store
        .search_transcripts("heav rain", 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store
            .search_transcripts("heavy rai", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.search_transcripts("rain", 1).await.unwrap().len(), 1);
}

#[tokio::test]
async fn search_matches_titles() {
    let (_temp, store, weather, meeting) = searchable().await;
    let hits = store.search_transcripts("weather", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].transcript_id, weather);
    assert_eq!(hits[0].segment_idx, None);
    assert!(hits[0].snippet.contains("[Weather]"), "{}", hits[0].snippet);

    // "team" is only in a title, "budget" only in a segment.
    let hits = store.search_transcripts("team", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].transcript_id, meeting);
    let hits = store.search_transcripts("budget", 10).await.unwrap();
    assert_eq!(hits[0].segment_idx, Some(0));
}

#[tokio::test]
async fn search_survives_hostile_input() {
    let (_temp, store, _, meeting) = searchable().await;
    let hostile = [
        "\"",
        "\"\"",
        "\"ship",
        "ship\"",
        "AND",
        "rain AND",
        "OR NOT",
        "(",
        "rain)",
        "*",
        "rai*",
        "NEAR(",
        "NEAR(rain budget, 2)",
        "-rain",
        "text:rain",
        "^rain",
        "rain +",
        "{text}: rain",
        "'; DROP TABLE segments; --",
        "\0",
    ];
    for text in hostile {
        store
            .search_transcripts(text, 10)
            .await
            .unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }

    // Operators are plain words: "AND" is in the meeting's first segment.
    let hits = store.search_transcripts("numbers AND", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].transcript_id, meeting);
    let hits = store.search_transcripts("\"ship it\"", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].segment_idx, Some(1));
    let hits = store.search_transcripts("near", 10).await.unwrap();
    assert_eq!(hits.len(), 1);

    for blank in ["", "   ", "\t\n", "\" * ( )"] {
        assert!(store
            .search_transcripts(blank, 10)
            .await
            .unwrap()
            .is_empty());
    }
}

#[tokio::test]
async fn deleted_transcripts_leave_the_search_index() {
    let (_temp, store, weather, meeting) = searchable().await;
    store.delete_transcript(weather).await.unwrap();
    assert!(store
        .search_transcripts("forecast", 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .search_transcripts("weather", 10)
        .await
        .unwrap()
        .is_empty());
    let hits = store.search_transcripts("rai", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].transcript_id, meeting);

    // The index agrees with its content tables.
    for table in ["segments_fts", "transcripts_fts"] {
        let check = format!("INSERT INTO {table} ({table}) VALUES ('integrity-check')");
        sqlx::query(sqlx::AssertSqlSafe(check))
            .execute(store.pool())
            .await
            .unwrap();
    }
    store.close().await;
}

#[tokio::test]
async fn edits_keep_the_original_and_search_follows_them() {
    let (_temp, store, weather, _) = searchable().await;
    let edited = store
        .edit_segment(weather, 2, "The cafe on Maine Street closes early.")
        .await
        .unwrap();
    assert_eq!(edited.text, "The cafe on Maine Street closes early.");
    assert_eq!(
        edited.original.as_deref(),
        Some("The café on Main Street closes early.")
    );
    assert_eq!(store.segments(weather).await.unwrap()[2], edited);
    // Search sees the edit only ("main" is a whole word here; only the last is a prefix).
    assert!(store
        .search_transcripts("main street", 10)
        .await
        .unwrap()
        .is_empty());
    let hits = store.search_transcripts("maine street", 10).await.unwrap();
    assert_eq!((hits.len(), hits[0].segment_idx), (1, Some(2)), "{hits:?}");

    // A second edit keeps the first original, not the first edit.
    let again = store
        .edit_segment(weather, 2, "The café on Maine Street closes late.")
        .await
        .unwrap();
    assert_eq!(again.original, edited.original);
    // Editing back to what the model heard is no edit at all.
    let back = store
        .edit_segment(weather, 2, "The café on Main Street closes early.")
        .await
        .unwrap();
    assert_eq!(back.original, None);

    store
        .edit_segment(weather, 0, "Good evening.")
        .await
        .unwrap();
    assert!(store
        .search_transcripts("forecast", 10)
        .await
        .unwrap()
        .is_empty());
    let reverted = store.revert_segment(weather, 0).await.unwrap();
    assert_eq!(
        (reverted.text.as_str(), reverted.original.as_deref()),
        ("Good morning, here is the forecast.", None)
    );
    assert!(store
        .search_transcripts("evening", 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store
            .search_transcripts("forecast", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    // Reverting an unedited segment changes nothing.
    assert_eq!(store.revert_segment(weather, 0).await.unwrap(), reverted);

    let check = "INSERT INTO segments_fts (segments_fts) VALUES ('integrity-check')";
    sqlx::query(check).execute(store.pool()).await.unwrap();
    store.close().await;
}

#[tokio::test]
async fn editing_what_does_not_exist_names_it() {
    let (_temp, store, weather, _) = searchable().await;
    assert_eq!(
        store
            .edit_segment(999, 0, "x")
            .await
            .unwrap_err()
            .to_string(),
        "transcript 999 does not exist"
    );
    assert_eq!(
        store
            .edit_segment(weather, 7, "x")
            .await
            .unwrap_err()
            .to_string(),
        "segment 7 does not exist"
    );
    assert!(store.revert_segment(weather, 7).await.is_err());
    store.close().await;
}
