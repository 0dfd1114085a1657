//! LFM2-Audio's built-in voices through the runtime, on the tiny random-weight
//! checkpoint: imported, its four voices in the library, a speak job's WAV exactly what
//! the model's own `speak` gives with the same seed, jobs at once on one loaded model,
//! a batch, a turn cut by the step limit failing its job, and what it cannot honour
//! refused by name before a job is made. The words
//! are noise (random weights): structure and determinism only. Most sampled turns of
//! the random model never reach an end-of-audio frame; the texts, voices and seeds here
//! are ones with which they do (found by trying).

mod common;

use std::path::Path;

use common::{config, open_recording};
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::lfm2_audio::{AudioSampling, Lfm2Audio, Lfm2Voice};
use izwi_core::Device;
use izwi_runtime::{
    read_manifest, Event, JobStatus, Qwen3SpeakRequest, Runtime, SpeakBatchRequest, SpeakRequest,
    VoiceSource, LFM2_SPEAK_MAX_STEPS,
};
use izwi_test_support::fixtures::lfm2_audio_tiny;

/// The tiny checkpoint's samples for `text` in `voice` with `seed`, from the model
/// itself.
async fn said_directly(text: &str, voice: Lfm2Voice, seed: u64) -> Vec<f32> {
    let model = Lfm2Audio::from_dir(
        &lfm2_audio_tiny(),
        &Device::Cpu,
        EngineCoreConfig::default(),
    )
    .expect("model loads");
    let sampling = AudioSampling {
        seed: Some(seed),
        ..AudioSampling::speech()
    };
    let mut audio = Vec::new();
    let turn = model
        .speak(text, voice, &sampling, LFM2_SPEAK_MAX_STEPS, |a| {
            audio.extend(a)
        })
        .await
        .expect("speaks");
    assert!(turn.ended, "the turn ends within the step limit");
    audio
}

/// A WAV's samples and rate.
fn wav(path: &Path) -> (Vec<f32>, u32) {
    let audio = izwi_audio::decode_file(path).unwrap();
    (audio.to_mono(), audio.sample_rate)
}

async fn done(runtime: &Runtime, id: i64) -> izwi_runtime::Job {
    let job = runtime.wait_job(id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lfm2_audio_voices_speak() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events) = open_recording(config(dir.path())).await;
    let model = runtime
        .import_model(&lfm2_audio_tiny(), Some("lfm2-audio"))
        .unwrap();

    // Its four voices, made when the library is first listed, once.
    let voices = runtime.list_voices().await.unwrap();
    let ours: Vec<_> = voices.iter().filter(|v| v.model_id == model.id).collect();
    let mut speakers: Vec<_> = ours
        .iter()
        .map(|v| v.settings.speaker_name.clone().unwrap())
        .collect();
    speakers.sort();
    assert_eq!(speakers, ["uk-female", "uk-male", "us-female", "us-male"]);
    assert!(ours
        .iter()
        .all(|v| v.source == VoiceSource::Preset && v.installed));
    assert!(ours.iter().any(|v| v.name == "UK female"));
    assert_eq!(runtime.list_voices().await.unwrap().len(), voices.len());
    let uk_female = ours.iter().find(|v| v.name == "UK female").unwrap();
    // A preset goes with its model.
    let refused = runtime.delete_voice(uk_female.id).await.unwrap_err();
    assert!(refused.to_string().contains("preset"), "{refused}");

    // A seeded job writes, at 24 kHz, what the model says with that seed.
    let text = "Hello, how are you today?";
    let out = dir.path().join("seeded.wav");
    let job = runtime
        .speak_qwen3(Qwen3SpeakRequest {
            voice: "UK male".into(),
            text: text.into(),
            seed: Some(2),
            output: Some(out.clone()),
            ..Qwen3SpeakRequest::default()
        })
        .await
        .unwrap();
    let job = done(&runtime, job.id).await;
    assert_eq!(job.model_id.as_deref(), Some(model.id.as_str()));
    let (samples, rate) = wav(&out);
    assert_eq!(rate, 24_000);
    let direct = dir.path().join("direct.wav");
    izwi_runtime::write_wav(
        &direct,
        &said_directly(text, Lfm2Voice::UkMale, 2).await,
        24_000,
    )
    .unwrap();
    assert!(!samples.is_empty());
    assert_eq!(samples, wav(&direct).0);
    // Each piece streamed as it was decoded, and the job's progress reported.
    let streamed: usize = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::SpeechAudio {
                job_id, samples, ..
            } if *job_id == job.id => Some(samples.len()),
            _ => None,
        })
        .sum();
    assert_eq!(streamed, samples.len());
    assert!(events.lock().unwrap().iter().any(
        |e| matches!(e, Event::JobProgress { job_id, progress, .. } if *job_id == job.id && *progress == 1.0)
    ));

    // The model named, with a speaker; two jobs at once share the model already loaded.
    let folder = lfm2_audio_tiny().display().to_string();
    let mut jobs = Vec::new();
    for (i, (text, seed)) in [("Hello, how are you today?", 2), ("Hi.", 4)]
        .into_iter()
        .enumerate()
    {
        let request = Qwen3SpeakRequest {
            voice: model.id.clone(),
            text: text.into(),
            speaker: Some("uk-male".into()),
            seed: Some(seed),
            output: Some(dir.path().join(format!("at-once-{i}.wav"))),
            ..Qwen3SpeakRequest::default()
        };
        jobs.push(runtime.speak_qwen3(request).await.unwrap());
    }
    for job in jobs {
        let job = done(&runtime, job.id).await;
        let (samples, rate) = wav(Path::new(job.output.as_deref().unwrap()));
        assert_eq!(rate, 24_000);
        assert!(!samples.is_empty());
    }
    let loads = |events: &common::Events| {
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::ModelLoaded { .. }))
            .count()
    };
    assert_eq!(loads(&events), 1, "one load for every job");

    // Refused by name before a job is made.
    let before = runtime.jobs(&Default::default()).await.unwrap().len();
    let in_voice = |voice: &str| Qwen3SpeakRequest {
        voice: voice.into(),
        text: "Hi.".into(),
        ..Qwen3SpeakRequest::default()
    };
    let refusals = [
        (
            Qwen3SpeakRequest {
                instructions: Some("slowly".into()),
                ..in_voice("UK male")
            },
            "instructions",
        ),
        (
            Qwen3SpeakRequest {
                language: Some("english".into()),
                ..in_voice("UK male")
            },
            "language",
        ),
        (
            Qwen3SpeakRequest {
                reference_audio: Some(out.clone()),
                ..in_voice("UK male")
            },
            "voice sample",
        ),
        (
            Qwen3SpeakRequest {
                speaker: Some("scottish".into()),
                ..in_voice(&folder)
            },
            "us-male, us-female, uk-male, uk-female",
        ),
        // The folder is no library voice (the model's id would name its first).
        (in_voice(&folder), "name one of its voices"),
    ];
    for (request, named) in refusals {
        let err = runtime.speak_qwen3(request).await.unwrap_err().to_string();
        assert!(err.contains(named), "{named}: {err}");
    }
    let err = runtime
        .speak(SpeakRequest {
            voice: "UK male".into(),
            text: "Hi.".into(),
            output: None,
            replace: false,
            speed: Some(1.5),
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("speed"), "{err}");
    let err = runtime
        .preview_voice("UK male", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("LFM2-Audio"), "{err}");
    assert_eq!(
        runtime.jobs(&Default::default()).await.unwrap().len(),
        before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_in_an_lfm2_audio_voice_exports_a_wav_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    runtime
        .import_model(&lfm2_audio_tiny(), Some("lfm2-audio"))
        .unwrap();
    let out = dir.path().join("batch");
    // Take 0 says every line with seed 0; the third line's two sentences are two turns.
    let lines = ["Goodbye.", "Tea?", "Goodbye. Tea?"];
    let job = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "US male".into(),
            lines: lines.iter().map(|l| l.to_string()).collect(),
            output_dir: out.clone(),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap();
    done(&runtime, job.id).await;
    let rows = read_manifest(&out.join("manifest.csv")).unwrap();
    assert_eq!(rows.len(), 3);
    for (row, line) in rows.iter().zip(lines) {
        assert_eq!(row.text, line);
        let (samples, rate) = wav(&out.join(&row.file));
        assert_eq!(rate, 24_000);
        assert!(!samples.is_empty());
        assert!((row.seconds - samples.len() as f64 / 24_000.0).abs() < 1e-3);
    }
    // A one-sentence line is the model's turn with the take's seed.
    let (first, _) = wav(&out.join(&rows[0].file));
    let direct = dir.path().join("direct.wav");
    izwi_runtime::write_wav(
        &direct,
        &said_directly(lines[0], Lfm2Voice::UsMale, rows[0].seed).await,
        24_000,
    )
    .unwrap();
    assert_eq!(first, wav(&direct).0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_reaches_the_step_limit_fails_its_job_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = open_recording(config(dir.path())).await;
    runtime
        .import_model(&lfm2_audio_tiny(), Some("lfm2-audio"))
        .unwrap();
    // With this seed the random model never writes its end-of-audio frame.
    let job = runtime
        .speak_qwen3(Qwen3SpeakRequest {
            voice: "UK female".into(),
            text: "Good morning.".into(),
            seed: Some(3),
            output: Some(dir.path().join("cut.wav")),
            ..Qwen3SpeakRequest::default()
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    let error = job.error.unwrap();
    assert!(
        error.contains(&format!("limit of {LFM2_SPEAK_MAX_STEPS} steps"))
            && error.contains("Good morning."),
        "{error}"
    );
}

/// Two LFM2-Audio models listed for the first time together: eight voices, each name
/// its own (the second model's are told apart by its name), so each can be named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_models_voices_have_names_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _events) = open_recording(config(dir.path())).await;
    for name in ["lfm2-audio", "lfm2-audio-2"] {
        runtime
            .import_model(&lfm2_audio_tiny(), Some(name))
            .unwrap();
    }
    let voices = runtime.list_voices().await.unwrap();
    let mut names: Vec<_> = voices.iter().map(|v| v.name.to_lowercase()).collect();
    assert_eq!(names.len(), 8, "{names:?}");
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 8, "names repeat: {names:?}");
}
