//! Dictation as the Dictate screen and the shortcut run it, through a real microphone:
//! a PulseAudio server of the test's own (izwi-test-support's `pulse`) is the system's
//! microphone, jfk.wav is played into it, and Whisper tiny.en hears it. Partial text
//! comes before final text; stopping ends it with `Stopped`, which holds what was said,
//! saved to the history as a transcript with its recording. One test in this file: it
//! points the process's audio at its PulseAudio.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use izwi_core::word_errors::{word_errors, words};
use izwi_desktop::commands::dictate::DictateEvent;
use izwi_desktop::state::AppState;
use izwi_runtime::{JobDetail, JobStatus, NoEvents, Runtime, RuntimeConfig};
use izwi_test_support::pulse::{PulseAudio, MIC_SINK};
use izwi_test_support::{asset, install_vad, wait_for};

const SAID: &str =
    "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";

#[tokio::test(flavor = "multi_thread")]
async fn dictation_from_the_microphone_is_shown_live_and_saved() {
    let pulse = PulseAudio::start();
    for (key, value) in pulse.env() {
        std::env::set_var(key, value);
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    install_vad(&izwi_runtime::vad_path(&data));
    let mut config = RuntimeConfig::new(data);
    config.hf_cache_dir = Some(dir.path().join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    let state = AppState::new(runtime, Arc::default(), vec![], Box::new(|_| {}));
    let tiny = state
        .runtime
        .import_model(&asset("models/whisper-tiny.en"), None)
        .unwrap()
        .id;

    let seen: Arc<Mutex<Vec<DictateEvent>>> = Arc::default();
    let into = seen.clone();
    let events = Arc::new(move |e| into.lock().unwrap().push(e));
    state
        .start_dictation(Some(tiny.clone()), Some("en".into()), None, events.clone())
        .await
        .unwrap();
    let minute = Duration::from_secs(60);
    let listening = wait_for(&seen, minute, |e| {
        matches!(e, DictateEvent::Listening { .. })
    })
    .await;
    assert!(state.dictating());
    let busy = state.start_dictation(Some(tiny), None, None, events).await;
    assert!(busy.is_err(), "one dictation at a time");
    let DictateEvent::Listening {
        job_id: running, ..
    } = &listening
    else {
        unreachable!()
    };
    let refused = state
        .runtime
        .delete_job(*running)
        .await
        .map_err(|e| e.to_string());
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("still under way")),
        "a dictation under way keeps its job and recording: {refused:?}"
    );

    let mic = tokio::task::spawn_blocking(move || {
        pulse.play(MIC_SINK, &asset("speech/jfk.wav"));
        pulse
    });
    let _pulse = mic.await.unwrap();
    assert!(state.stop_dictation());
    let stopped = wait_for(&seen, minute, |e| matches!(e, DictateEvent::Stopped { .. })).await;
    assert!(!state.dictating());
    assert!(!state.stop_dictation(), "nothing left to stop");

    let DictateEvent::Stopped {
        job_id: Some(job_id),
        text,
        error: None,
    } = stopped
    else {
        panic!("{stopped:?}")
    };
    let DictateEvent::Listening {
        job_id: started, ..
    } = listening
    else {
        unreachable!()
    };
    assert_eq!(started, job_id);
    let errors = word_errors(&words(SAID), &words(&text));
    assert!(errors <= 2, "{errors} errors: {text}");
    // Text is seen before it is confirmed, and the final pieces make the whole.
    let events = seen.lock().unwrap().clone();
    let first_partial = events
        .iter()
        .position(|e| matches!(e, DictateEvent::Partial { .. }));
    let first_final = events
        .iter()
        .position(|e| matches!(e, DictateEvent::Final { .. }));
    assert!(
        first_partial < first_final && first_partial.is_some(),
        "{events:?}"
    );
    let finals: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            DictateEvent::Final { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finals.join(" "), text);

    // Saved as a transcript with its recording.
    let JobDetail::Transcript(detail) = state.runtime.job_detail(job_id).await.unwrap() else {
        panic!("a transcription job")
    };
    assert_eq!(detail.job.status, JobStatus::Done);
    let segments: Vec<&str> = detail.segments.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(segments.join(" "), text);
    let audio = detail.transcript.unwrap().audio_path.expect("a recording");
    let recorded = izwi_runtime::load_for_asr(state.runtime.data_dir().join(audio)).unwrap();
    // All of jfk.wav's 11 s (less what the device still held when it was stopped).
    assert!(recorded.len() >= 10 * 16_000, "{}", recorded.len());
}
