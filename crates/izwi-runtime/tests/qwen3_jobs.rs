//! Speak jobs on one Qwen3-TTS model share it: the model manager loads it once and
//! keeps it, so concurrent jobs' utterances go to its one engine together, and each
//! job's audio is what it would be alone (seeded). The tiny random checkpoint of
//! izwi-core's fixtures stands in for real weights.

mod common;

use std::path::{Path, PathBuf};

use izwi_runtime::{Event, JobStatus, Qwen3SpeakRequest, Runtime};

fn checkpoint() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/qwen3-tts-tiny")
        .display()
        .to_string()
}

fn request(text: &str, seed: u64, output: &Path) -> Qwen3SpeakRequest {
    Qwen3SpeakRequest {
        voice: checkpoint(),
        text: text.into(),
        language: Some("English".into()),
        seed: Some(seed),
        output: Some(output.to_path_buf()),
        ..Qwen3SpeakRequest::default()
    }
}

async fn finish(runtime: &Runtime, id: i64) {
    let job = runtime.wait_job(id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
}

/// A WAV's bytes: equal files are equal audio.
fn samples(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    // At least the two 80 ms frames of 16-bit samples the model must say.
    assert!(bytes.len() > 44 + 2 * 1920 * 2, "{} bytes", bytes.len());
    bytes
}

#[tokio::test]
async fn concurrent_jobs_share_one_loaded_model_and_say_what_they_say_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events) = common::open_recording(common::config(dir.path())).await;
    let texts = [
        ("Good morning, everyone.", 11),
        ("The quick brown fox jumps over the lazy dog.", 12),
    ];
    let mut alone = Vec::new();
    for (i, (text, seed)) in texts.iter().enumerate() {
        let out = dir.path().join(format!("alone-{i}.wav"));
        let job = runtime
            .speak_qwen3(request(text, *seed, &out))
            .await
            .unwrap();
        finish(&runtime, job.id).await;
        alone.push(samples(&out));
    }
    // Both queued before either is awaited: they run at once, on the model's one engine.
    let mut jobs = Vec::new();
    for (i, (text, seed)) in texts.iter().enumerate() {
        let out = dir.path().join(format!("together-{i}.wav"));
        jobs.push((
            runtime
                .speak_qwen3(request(text, *seed, &out))
                .await
                .unwrap(),
            out,
        ));
    }
    for (i, (job, out)) in jobs.iter().enumerate() {
        finish(&runtime, job.id).await;
        assert!(
            samples(out) == alone[i],
            "line {i} differs when spoken with another"
        );
    }
    let loads = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::ModelLoaded { .. }))
        .count();
    assert_eq!(loads, 1, "four jobs, one load");
    let loaded = runtime.loaded_models();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0].id, checkpoint());
    assert!(loaded[0].bytes > 0);
}

/// A copy of the fixture whose config.json says it is a VoiceDesign checkpoint.
fn voice_design_copy(dir: &Path) -> PathBuf {
    let to = dir.join("voice_design");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(checkpoint())
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    let config = to.join("config.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["tts_model_type"] = "voice_design".into();
    std::fs::write(&config, json.to_string()).unwrap();
    to
}

#[tokio::test]
async fn saving_a_voice_s_settings_keeps_what_makes_a_qwen3_voice() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let design = voice_design_copy(dir.path());
    let model = runtime.import_model(&design, Some("design")).unwrap();
    let voice = runtime
        .design_voice("Calm", &model.id, "a calm, low voice")
        .await
        .unwrap();
    // What the desktop's settings form sends: Piper's fields only.
    let settings = izwi_runtime::VoiceSettings {
        speed: 1.2,
        ..izwi_runtime::VoiceSettings::default()
    };
    runtime
        .update_voice_settings(voice.id, settings)
        .await
        .unwrap();
    let saved = runtime
        .list_voices()
        .await
        .unwrap()
        .into_iter()
        .find(|v| v.id == voice.id)
        .unwrap();
    assert_eq!(saved.settings.speed, 1.2);
    assert_eq!(
        saved.settings.instructions.as_deref(),
        Some("a calm, low voice")
    );
}

#[tokio::test]
async fn a_qwen3_speak_job_sends_its_audio_piece_by_piece_as_it_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events) = common::open_recording(common::config(dir.path())).await;
    let out = dir.path().join("pieces.wav");
    let text = "The quick brown fox jumps over the lazy dog, and then it runs away.";
    let job = runtime.speak_qwen3(request(text, 7, &out)).await.unwrap();
    finish(&runtime, job.id).await;
    let events = events.lock().unwrap().clone();
    let finished_at = events
        .iter()
        .position(|e| matches!(e, Event::JobFinished { job_id, .. } if *job_id == job.id))
        .unwrap();
    let mut joined = Vec::new();
    let mut pieces = 0;
    for (at, event) in events.iter().enumerate() {
        if let Event::SpeechAudio {
            job_id,
            index,
            gap_before,
            samples,
            ..
        } = event
        {
            assert_eq!(*job_id, job.id);
            assert_eq!(*index, pieces, "pieces come in order");
            assert_eq!(*gap_before, 0.0, "one utterance has no pauses");
            assert!(at < finished_at, "a piece came after the job ended");
            joined.extend_from_slice(samples);
            pieces += 1;
        }
    }
    assert!(pieces >= 2, "{pieces} piece(s): not streamed");
    let wav = std::fs::read(&out).unwrap();
    let (_, data) = izwi_runtime::pcm16_wav_data(&wav).unwrap();
    assert!(
        izwi_runtime::pcm16_bytes(&joined) == data,
        "the pieces are not the saved WAV"
    );
    let done = runtime.wait_job(job.id).await.unwrap();
    assert!(
        done.metrics.first_audio_ms.is_some(),
        "no time to first audio: {:?}",
        done.metrics
    );
}

#[tokio::test]
async fn a_qwen3_voice_speaks_a_file_sentence_by_sentence_with_a_pause_between() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events) = common::open_recording(common::config(dir.path())).await;
    let file = dir.path().join("chapter.txt");
    std::fs::write(
        &file,
        "Good morning, everyone.\n\nThe fox jumps over the dog.\n",
    )
    .unwrap();
    let out = dir.path().join("chapter.wav");
    let job = runtime
        .speak_file(izwi_runtime::SpeakFileRequest {
            voice: checkpoint(),
            file: file.clone(),
            output: Some(out.clone()),
            replace: false,
            speed: None,
        })
        .await
        .unwrap();
    finish(&runtime, job.id).await;
    let events = events.lock().unwrap().clone();
    let mut joined = Vec::new();
    let mut pauses = 0;
    let mut rate = 0;
    for event in &events {
        if let Event::SpeechAudio {
            job_id,
            sample_rate,
            gap_before,
            samples,
            ..
        } = event
        {
            assert_eq!(*job_id, job.id);
            rate = *sample_rate;
            if *gap_before > 0.0 {
                pauses += 1;
                joined.extend(vec![0f32; (*gap_before * rate as f32) as usize]);
            }
            joined.extend_from_slice(samples);
        }
    }
    assert_eq!(pauses, 1, "one pause, between the two sentences");
    // Progress counts the file's sentences, counted before it is read out.
    let progress = progress_of(&events, job.id);
    assert_eq!(progress, [(1, 2), (2, 2)]);
    let wav = std::fs::read(&out).unwrap();
    let (wav_rate, data) = izwi_runtime::pcm16_wav_data(&wav).unwrap();
    assert_eq!(wav_rate, rate);
    assert!(
        izwi_runtime::pcm16_bytes(&joined) == data,
        "the pieces and their pauses are not the saved WAV"
    );
    let refused = runtime
        .speak_file(izwi_runtime::SpeakFileRequest {
            voice: checkpoint(),
            file,
            output: None,
            replace: false,
            speed: Some(1.2),
        })
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("no speed setting"),
        "{refused}"
    );
}

/// The progress `job` reported, as (done, total) pairs.
fn progress_of(events: &[Event], job: i64) -> Vec<(usize, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::JobProgress {
                job_id,
                windows_done,
                windows_total,
                ..
            } if *job_id == job => Some((*windows_done, *windows_total)),
            _ => None,
        })
        .collect()
}

/// A copy of the tiny checkpoint in `dir/name` saying `max_new_tokens` frames at most,
/// of the variant `kind`.
fn limited_copy(dir: &Path, name: &str, kind: &str, max_new_tokens: usize) -> PathBuf {
    let to = dir.join(name);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(checkpoint())
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    let patch = |file: &str, key: &str, value: serde_json::Value| {
        let path = to.join(file);
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        json[key] = value;
        std::fs::write(&path, json.to_string()).unwrap();
    };
    patch("config.json", "tts_model_type", kind.into());
    patch(
        "generation_config.json",
        "max_new_tokens",
        max_new_tokens.into(),
    );
    to
}

#[tokio::test]
async fn an_utterance_cut_by_the_frame_limit_fails_its_job_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _) = common::open_recording(common::config(dir.path())).await;
    let short = limited_copy(dir.path(), "short", "base", 2);
    let out = dir.path().join("cut.wav");
    let job = runtime
        .speak_qwen3(Qwen3SpeakRequest {
            voice: short.display().to_string(),
            ..request("The quick brown fox jumps over the lazy dog.", 7, &out)
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    let error = job.error.unwrap();
    assert!(error.contains("limit of 2 frames"), "{error}");
    assert!(!out.exists(), "no WAV of a text said in part");
}

#[tokio::test]
async fn a_long_text_in_a_whole_text_voice_is_said_sentence_by_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events) = common::open_recording(common::config(dir.path())).await;
    let design = limited_copy(dir.path(), "design", "voice_design", 8192);
    let sentence = "The quick brown fox jumps over the lazy dog near the river bank today.";
    // Eight sentences, over the 500 characters said as one utterance.
    let text = [sentence; 8].join(" ");
    assert!(text.len() > 500);
    let out = dir.path().join("long.wav");
    let job = runtime
        .speak_qwen3(Qwen3SpeakRequest {
            voice: design.display().to_string(),
            instructions: Some("a calm voice".into()),
            ..request(&text, 7, &out)
        })
        .await
        .unwrap();
    finish(&runtime, job.id).await;
    let pauses = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(e, Event::SpeechAudio { job_id, gap_before, .. }
                if *job_id == job.id && *gap_before > 0.0)
        })
        .count();
    assert_eq!(pauses, 7, "a pause before each sentence after the first");
    // Progress by sentence, as a Piper voice's.
    let progress = progress_of(&events.lock().unwrap(), job.id);
    assert_eq!(progress, (1..=8).map(|n| (n, 8)).collect::<Vec<_>>());

    // A short text in the same voice stays one utterance.
    let out = dir.path().join("short.wav");
    let job = runtime
        .speak_qwen3(Qwen3SpeakRequest {
            voice: design.display().to_string(),
            instructions: Some("a calm voice".into()),
            ..request("One sentence. And another.", 7, &out)
        })
        .await
        .unwrap();
    finish(&runtime, job.id).await;
    assert!(!events.lock().unwrap().iter().any(|e| {
        matches!(e, Event::SpeechAudio { job_id, gap_before, .. }
            if *job_id == job.id && *gap_before > 0.0)
    }));
}
