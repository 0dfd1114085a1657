//! History on a real store: each job kind's detail (a transcript; a speak job's text,
//! voice and WAV; a batch's lines and files, read from its manifest), and corrected
//! segments that exports and search follow. The speech tests use the Piper voice
//! en_US-joe-medium (scripts/fetch-assets.sh) and Debian's espeak-ng.

mod common;

use std::path::{Path, PathBuf};

use common::open_recording;
use izwi_runtime::{
    BatchLineStatus, ExportFormat, JobDetail, JobStatus, Runtime, SpeakBatchRequest, SpeakRequest,
    VoiceSettings, MANIFEST_NAME,
};
use izwi_store::{JobKind, JobMetrics, NewJob, NewTranscript, SegmentRecord, Store};
use izwi_test_support::asset;

/// A runtime on `dir`, and a second store on its data dir to write rows as another
/// process (the CLI) would.
async fn open(dir: &Path) -> (Runtime, Store) {
    let (runtime, _) = open_recording(common::config(dir)).await;
    let store = Store::open(&dir.join("data")).await.unwrap();
    (runtime, store)
}

fn segment(idx: i64, start: f64, text: &str) -> SegmentRecord {
    SegmentRecord {
        idx,
        start,
        end: start + 2.0,
        text: text.into(),
        original: None,
        words: Vec::new(),
    }
}

/// A finished transcription job with its transcript; returns (job id, transcript id).
async fn transcribed(store: &Store) -> (i64, i64) {
    let job = store
        .create_job(NewJob {
            kind: JobKind::Transcribe,
            model_id: Some("whisper-tiny".into()),
            input: "/talks/jfk.wav".into(),
            params: serde_json::json!({}),
        })
        .await
        .unwrap();
    store.start_job(job.id).await.unwrap();
    let transcript = store
        .save_transcript(
            NewTranscript {
                job_id: Some(job.id),
                title: "jfk.wav".into(),
                source_path: "/talks/jfk.wav".into(),
                language: Some("en".into()),
                duration: 6.0,
                ..Default::default()
            },
            &[
                segment(0, 0.0, "And so my fellow Americans,"),
                segment(1, 2.0, "ask not what your country can do for you,"),
                segment(2, 4.0, "ask what you can do for your contry."),
            ],
        )
        .await
        .unwrap();
    store
        .finish_job(job.id, None, &JobMetrics::default())
        .await
        .unwrap();
    (job.id, transcript)
}

#[tokio::test]
async fn a_transcription_job_shows_its_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, store) = open(dir.path()).await;
    let (job_id, transcript_id) = transcribed(&store).await;
    let JobDetail::Transcript(detail) = runtime.job_detail(job_id).await.unwrap() else {
        panic!("not a transcript");
    };
    assert_eq!(detail.job.id, job_id);
    assert_eq!(detail.transcript.unwrap().id, transcript_id);
    assert_eq!(detail.segments.len(), 3);

    // A job that made no transcript still has a detail, with none.
    let failed = store
        .create_job(NewJob {
            kind: JobKind::Transcribe,
            model_id: None,
            input: "/talks/broken.wav".into(),
            params: serde_json::json!({}),
        })
        .await
        .unwrap();
    let JobDetail::Transcript(detail) = runtime.job_detail(failed.id).await.unwrap() else {
        panic!("not a transcript");
    };
    assert_eq!((detail.transcript, detail.segments.len()), (None, 0));
    assert_eq!(
        runtime.job_detail(999).await.unwrap_err().to_string(),
        "job 999 does not exist"
    );
}

#[tokio::test]
async fn corrections_are_kept_beside_the_original_and_exports_and_search_use_them() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, store) = open(dir.path()).await;
    let (job_id, id) = transcribed(&store).await;

    let edited = runtime
        .edit_segment(id, 2, "  ask what you can do for your country.  ")
        .await
        .unwrap();
    assert_eq!(edited.text, "ask what you can do for your country.");
    assert_eq!(
        edited.original.as_deref(),
        Some("ask what you can do for your contry.")
    );

    let txt = runtime
        .export_transcript(id, ExportFormat::Txt)
        .await
        .unwrap();
    assert!(
        txt.contains("for your country.") && !txt.contains("contry"),
        "{txt}"
    );
    for format in [ExportFormat::Srt, ExportFormat::Vtt, ExportFormat::Json] {
        let text = runtime.export_transcript(id, format).await.unwrap();
        assert!(
            text.contains("your country.") && !text.contains("contry"),
            "{text}"
        );
    }
    let hits = runtime.search("country", 10).await.unwrap();
    assert!(hits.iter().any(|h| h.segment_idx == Some(2)), "{hits:?}");
    assert!(runtime.search("contry", 10).await.unwrap().is_empty());
    let JobDetail::Transcript(detail) = runtime.job_detail(job_id).await.unwrap() else {
        panic!("not a transcript");
    };
    assert_eq!(detail.segments[2], edited);

    let refused = runtime.edit_segment(id, 1, " \n ").await.unwrap_err();
    assert!(refused.to_string().contains("cannot be empty"), "{refused}");
    assert_eq!(runtime.transcript(id).await.unwrap().1[1].original, None);
    assert!(runtime.edit_segment(id, 9, "x").await.is_err());

    let reverted = runtime.revert_segment(id, 2).await.unwrap();
    assert_eq!(
        (reverted.text.as_str(), reverted.original),
        ("ask what you can do for your contry.", None)
    );
    let txt = runtime
        .export_transcript(id, ExportFormat::Txt)
        .await
        .unwrap();
    assert!(txt.contains("contry"), "{txt}");
}

#[tokio::test]
async fn a_speak_job_that_kept_an_excerpt_says_so() {
    // The shape of a speak job's row that keeps only the start of a long text.
    let dir = tempfile::tempdir().unwrap();
    let (runtime, store) = open(dir.path()).await;
    let job = store
        .create_job(NewJob {
            kind: JobKind::Speak,
            model_id: Some("local/joe".into()),
            input: "It was the best of times".into(),
            params: serde_json::json!({
                "voice": "local/joe", "chars": 5000, "file": null, "output": null, "speed": 0.9
            }),
        })
        .await
        .unwrap();
    let JobDetail::Speech(speech) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("not speech");
    };
    assert_eq!(speech.text, "It was the best of times");
    assert!(!speech.text_complete);
    assert_eq!((speech.audio_path, speech.audio_exists), (None, false));
    assert_eq!(speech.voice.name, None);
    assert_eq!(speech.voice.settings.speed, 0.9);
}

/// A runtime with joe imported and a voice "Joe slow" on it.
async fn open_with_joe(dir: &Path) -> Runtime {
    let (runtime, _) = open_recording(common::config(dir)).await;
    let joe = runtime
        .import_model(
            &asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
            Some("joe"),
        )
        .unwrap();
    runtime
        .add_voice(
            &joe.id,
            "Joe slow",
            VoiceSettings {
                speed: 0.8,
                pitch: -1.0,
                ..VoiceSettings::default()
            },
        )
        .await
        .unwrap();
    runtime
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speak_job_shows_its_text_voice_settings_and_recording() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = open_with_joe(dir.path()).await;
    let text = "Good morning. The kettle is on.";
    let job = runtime
        .speak(SpeakRequest {
            voice: "joe slow".into(),
            text: text.into(),
            output: None,
            replace: false,
            speed: Some(1.1),
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);

    let JobDetail::Speech(speech) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("not speech");
    };
    assert_eq!((speech.text.as_str(), speech.text_complete), (text, true));
    assert_eq!(speech.text_file, None);
    assert_eq!(speech.voice.requested, "joe slow");
    assert_eq!(speech.voice.name.as_deref(), Some("Joe slow"));
    assert_eq!(speech.voice.model_id.as_deref(), Some("local/joe"));
    assert_eq!(
        (speech.voice.settings.speed, speech.voice.settings.pitch),
        (1.1, -1.0)
    );
    assert_eq!(speech.voice.speed, Some(1.1));
    let audio = PathBuf::from(speech.audio_path.clone().unwrap());
    assert!(audio.starts_with(runtime.data_dir().join("audio")));
    assert!(speech.audio_exists);

    std::fs::remove_file(&audio).unwrap();
    let JobDetail::Speech(speech) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("not speech");
    };
    assert!(!speech.audio_exists);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_shows_each_line_with_its_file_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = open_with_joe(dir.path()).await;
    let out = dir.path().join("lines");
    let lines = ["One, two, three.", "Four.", "Five and \"six\"!"];
    let job = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines: lines.iter().map(|l| l.to_string()).collect(),
            output_dir: out.clone(),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);

    let JobDetail::Batch(batch) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("not a batch");
    };
    assert_eq!(batch.output_dir, out.display().to_string());
    assert_eq!(
        batch.manifest_path,
        Some(out.join(MANIFEST_NAME).display().to_string())
    );
    assert_eq!(batch.voice.name.as_deref(), Some("joe"));
    let shown: Vec<_> = batch
        .lines
        .iter()
        .map(|l| (l.line, l.text.as_deref().unwrap(), l.status))
        .collect();
    assert_eq!(
        shown,
        [
            (1, lines[0], BatchLineStatus::Made),
            (2, lines[1], BatchLineStatus::Made),
            (3, lines[2], BatchLineStatus::Made),
        ]
    );
    for line in &batch.lines {
        let file = PathBuf::from(line.file.as_deref().unwrap());
        assert_eq!(file, out.join(format!("{:03}.wav", line.line)));
        assert!(line.seconds.unwrap() > 0.2);
    }

    // As a batch cancelled after its first line would leave it, with one WAV moved away.
    let manifest = std::fs::read_to_string(out.join(MANIFEST_NAME)).unwrap();
    let first: Vec<&str> = manifest.lines().take(2).collect();
    std::fs::write(out.join(MANIFEST_NAME), first.join("\n") + "\n").unwrap();
    std::fs::remove_file(out.join("001.wav")).unwrap();
    let JobDetail::Batch(batch) = runtime.job_detail(job.id).await.unwrap() else {
        panic!("not a batch");
    };
    let statuses: Vec<_> = batch.lines.iter().map(|l| (l.line, l.status)).collect();
    assert_eq!(
        statuses,
        [
            (1, BatchLineStatus::Missing),
            (2, BatchLineStatus::NotMade),
            (3, BatchLineStatus::NotMade),
        ]
    );
    assert_eq!(batch.lines[1].file, None);

    // A manifest edited to point out of its folder is refused, not followed.
    std::fs::write(
        out.join(MANIFEST_NAME),
        "line,file,seconds,text\n1,../../secret.wav,1.0,x\n",
    )
    .unwrap();
    let refused = runtime.job_detail(job.id).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("is not line,file,seconds,text"),
        "{refused}"
    );
}
