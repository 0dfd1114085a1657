//! What the desktop app asks of the runtime besides jobs: a file's waveform peaks, a
//! stored transcript exported to disk, and where models run.

mod common;

use std::path::Path;
use std::sync::Arc;

use izwi_runtime::{CancellationToken, ExportFormat, NoEvents, Runtime, RuntimeError};
use izwi_store::{NewTranscript, SegmentRecord, Store};

async fn open(dir: &Path) -> Runtime {
    Runtime::open(common::config(dir), Arc::new(NoEvents))
        .await
        .unwrap()
}

#[tokio::test]
async fn peaks_follow_the_loudness_of_the_audio() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = open(dir.path()).await;
    // One second of silence, then one second of a 440 Hz tone at half scale.
    let rate = 16_000;
    let samples: Vec<f32> = (0..2 * rate)
        .map(|i| {
            if i < rate {
                0.0
            } else {
                0.5 * (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin()
            }
        })
        .collect();
    let wav = dir.path().join("tone.wav");
    izwi_audio::write_wav(&wav, &samples, rate as u32).unwrap();

    let peaks = runtime
        .audio_peaks(&wav, 10, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(peaks.len(), 10);
    assert!(peaks[..5].iter().all(|&p| p < 0.01), "{peaks:?}");
    assert!(
        peaks[5..].iter().all(|&p| (p - 0.5).abs() < 0.02),
        "{peaks:?}"
    );

    assert!(matches!(
        runtime.audio_peaks(&wav, 0, CancellationToken::new()).await,
        Err(RuntimeError::InvalidRequest(_))
    ));
    let not_audio = dir.path().join("notes.wav");
    std::fs::write(&not_audio, b"not audio at all").unwrap();
    assert!(matches!(
        runtime
            .audio_peaks(&not_audio, 10, CancellationToken::new())
            .await,
        Err(RuntimeError::Audio { .. })
    ));

    // Cancelled (a newer request took its place): it gives way, whether or not its
    // decoding had finished.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    assert!(matches!(
        runtime.audio_peaks(&wav, 10, cancelled).await,
        Err(RuntimeError::Superseded(_))
    ));
}

#[tokio::test]
async fn transcripts_are_exported_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = open(dir.path()).await;
    // A transcript saved by another process on the same data dir, as the CLI would.
    let store = Store::open(&dir.path().join("data")).await.unwrap();
    let id = store
        .save_transcript(
            NewTranscript {
                title: "talk.wav".into(),
                source_path: "/talks/talk.wav".into(),
                language: Some("en".into()),
                duration: 4.0,
                rtf: Some(0.2),
                ..Default::default()
            },
            &[
                SegmentRecord {
                    idx: 0,
                    start: 0.0,
                    end: 1.25,
                    text: "Ask not.".into(),
                    original: None,
                    words: Vec::new(),
                },
                SegmentRecord {
                    idx: 1,
                    start: 1.25,
                    end: 3.5,
                    text: "Ask what you can do.".into(),
                    original: None,
                    words: Vec::new(),
                },
            ],
        )
        .await
        .unwrap();

    let txt = runtime
        .export_transcript(id, ExportFormat::Txt)
        .await
        .unwrap();
    assert_eq!(txt, "Ask not. Ask what you can do.\n");

    let path = dir.path().join("talk.srt");
    let srt = runtime
        .export_transcript_to(id, ExportFormat::Srt, &path)
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), srt);
    assert!(srt.starts_with("1\n00:00:00,000 --> 00:00:01,250\nAsk not.\n"));

    let vtt = runtime
        .export_transcript(id, ExportFormat::Vtt)
        .await
        .unwrap();
    assert!(vtt.contains("00:00:01.250 --> 00:00:03.500\nAsk what you can do."));
    let json: serde_json::Value = serde_json::from_str(
        &runtime
            .export_transcript(id, ExportFormat::Json)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["segments"].as_array().unwrap().len(), 2);
    assert_eq!(json["language"], "en");

    let unwritable = dir.path().join("missing-folder/talk.txt");
    let err = runtime
        .export_transcript_to(id, ExportFormat::Txt, &unwritable)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    // The data folder holds the database: an export never goes there.
    let db = dir.path().join("data/izwi.db");
    let err = runtime
        .export_transcript_to(id, ExportFormat::Txt, &db)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("inside Izwi's data folder"),
        "{err}"
    );
    assert!(runtime
        .export_transcript(id, ExportFormat::Txt)
        .await
        .is_ok());
    assert!(runtime
        .export_transcript(id + 1, ExportFormat::Txt)
        .await
        .is_err());
}

#[tokio::test]
async fn the_device_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = open(dir.path()).await;
    let device = runtime.device();
    assert!(
        device == "cpu" || device.starts_with("cuda:") || device == "metal",
        "{device}"
    );
}
