//! The commands' logic without a webview or a model: settings, refusals and their
//! error kinds, files the app was opened with.

use std::path::Path;
use std::sync::{Arc, Mutex};

use izwi_desktop::commands::settings::Theme;
use izwi_desktop::commands::transcribe::TranscribeOptions;
use izwi_desktop::error::ErrorKind;
use izwi_desktop::state::AppState;
use izwi_runtime::{NoEvents, Runtime, RuntimeConfig, VoiceSettings};

async fn state(dir: &Path, opened: Vec<std::path::PathBuf>) -> (AppState, Arc<Mutex<Vec<String>>>) {
    let mut config = RuntimeConfig::new(dir.join("data"));
    config.hf_cache_dir = Some(dir.join("hf"));
    config.hub_endpoint = Some("http://127.0.0.1:9".into());
    let runtime = Runtime::open(config, Arc::new(NoEvents)).await.unwrap();
    let allowed: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = allowed.clone();
    let state = AppState::new(
        runtime,
        Arc::default(),
        opened,
        Box::new(move |p| seen.lock().unwrap().push(p.display().to_string())),
    );
    (state, allowed)
}

#[tokio::test]
async fn settings_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = state(dir.path(), vec![]).await;
    let settings = state.get_settings().await.unwrap();
    assert_eq!(settings.theme, Theme::System);
    assert_eq!(settings.default_transcribe_model, None);
    assert_eq!(settings.device, "cpu");
    assert!(settings.data_dir.ends_with("data"));

    state.set_theme(Theme::Dark).await.unwrap();
    state
        .set_default_model(Some("whisper-base".into()))
        .await
        .unwrap();
    let settings = state.get_settings().await.unwrap();
    assert_eq!(settings.theme, Theme::Dark);
    assert_eq!(
        settings.default_transcribe_model.as_deref(),
        Some("whisper-base")
    );
    state.set_default_model(None).await.unwrap();
    assert_eq!(
        state.get_settings().await.unwrap().default_transcribe_model,
        None
    );

    let unknown = state
        .set_default_model(Some("nope".into()))
        .await
        .unwrap_err();
    assert_eq!(unknown.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn refusals_carry_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let (state, allowed) = state(dir.path(), vec![]).await;
    let options = TranscribeOptions::default;

    let none = state.transcribe_files(vec![], options()).await.unwrap_err();
    assert_eq!(none.kind, ErrorKind::Invalid);
    // The user picked the folder these files are in.
    state.chosen.allow_read(dir.path());
    let missing = dir.path().join("missing.wav").display().to_string();
    let missing = state
        .transcribe_files(vec![missing], options())
        .await
        .unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);

    // A real file, but no model is installed to transcribe it with.
    let wav = dir.path().join("a.wav");
    izwi_runtime::write_wav(&wav, &[0.0; 1600], 16_000).unwrap();
    let no_model = state
        .transcribe_files(vec![dir.path().display().to_string()], options())
        .await
        .unwrap_err();
    assert_eq!(no_model.kind, ErrorKind::Invalid, "{no_model:?}");
    // Voices of a model that is not installed, or with nothing to make them from.
    let wav_path = wav.display().to_string();
    let clone = state
        .clone_voice("Me".into(), "local/qwen-base".into(), wav_path, None)
        .await
        .unwrap_err();
    assert_eq!(clone.kind, ErrorKind::NotFound, "{clone:?}");
    let blank = state
        .design_voice("Calm".into(), "local/qwen-design".into(), " \n".into())
        .await
        .unwrap_err();
    assert_eq!(blank.kind, ErrorKind::Invalid, "{blank:?}");
    assert!(blank.message.contains("describe"), "{blank:?}");
    let design = state
        .design_voice(
            "Calm".into(),
            "local/qwen-design".into(),
            "a calm voice".into(),
        )
        .await
        .unwrap_err();
    assert_eq!(design.kind, ErrorKind::NotFound, "{design:?}");
    let not_installed = state
        .transcribe_files(
            vec![wav.display().to_string()],
            TranscribeOptions {
                model_id: Some("whisper-base".into()),
                ..options()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(not_installed.kind, ErrorKind::Model, "{not_installed:?}");
    assert!(allowed.lock().unwrap().is_empty());

    let job = state.cancel_job(41).await;
    assert!(job.is_err());
    assert_eq!(state.get_transcript(41).await.unwrap(), None);
    assert_eq!(
        state
            .export_transcript(41, izwi_runtime::ExportFormat::Txt, None)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );
    // Cancelling a download that is not running is not an error.
    state.cancel_download("whisper-base".into()).await.unwrap();

    // A batch's checks and re-take, of a job that does not exist.
    assert_eq!(
        state.batch_checks(41).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        state
            .retake_flagged(41, "joe".into(), None)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );
    // No Qwen3-TTS model is installed: no dialog offers one.
    assert!(state
        .qwen3_models(izwi_desktop::commands::voices::Qwen3Variant::Base)
        .is_empty());
    // A trim outside the sample names what is wrong.
    let trim = state
        .trim_voice_sample(wav.display().to_string(), 0.5, 0.1)
        .await
        .unwrap_err();
    assert_eq!(trim.kind, ErrorKind::Invalid, "{trim:?}");
    assert!(trim.message.contains("cannot keep"), "{trim:?}");

    let peaks = state
        .audio_peaks(wav.display().to_string(), 8, "main")
        .await
        .unwrap();
    assert_eq!(peaks, [0.0; 8]);
}

#[tokio::test]
async fn opened_files_are_taken_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("talk.mp3");
    let (state, _) = state(dir.path(), vec![file.clone()]).await;
    assert_eq!(
        state.take_opened_files().await.unwrap(),
        [file.display().to_string()]
    );
    assert!(state.take_opened_files().await.unwrap().is_empty());
}

#[tokio::test]
async fn speech_refusals_carry_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = state(dir.path(), vec![]).await;
    // No voice model is installed: the library is empty.
    assert!(state.list_voices().await.unwrap().is_empty());

    let kind = |r: Result<_, izwi_desktop::error::AppError>| r.map(|_: ()| ()).unwrap_err().kind;
    let no_voice = state
        .speak("nobody".into(), "Hello.".into(), None)
        .await
        .map(|_| ());
    assert_eq!(kind(no_voice), ErrorKind::Invalid);
    let relative = state
        .speak_batch("nobody".into(), vec!["Hi.".into()], "out".into(), None)
        .await
        .map(|_| ());
    assert_eq!(kind(relative), ErrorKind::Invalid);
    state.chosen.allow_read(dir.path());
    state.chosen.allow_write(&dir.path().join("out"));
    state.chosen.allow_write(&dir.path().join("x.wav"));
    let blank_lines = state
        .speak_batch(
            "nobody".into(),
            vec![" ".into()],
            dir.path().join("out").display().to_string(),
            None,
        )
        .await
        .map(|_| ());
    assert_eq!(kind(blank_lines), ErrorKind::Invalid);

    assert_eq!(
        kind(state.read_lines("lines.txt".into()).await.map(|_| ())),
        ErrorKind::Invalid
    );
    let missing = dir.path().join("missing.txt").display().to_string();
    assert_eq!(
        kind(state.read_lines(missing).await.map(|_| ())),
        ErrorKind::NotFound
    );
    let txt = dir.path().join("lines.txt");
    std::fs::write(&txt, "One.\n\n  Two.  \n").unwrap();
    assert_eq!(
        state.read_lines(txt.display().to_string()).await.unwrap(),
        ["One.", "Two."]
    );

    let out = dir.path().join("x.wav").display().to_string();
    assert_eq!(
        kind(state.save_speech(41, out).await.map(|_| ())),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(state.batch_output(41).await.map(|_| ())),
        ErrorKind::NotFound
    );
    // A Whisper model cannot be a voice; a voice needs a name.
    let whisper = state
        .add_voice(
            "whisper-base".into(),
            "Base".into(),
            izwi_runtime::VoiceSettings::default(),
        )
        .await
        .map(|_| ());
    assert_eq!(kind(whisper), ErrorKind::Invalid);
    assert_eq!(
        kind(state.rename_voice(1, "  ".into()).await.map(|_| ())),
        ErrorKind::Invalid
    );
    assert_eq!(
        kind(state.rename_voice(1, "Joe".into()).await.map(|_| ())),
        ErrorKind::NotFound
    );
}

/// A WAV of `seconds` of a quiet tone at 16 kHz.
fn tone(path: &Path, seconds: usize) {
    let samples: Vec<f32> = (0..16_000 * seconds)
        .map(|i| (i as f32 * 0.05).sin() * 0.1)
        .collect();
    izwi_runtime::write_wav(path, &samples, 16_000).unwrap();
}

#[tokio::test]
async fn paths_the_user_did_not_choose_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (state, allowed) = state(dir.path(), vec![]).await;
    let d = dir.path();
    let s = |p: &Path| p.display().to_string();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    let wav = d.join("elsewhere/a.wav");
    tone(&wav, 1);
    let txt = d.join("elsewhere/lines.txt");
    std::fs::write(&txt, "One.\n").unwrap();
    let victim = d.join("elsewhere/notes.srt");
    std::fs::write(&victim, "mine").unwrap();
    let onnx = d.join("elsewhere/voice.onnx");
    std::fs::write(&onnx, b"not a model").unwrap();
    let refused = |r: Result<(), izwi_desktop::error::AppError>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(e.kind, ErrorKind::Invalid, "{what}: {e:?}");
        assert!(
            e.message.contains("not chosen") || e.message.contains("not a full path"),
            "{what}: {e:?}"
        );
    };

    refused(state.read_lines(s(&txt)).await.map(|_| ()), "read_lines");
    refused(
        state
            .read_lines("elsewhere/lines.txt".into())
            .await
            .map(|_| ()),
        "read_lines relative",
    );
    refused(
        state.audio_peaks(s(&wav), 8, "main").await.map(|_| ()),
        "audio_peaks",
    );
    refused(
        state
            .clone_voice("Me".into(), "local/qwen-base".into(), s(&wav), None)
            .await
            .map(|_| ()),
        "clone_voice",
    );
    refused(
        state.open_voice_sample(s(&wav)).await.map(|_| ()),
        "open_voice_sample",
    );
    refused(
        state.trim_voice_sample(s(&wav), 0.0, 0.1).await.map(|_| ()),
        "trim_voice_sample",
    );
    refused(
        state.transcribe_voice_sample(s(&wav)).await.map(|_| ()),
        "transcribe_voice_sample",
    );
    refused(
        state
            .transcribe_files(vec![s(&wav)], TranscribeOptions::default())
            .await
            .map(|_| ()),
        "transcribe_files",
    );
    refused(
        state.import_model(s(&onnx), None).await.map(|_| ()),
        "import_model",
    );
    refused(
        state
            .speak(s(&onnx), "Hello.".into(), None)
            .await
            .map(|_| ()),
        "speak with an .onnx path",
    );
    // A voice file the hub recognises (its .onnx.json beside it) is still a path the
    // user did not choose.
    let voice = d.join("elsewhere/other.onnx");
    std::fs::write(&voice, b"not a model").unwrap();
    std::fs::write(d.join("elsewhere/other.onnx.json"), b"{}").unwrap();
    refused(
        state
            .speak(s(&voice), "Hello.".into(), None)
            .await
            .map(|_| ()),
        "speak with a recognised voice file",
    );
    // Model ids from the page are the models Izwi lists, never paths.
    let not_listed = state
        .add_voice(s(&voice), "Other".into(), VoiceSettings::default())
        .await
        .unwrap_err();
    assert!(
        not_listed.message.contains("not a model Izwi lists"),
        "{not_listed:?}"
    );
    refused(
        state
            .speak_batch(s(&onnx), vec!["Hi.".into()], s(&d.join("elsewhere")), None)
            .await
            .map(|_| ()),
        "speak_batch into a folder not chosen",
    );
    refused(
        state.save_speech(1, s(&victim)).await.map(|_| ()),
        "save_speech over a file not chosen",
    );
    for path in [s(&victim), "notes.srt".to_string()] {
        refused(
            state
                .export_transcript(1, izwi_runtime::ExportFormat::Srt, Some(path))
                .await
                .map(|_| ()),
            "export_transcript",
        );
    }
    // Reading a folder does not make its files destinations.
    state.chosen.allow_read(&d.join("elsewhere"));
    refused(
        state.save_speech(1, s(&victim)).await.map(|_| ()),
        "save_speech into a folder chosen to read",
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    assert!(allowed.lock().unwrap().is_empty());

    // Once chosen (picked, dropped, opened with), the same paths pass the check.
    assert_eq!(state.read_lines(s(&txt)).await.unwrap(), ["One."]);
    assert_eq!(
        state.audio_peaks(s(&wav), 4, "main").await.unwrap().len(),
        4
    );
    // Chosen, it reaches the importer, which finds it is no model.
    let not_a_model = state.import_model(s(&onnx), None).await.unwrap_err();
    assert!(
        !not_a_model.message.contains("not chosen"),
        "{not_a_model:?}"
    );
    state.chosen.allow_write(&victim);
    assert_eq!(
        state.save_speech(1, s(&victim)).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
}

#[tokio::test]
async fn files_in_the_data_folder_and_opened_files_are_readable() {
    let dir = tempfile::tempdir().unwrap();
    let opened = dir.path().join("opened.wav");
    tone(&opened, 1);
    let (state, _) = state(dir.path(), vec![opened.clone()]).await;
    let inside = state.runtime.data_dir().join("speech.wav");
    tone(&inside, 1);
    for path in [&opened, &inside] {
        let peaks = state
            .audio_peaks(path.display().to_string(), 4, "main")
            .await
            .unwrap();
        assert_eq!(peaks.len(), 4);
    }
}

#[tokio::test]
async fn a_newer_waveform_request_of_a_window_cancels_the_older() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("long.wav");
    tone(&wav, 120);
    let (state, _) = state(dir.path(), vec![wav.clone()]).await;
    let path = wav.display().to_string();
    // The first starts (and registers) before the second is asked for.
    let (first, second, other_window) = tokio::join!(
        state.audio_peaks(path.clone(), 100, "main"),
        state.audio_peaks(path.clone(), 100, "main"),
        state.audio_peaks(path.clone(), 100, "other"),
    );
    let first = first.unwrap_err();
    assert_eq!(first.kind, ErrorKind::Cancelled, "{first:?}");
    assert_eq!(second.unwrap().len(), 100);
    assert_eq!(other_window.unwrap().len(), 100);
}
