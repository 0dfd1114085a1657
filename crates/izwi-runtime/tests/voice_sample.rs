//! A sample to clone from, made as the desktop's "Clone a voice" makes it: recorded from
//! chunks of audio (as the microphone sends them) with its level, trimmed, and heard by
//! the real tiny.en model (from scripts/fetch-assets.sh).

mod common;

use izwi_runtime::{TranscriptSource, SAMPLE_PEAKS};
use izwi_test_support::asset;
use tokio::sync::mpsc;

#[tokio::test]
async fn a_recording_is_kept_with_its_levels_and_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let (tx, rx) = mpsc::unbounded_channel();
    // One second of silence, then one second at 0.5: levels every tenth of a second.
    tx.send(Ok(vec![0.0f32; 16_000])).unwrap();
    tx.send(Ok(vec![0.5f32; 16_000])).unwrap();
    drop(tx);
    let mut levels = Vec::new();
    let sample = runtime
        .record_voice_sample(rx, |l| levels.push(l))
        .await
        .unwrap();
    assert_eq!(levels.len(), 20);
    assert!(levels[..10].iter().all(|&l| l == 0.0));
    assert!(levels[10..].iter().all(|&l| (l - 0.5).abs() < 1e-3));
    assert!((sample.seconds - 2.0).abs() < 1e-9);
    assert_eq!(sample.peaks.len(), SAMPLE_PEAKS);
    assert!(sample.path.starts_with(dir.path().join("data")));

    let trimmed = runtime.trim_voice_sample(&sample.path, 1.0, 1.5).unwrap();
    assert!((trimmed.seconds - 0.5).abs() < 1e-9);
    assert_ne!(trimmed.path, sample.path);
    let kept = izwi_audio::load_for_asr(&trimmed.path).unwrap();
    assert!(
        kept.iter().all(|s| (s - 0.5).abs() < 1e-3),
        "only the loud second's half"
    );
    // The recording itself is left as it was.
    assert!((runtime.read_voice_sample(&sample.path).unwrap().seconds - 2.0).abs() < 1e-9);

    let err = runtime
        .trim_voice_sample(&sample.path, 1.5, 3.0)
        .unwrap_err();
    assert!(err.to_string().contains("cannot keep"), "{err}");
}

#[tokio::test]
async fn a_recording_stops_at_the_longest_a_clone_takes() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let (tx, rx) = mpsc::unbounded_channel();
    for _ in 0..70 {
        tx.send(Ok(vec![0.1f32; 16_000])).unwrap();
    }
    // The sender stays open, as a microphone does: the limit ends it.
    let sample = runtime.record_voice_sample(rx, |_| {}).await.unwrap();
    assert!((sample.seconds - izwi_runtime::MAX_REFERENCE_SECONDS).abs() < 1e-9);
    drop(tx);
}

#[tokio::test]
async fn whisper_hears_a_sample_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let jfk = asset("speech/jfk.wav");
    let none = runtime.transcribe_voice_sample(&jfk).await.unwrap();
    assert_eq!(none.text, None);
    assert!(matches!(none.source, TranscriptSource::Missing { .. }));

    runtime
        .import_model(&asset("models/whisper-tiny.en"), Some("tiny"))
        .unwrap();
    let heard = runtime.transcribe_voice_sample(&jfk).await.unwrap();
    assert_eq!(
        heard.source,
        TranscriptSource::Whisper {
            model_id: "local/tiny".into()
        }
    );
    let text = heard.text.unwrap().to_lowercase();
    assert!(text.contains("ask not what your country"), "{text}");
}

#[tokio::test]
async fn a_file_at_its_own_rate_trims_to_its_whole_length() {
    // 48,001 samples at 48 kHz read as 1.00002 s; resampled to 16 kHz they are 1.0 s.
    // Keeping up to the length shown (the end handle left alone) must work.
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let file = dir.path().join("dropped.wav");
    let tone: Vec<f32> = (0..48_001)
        .map(|n| 0.3 * (2.0 * std::f32::consts::PI * 200.0 * n as f32 / 48_000.0).sin())
        .collect();
    izwi_runtime::write_wav(&file, &tone, 48_000).unwrap();
    let sample = runtime.read_voice_sample(&file).unwrap();
    assert!(sample.seconds > 1.0);
    let kept = runtime
        .trim_voice_sample(&file, 0.25, sample.seconds)
        .unwrap();
    assert!((kept.seconds - 0.75).abs() < 1e-3, "{}", kept.seconds);
}
