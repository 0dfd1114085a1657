//! Records what the real commands return, and the events a real job emits, for the
//! UI's browser tests (ui/tests/fixtures/recorded/*.json). It drives the very command
//! code the app runs (the `AppState` methods behind each `#[tauri::command]`) on a real
//! runtime: the tiny.en model from scripts/fetch-assets.sh imported as `local/tiny`,
//! transcribing .assets/speech/jfk.wav; the Piper voice en_US-joe-medium imported as
//! `local/joe` for the voice library, a preview, a speak job (its sentences' audio as
//! they streamed) and a batch (needs espeak-ng).
//!
//!     cargo test -p izwi-desktop --test record -- --ignored
//!
//! Machine paths are replaced by plausible user paths (/home/user/...), so the files do
//! not change with the machine that recorded them. tests/fixtures.rs checks that the
//! committed files still deserialize into the Rust types.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use izwi_desktop::commands::transcribe::TranscribeOptions;
use izwi_desktop::state::AppState;
use izwi_runtime::{
    Event, ExportFormat, JobFilter, JobStatus, Runtime, RuntimeConfig, Task, VoiceSettings,
    MANIFEST_NAME,
};
use serde::Serialize;
use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn asset(rel: &str) -> PathBuf {
    let path = repo().join(".assets").join(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/fetch-assets.sh first",
        path.display()
    );
    path.canonicalize().unwrap()
}

struct Recorder {
    out: PathBuf,
    /// (machine path, what the fixture says instead), longest first.
    replace: Vec<(String, String)>,
}

impl Recorder {
    fn write(&self, name: &str, value: &Value) {
        self.write_text(name, serde_json::to_string_pretty(value).unwrap());
    }

    /// On one line: for audio samples, which would take a line each.
    fn write_compact(&self, name: &str, value: &Value) {
        self.write_text(name, serde_json::to_string(value).unwrap());
    }

    fn write_text(&self, name: &str, mut text: String) {
        for (from, to) in &self.replace {
            text = text.replace(from, to);
        }
        text.push('\n');
        std::fs::write(self.out.join(format!("{name}.json")), text).unwrap();
    }

    /// A command's call and what it returned, as tauri-specta hands it to the UI.
    fn command<T: Serialize>(
        &self,
        name: &str,
        command: &str,
        args: Value,
        result: &Result<T, izwi_desktop::error::AppError>,
    ) {
        self.write(name, &Self::call(command, args, result));
    }

    fn command_compact<T: Serialize>(
        &self,
        name: &str,
        command: &str,
        args: Value,
        result: &Result<T, izwi_desktop::error::AppError>,
    ) {
        self.write_compact(name, &Self::call(command, args, result));
    }

    fn call<T: Serialize>(
        command: &str,
        args: Value,
        result: &Result<T, izwi_desktop::error::AppError>,
    ) -> Value {
        let result = match result {
            Ok(data) => json!({"status": "ok", "data": data}),
            Err(error) => json!({"status": "error", "error": error}),
        };
        json!({"command": command, "args": args, "result": result})
    }
}

/// The events of job `id` from `from` on, with the milliseconds since `started`.
fn job_events(events: &Events, from: usize, id: i64, started: Instant) -> Vec<Value> {
    events.lock().unwrap()[from..]
        .iter()
        .filter_map(|(at, e)| {
            let payload = serde_json::to_value(e).unwrap();
            let mine = payload["job_id"] == json!(id) || payload["job"]["id"] == json!(id);
            mine.then(|| {
                json!({
                    "elapsed_ms": at.saturating_duration_since(started).as_millis() as u64,
                    "payload": payload,
                })
            })
        })
        .collect()
}

type Events = Arc<Mutex<Vec<(Instant, Event)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "rewrites ui/tests/fixtures/recorded; needs scripts/fetch-assets.sh"]
async fn record_fixtures() {
    let jfk = asset("speech/jfk.wav");
    let tiny = asset("models/whisper-tiny.en");
    let joe_onnx = asset("voices/en_US-joe-medium/en_US-joe-medium.onnx");
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let hf = dir.path().join("hf");

    let events: Events = Arc::default();
    let sink = events.clone();
    let mut config = RuntimeConfig::new(&data_dir);
    config.hf_cache_dir = Some(hf.clone());
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(
        config,
        Arc::new(move |e: Event| sink.lock().unwrap().push((Instant::now(), e))),
    )
    .await
    .unwrap();
    let data_dir = runtime.data_dir().to_path_buf();
    let hf = runtime.hf_cache_dir().to_path_buf();
    runtime.import_model(&tiny, Some("tiny")).unwrap();
    let joe_model = runtime.import_model(&joe_onnx, Some("joe")).unwrap().id;
    let state = AppState::new(runtime, Arc::default(), vec![jfk.clone()], Box::new(|_| {}));
    // The files below are in a folder the user picked; the outputs were chosen in save
    // and folder dialogs.
    state.chosen.allow_read(dir.path());

    let out = repo().join("ui/tests/fixtures/recorded");
    std::fs::create_dir_all(&out).unwrap();
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let assets = asset("");
    let rec = Recorder {
        out,
        replace: vec![
            (
                data_dir.display().to_string(),
                "/home/user/.local/share/izwi".into(),
            ),
            (
                hf.display().to_string(),
                "/home/user/.cache/huggingface/hub".into(),
            ),
            (assets.display().to_string(), "/home/user/Media".into()),
            (dir.path().display().to_string(), "/home/user/Media".into()),
        ],
    };

    let models = state.list_models().await;
    rec.command("listModels", "list_models", json!([]), &models);
    let settings = state.get_settings().await;
    rec.command("getSettings", "get_settings", json!([]), &settings);
    let opened = state.take_opened_files().await;
    assert_eq!(opened.as_ref().unwrap().len(), 1);
    rec.command("takeOpenedFiles", "take_opened_files", json!([]), &opened);

    // The job the UI replays: default options, the default model.
    let options = TranscribeOptions::default();
    let paths = vec![jfk.display().to_string()];
    let started = Instant::now();
    let jobs = state.transcribe_files(paths.clone(), options.clone()).await;
    rec.command(
        "transcribeFiles",
        "transcribe_files",
        json!([paths, options]),
        &jobs,
    );
    let job = jobs.unwrap().jobs.remove(0);
    let done = state.runtime.wait_job(job.id).await.unwrap();
    assert_eq!(
        done.status,
        izwi_runtime::JobStatus::Done,
        "{:?}",
        done.error
    );
    let stream: Vec<Value> = events
        .lock()
        .unwrap()
        .iter()
        .map(|(at, e)| {
            json!({
                "elapsed_ms": at.saturating_duration_since(started).as_millis() as u64,
                "payload": e,
            })
        })
        .collect();
    rec.write(
        "events_jfk",
        &json!({
            "event": "runtime-event",
            "about": "every RuntimeEvent payload from transcribeFiles([jfk.wav]) until the job finished; elapsed_ms since the call",
            "events": stream,
        }),
    );

    let transcript = state.get_transcript(job.id).await;
    let text = serde_json::to_string(&transcript).unwrap().to_lowercase();
    assert!(text.contains("country"), "{text}");
    rec.command(
        "getTranscript",
        "get_transcript",
        json!([job.id]),
        &transcript,
    );
    for format in [
        ExportFormat::Srt,
        ExportFormat::Vtt,
        ExportFormat::Txt,
        ExportFormat::Json,
    ] {
        let exported = state.export_transcript(job.id, format, None).await;
        rec.command(
            &format!("exportTranscript_{}", format.extension()),
            "export_transcript",
            json!([job.id, format, null]),
            &exported,
        );
    }
    let hits = state.search_transcripts("country".into(), 20).await;
    assert!(!hits.as_ref().unwrap().is_empty());
    rec.command(
        "searchTranscripts",
        "search_transcripts",
        json!(["country", 20]),
        &hits,
    );
    let peaks = state
        .audio_peaks(jfk.display().to_string(), 400, "main")
        .await;
    rec.command(
        "audioPeaks",
        "audio_peaks",
        json!([jfk.display().to_string(), 400]),
        &peaks,
    );

    // A history with more than one outcome: a cancelled job and a failed one.
    let greedy = TranscribeOptions {
        model_id: Some("local/tiny".into()),
        language: Some("en".into()),
        task: Task::Transcribe,
        beam_size: 1,
        ..TranscribeOptions::default()
    };
    let cancelled = state
        .transcribe_files(paths.clone(), greedy.clone())
        .await
        .unwrap()
        .jobs
        .remove(0);
    state.cancel_job(cancelled.id).await.unwrap();
    let broken = dir.path().join("broken.wav");
    std::fs::write(&broken, b"this is not audio").unwrap();
    let failed = state
        .transcribe_files(vec![broken.display().to_string()], greedy)
        .await
        .unwrap()
        .jobs
        .remove(0);
    let failed = state.runtime.wait_job(failed.id).await.unwrap();
    assert_eq!(failed.status, izwi_runtime::JobStatus::Failed);
    let filter = JobFilter::default();
    let jobs = state.list_jobs(filter.clone()).await;
    rec.command("listJobs", "list_jobs", json!([filter]), &jobs);

    // ---- speech: the voice library, a preview, a speak job, a batch.
    let voices = state.list_voices().await;
    rec.command("listVoices", "list_voices", json!([]), &voices);
    let voices = voices.unwrap();
    assert_eq!(voices.len(), 1, "{voices:?}");
    let joe = voices[0].id.to_string();
    let slowly = VoiceSettings {
        speed: 0.8,
        ..VoiceSettings::default()
    };
    let added = state
        .add_voice(joe_model.clone(), "Joe, slowly".into(), slowly.clone())
        .await;
    rec.command(
        "addVoice",
        "add_voice",
        json!([joe_model, "Joe, slowly", slowly]),
        &added,
    );
    let added = added.unwrap();
    let renamed = state.rename_voice(added.id, "Narrator".into()).await;
    rec.command(
        "renameVoice",
        "rename_voice",
        json!([added.id, "Narrator"]),
        &renamed,
    );
    assert_eq!(renamed.unwrap().name, "Narrator");
    let narrator = VoiceSettings {
        speed: 0.9,
        noise_scale: Some(0.5),
        noise_w: None,
        pitch: -1.0,
        speaker: None,
        ..VoiceSettings::default()
    };
    let updated = state
        .update_voice_settings(added.id, narrator.clone())
        .await;
    rec.command(
        "updateVoiceSettings",
        "update_voice_settings",
        json!([added.id, narrator]),
        &updated,
    );
    assert_eq!(updated.unwrap().settings, narrator);

    let preview = state
        .preview_voice(joe.clone(), Some("Hello.".into()))
        .await;
    let clip = preview.as_ref().unwrap();
    assert!(clip.samples.len() > clip.sample_rate as usize / 4);
    rec.command_compact(
        "previewVoice",
        "preview_voice",
        json!([joe, "Hello."]),
        &preview,
    );

    let text = "Hello there. This is Izwi.";
    let from = events.lock().unwrap().len();
    let started = Instant::now();
    let spoken = state.speak(joe.clone(), text.into(), None).await;
    rec.command("speak", "speak", json!([joe, text, null]), &spoken);
    let spoken = state.runtime.wait_job(spoken.unwrap().id).await.unwrap();
    assert_eq!(spoken.status, JobStatus::Done, "{:?}", spoken.error);
    let stream = job_events(&events, from, spoken.id, started);
    let sentences = stream
        .iter()
        .filter(|e| e["payload"]["type"] == "speech_audio")
        .count();
    assert_eq!(sentences, 2);
    rec.write_compact(
        "events_speak",
        &json!({
            "event": "runtime-event",
            "about": format!("the RuntimeEvent payloads of speak({joe:?}, {text:?}) until the job finished; elapsed_ms since the call"),
            "events": stream,
        }),
    );
    let wav = dir.path().join("hello.wav");
    state.chosen.allow_write(&wav);
    let saved = state
        .save_speech(spoken.id, wav.display().to_string())
        .await;
    rec.command(
        "saveSpeech",
        "save_speech",
        json!([spoken.id, wav.display().to_string()]),
        &saved,
    );
    assert!(wav.is_file());

    let txt = dir.path().join("lines.txt");
    std::fs::write(
        &txt,
        "Welcome to the museum.\n\nThe exit is on your left.\n",
    )
    .unwrap();
    let csv = dir.path().join("lines.csv");
    std::fs::write(
        &csv,
        "id,text\n1,Welcome to the museum.\n2,\"Tickets, please.\"\n3,Enjoy your visit!\n",
    )
    .unwrap();
    for (name, path) in [("readLines_txt", &txt), ("readLines_csv", &csv)] {
        let lines = state.read_lines(path.display().to_string()).await;
        rec.command(
            name,
            "read_lines",
            json!([path.display().to_string()]),
            &lines,
        );
    }
    let lines = state.read_lines(csv.display().to_string()).await.unwrap();
    assert_eq!(lines[1], "Tickets, please.");

    let out = dir.path().join("batch");
    state.chosen.allow_write(&out);
    let from = events.lock().unwrap().len();
    let started = Instant::now();
    let batch = state
        .speak_batch(joe.clone(), lines.clone(), out.display().to_string(), None)
        .await;
    rec.command(
        "speakBatch",
        "speak_batch",
        json!([joe, lines, out.display().to_string(), null]),
        &batch,
    );
    let batch = state.runtime.wait_job(batch.unwrap().id).await.unwrap();
    assert_eq!(batch.status, JobStatus::Done, "{:?}", batch.error);
    let stream = job_events(&events, from, batch.id, started);
    let done = stream
        .iter()
        .filter(|e| e["payload"]["type"] == "batch_line_done")
        .count();
    assert_eq!(done, lines.len());
    rec.write(
        "events_batch",
        &json!({
            "event": "runtime-event",
            "about": "the RuntimeEvent payloads of speakBatch(the lines of lines.csv) until the job finished; elapsed_ms since the call",
            "events": stream,
        }),
    );
    assert_eq!(
        state.batch_output(batch.id).await.unwrap(),
        out.join(MANIFEST_NAME)
    );
    let deleted = state.delete_voice(added.id).await;
    rec.command("deleteVoice", "delete_voice", json!([added.id]), &deleted);
    deleted.unwrap();

    // Errors as the UI receives them.
    let errors = vec![
        (
            "speak",
            json!([joe, "  ...  ", null]),
            state
                .speak(joe.clone(), "  ...  ".into(), None)
                .await
                .map(|_| ()),
        ),
        (
            "speak_batch",
            json!([joe, lines, out.display().to_string(), null]),
            state
                .speak_batch(joe.clone(), lines.clone(), out.display().to_string(), None)
                .await
                .map(|_| ()),
        ),
        (
            "update_voice_settings",
            json!([voices[0].id, {"speed": 9.0}]),
            state
                .update_voice_settings(
                    voices[0].id,
                    VoiceSettings {
                        speed: 9.0,
                        ..VoiceSettings::default()
                    },
                )
                .await
                .map(|_| ()),
        ),
        (
            "delete_voice",
            json!([voices[0].id]),
            state.delete_voice(voices[0].id).await,
        ),
        (
            "transcribe_files",
            json!([
                ["/home/user/Media/missing.wav"],
                TranscribeOptions::default()
            ]),
            state
                .transcribe_files(
                    vec![dir.path().join("missing.wav").display().to_string()],
                    TranscribeOptions::default(),
                )
                .await
                .map(|_| ()),
        ),
        (
            "download_model",
            json!(["whisper-nope"]),
            state
                .download_model("whisper-nope".into())
                .await
                .map(|_| ()),
        ),
        (
            "export_transcript",
            json!([failed.id, "srt", null]),
            state
                .export_transcript(failed.id, ExportFormat::Srt, None)
                .await
                .map(|_| ()),
        ),
    ];
    let errors: Vec<Value> = errors
        .into_iter()
        .map(|(command, args, result)| {
            let error = result.expect_err(command);
            json!({"command": command, "args": args, "result": {"status": "error", "error": error}})
        })
        .collect();
    rec.write("errors", &Value::Array(errors));
    state.runtime.shutdown().await;
}
