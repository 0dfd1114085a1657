//! LFM2-Audio through the runtime, on the tiny random-weight checkpoint of izwi-core's
//! parity tests: imported, loaded once and shared by the jobs that use it; a
//! transcription job writes the text the reference's ASR turn decodes to; what it
//! cannot do is refused by name.

mod common;

use common::{config, open_recording};
use izwi_core::models::lfm2_audio::model::MAX_TRANSCRIPT_TOKENS;
use izwi_core::models::lfm2_audio::ChatLayout;
use izwi_runtime::{Event, JobStatus, Runtime, TranscribeRequest};
use izwi_test_support::fixtures::{
    lfm2_audio_reference_asr_tokens, lfm2_audio_reference_speech, lfm2_audio_tiny,
};

/// The text of the reference ASR turn: its text tokens, decoded.
fn reference_transcript() -> String {
    let tokens = lfm2_audio_reference_asr_tokens();
    assert!(tokens.len() < MAX_TRANSCRIPT_TOKENS);
    let layout = ChatLayout::from_dir(&lfm2_audio_tiny()).unwrap();
    layout.decode(&tokens).unwrap().trim().to_string()
}

async fn text_of(runtime: &Runtime, request: TranscribeRequest) -> String {
    let job = runtime.transcribe(request).await.unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let record = runtime.transcript_for_job(job.id).await.unwrap().unwrap();
    let (_, segments) = runtime.transcript(record.id).await.unwrap();
    segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcription_writes_the_reference_asr_turn_s_text() {
    let dir = tempfile::tempdir().unwrap();
    let wav = lfm2_audio_reference_speech(&dir.path().join("speech.wav"));
    let (runtime, events) = open_recording(config(dir.path())).await;
    let model = runtime
        .import_model(&lfm2_audio_tiny(), Some("lfm2-audio"))
        .unwrap();
    let want = reference_transcript();
    assert!(!want.is_empty(), "the reference turn wrote text");
    for _ in 0..2 {
        let request = TranscribeRequest {
            timestamps: false,
            ..TranscribeRequest::new(&wav, &model.id)
        };
        assert_eq!(text_of(&runtime, request).await, want);
    }
    // Loaded once, kept for the second job.
    let loads = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::ModelLoaded { .. }))
        .count();
    assert_eq!(loads, 1);
    assert_eq!(runtime.loaded_models().len(), 1);

    // Refused by name before a job is made.
    let refused = [
        (
            TranscribeRequest {
                word_timestamps: true,
                ..TranscribeRequest::new(&wav, &model.id)
            },
            "word timestamps",
        ),
        (
            TranscribeRequest {
                beam_size: 5,
                ..TranscribeRequest::new(&wav, &model.id)
            },
            "beam size",
        ),
        (
            TranscribeRequest {
                language: Some("de".into()),
                ..TranscribeRequest::new(&wav, &model.id)
            },
            "take a language",
        ),
    ];
    for (request, why) in refused {
        let error = runtime.transcribe(request).await.unwrap_err().to_string();
        assert!(error.contains(why), "{error}");
    }
    let jobs = runtime
        .jobs(&izwi_runtime::JobFilter::default())
        .await
        .unwrap();
    assert_eq!(jobs.len(), 2);
    runtime.shutdown().await;
}
