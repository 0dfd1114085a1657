//! The recordings the UI's browser tests replay (ui/tests/fixtures/recorded, written by
//! tests/record.rs) must still be what the commands return: each deserializes into the
//! Rust type of its command, so a changed type makes this fail until they are recorded
//! again (`cargo test -p izwi-desktop --test record -- --ignored`).

use std::path::{Path, PathBuf};

use izwi_desktop::commands::history::TranscriptView;
use izwi_desktop::commands::settings::Settings;
use izwi_desktop::commands::transcribe::QueuedFiles;
use izwi_desktop::error::AppError;
use izwi_desktop::speech_audio::SpeechAudioFrame;
use izwi_runtime::{Event, Job, JobKind, ModelInfo, SearchHit, SpeechClip, VoiceInfo};
use serde::de::DeserializeOwned;
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/tests/fixtures/recorded")
}

fn read(name: &str) -> Value {
    let path = dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; record the fixtures again", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The `data` of a recorded `{command, args, result: {status: "ok", data}}`.
fn ok<T: DeserializeOwned>(name: &str) -> T {
    let value = read(name);
    assert_eq!(value["result"]["status"], "ok", "{name}");
    serde_json::from_value(value["result"]["data"].clone())
        .unwrap_or_else(|e| panic!("{name}.json no longer matches its Rust type: {e}"))
}

#[test]
fn recorded_command_results_match_the_types() {
    let models: Vec<ModelInfo> = ok("listModels");
    assert!(models.iter().any(|m| m.id == "local/tiny"));
    let settings: Settings = ok("getSettings");
    assert_eq!(settings.device, "cpu");
    let opened: Vec<String> = ok("takeOpenedFiles");
    assert_eq!(opened.len(), 1);
    let queued: QueuedFiles = ok("transcribeFiles");
    let jobs = queued.jobs;
    assert_eq!(jobs.len(), 1);
    let transcript: Option<TranscriptView> = ok("getTranscript");
    let transcript = transcript.expect("a transcript");
    assert_eq!(transcript.record.job_id, Some(jobs[0].id));
    for format in ["txt", "srt", "vtt", "json"] {
        let text: String = ok(&format!("exportTranscript_{format}"));
        assert!(text.to_lowercase().contains("country"), "{format}");
    }
    let hits: Vec<SearchHit> = ok("searchTranscripts");
    assert!(!hits.is_empty());
    let listed: Vec<Job> = ok("listJobs");
    assert!(listed.len() >= 3);
    let peaks: Vec<f32> = ok("audioPeaks");
    assert!(peaks.iter().all(|p| (0.0..=1.0).contains(p)));
}

#[test]
fn recorded_speech_matches_the_types() {
    let models: Vec<ModelInfo> = ok("listModels");
    assert!(models.iter().any(|m| m.id == "local/joe"));
    let voices: Vec<VoiceInfo> = ok("listVoices");
    assert_eq!(voices.len(), 1);
    assert!(voices[0].installed);
    let added: VoiceInfo = ok("addVoice");
    let renamed: VoiceInfo = ok("renameVoice");
    assert_eq!((renamed.id, renamed.name.as_str()), (added.id, "Narrator"));
    let updated: VoiceInfo = ok("updateVoiceSettings");
    assert_eq!(updated.id, added.id);
    let clip: SpeechClip = ok("previewVoice");
    assert!(clip.sample_rate > 0 && !clip.samples.is_empty());
    let spoken: Job = ok("speak");
    assert_eq!(spoken.kind, JobKind::Speak);
    let saved: String = ok("saveSpeech");
    assert!(saved.ends_with(".wav"));
    let batch: Job = ok("speakBatch");
    assert_eq!(batch.kind, JobKind::SpeakBatch);
    for name in ["readLines_txt", "readLines_csv"] {
        let lines: Vec<String> = ok(name);
        assert!(lines.len() >= 2, "{name}");
    }

    let events = |name: &str| -> Vec<Event> {
        read(name)["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| serde_json::from_value(e["payload"].clone()).unwrap())
            .collect()
    };
    let speech = events("events_speak");
    assert!(
        matches!(speech.last(), Some(Event::JobFinished { job_id, .. }) if *job_id == spoken.id)
    );
    let indexes: Vec<usize> = speech
        .iter()
        .filter_map(|e| match e {
            Event::SpeechAudio { index, samples, .. } if !samples.is_empty() => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [0, 1]);
    let lines: Vec<String> = ok("readLines_csv");
    let done = events("events_batch")
        .iter()
        .filter(|e| matches!(e, Event::BatchLineDone { job_id, .. } if *job_id == batch.id))
        .count();
    assert_eq!(done, lines.len());
}

#[test]
fn recorded_events_and_errors_match_the_types() {
    let stream = read("events_jfk");
    let events: Vec<Event> = stream["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| serde_json::from_value(e["payload"].clone()).unwrap())
        .collect();
    assert!(matches!(events.first(), Some(Event::JobQueued { .. })));
    assert!(matches!(events.last(), Some(Event::JobFinished { .. })));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::JobSegments { .. })));

    let errors = read("errors");
    for e in errors.as_array().unwrap() {
        let error: AppError = serde_json::from_value(e["result"]["error"].clone()).unwrap();
        assert!(!error.message.is_empty());
    }
}

/// The page decodes speech audio frames as src-tauri encodes them: this writes, from the
/// first sentence of the recorded speak job, the frame the app sends for it
/// (speech_audio_frame.json, which ui/tests/unit/speechAudio.test.ts decodes), and fails
/// when the committed file was different: commit the rewritten file.
#[test]
fn the_speech_audio_frame_fixture_is_what_the_app_sends() {
    let last = read("events_speak")["events"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|e| serde_json::from_value::<Event>(e["payload"].clone()).unwrap())
        .find_map(|e| match e {
            Event::SpeechAudio {
                job_id,
                index,
                total,
                sample_rate,
                gap_before,
                samples,
            } => Some((job_id, index, total, sample_rate, gap_before, samples)),
            _ => None,
        })
        .expect("the recorded speak job sent audio");
    let (job_id, index, total, sample_rate, gap_before, samples) = last;
    let samples = &samples[samples.len() / 2..][..16];
    let frame = SpeechAudioFrame::new(job_id, index, total, sample_rate, gap_before, samples);
    let fixture = serde_json::json!({
        "about": "the frame src-tauri/src/speech_audio.rs makes of `event` (16 samples from the middle of the recorded speak job's last sentence)",
        "event": {
            "job_id": job_id,
            "index": index,
            "total": total,
            "sample_rate": sample_rate,
            "gap_before": gap_before,
            "samples": samples,
        },
        "frame": frame.bytes(),
    });
    let path = dir().join("speech_audio_frame.json");
    let fresh = serde_json::to_string(&fixture).unwrap() + "\n";
    if std::fs::read_to_string(&path).unwrap_or_default() != fresh {
        std::fs::write(&path, fresh).unwrap();
        panic!(
            "{} was stale and has been rewritten: commit it",
            path.display()
        );
    }
}
