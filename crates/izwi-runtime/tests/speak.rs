//! Speech end to end with the real Piper voice en_US-joe-medium (scripts/fetch-assets.sh)
//! and Debian's espeak-ng: the voice library, a speak job to a WAV with its sentences
//! streamed, speed and pitch, a round trip through Whisper base, batches of 100 lines
//! and a cancelled batch, and the refusals.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{open_recording, Events};
use izwi_core::word_errors::{word_errors, words};
use izwi_runtime::{
    read_lines, Event, JobStatus, Runtime, SpeakBatchRequest, SpeakFileRequest, SpeakRequest,
    TranscribeRequest, VoiceSettings, VoiceSource, MANIFEST_NAME, MAX_SPEAK_CHARS,
};
use izwi_test_support::asset;

/// A runtime on a scratch data dir with joe imported; returns joe's model id.
async fn open_with_joe(dir: &Path) -> (Runtime, Events, String) {
    let (runtime, events) = open_recording(common::config(dir)).await;
    let joe = runtime
        .import_model(
            &asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
            Some("joe"),
        )
        .unwrap();
    (runtime, events, joe.id)
}

fn wav(path: &Path) -> (u32, Vec<f32>) {
    let audio = izwi_audio::decode_file(path).unwrap();
    assert_eq!(audio.channels, 1, "{}", path.display());
    (audio.sample_rate, audio.to_mono())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_has_a_voice_per_installed_model_and_keeps_edits() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, joe) = open_with_joe(dir.path()).await;
    let voices = runtime.list_voices().await.unwrap();
    assert_eq!(voices.len(), 1);
    let preset = &voices[0];
    assert_eq!(
        (preset.model_id.as_str(), preset.source, preset.installed),
        (joe.as_str(), VoiceSource::Preset, true)
    );
    // From the voice's .onnx.json.
    assert_eq!(preset.language.as_deref(), Some("en_US"));
    // Listing again makes no second row.
    assert_eq!(runtime.list_voices().await.unwrap().len(), 1);

    let slow = runtime
        .add_voice(
            &joe,
            "Joe, slowly",
            VoiceSettings {
                speed: 0.8,
                ..VoiceSettings::default()
            },
        )
        .await
        .unwrap();
    runtime.rename_voice(slow.id, "Joe slow").await.unwrap();
    // `--voice NAME` must pick out one voice: no name twice (case aside), no number.
    let twice = runtime
        .add_voice(&joe, "JOE SLOW", VoiceSettings::default())
        .await
        .unwrap_err();
    assert!(twice.to_string().contains("already"), "{twice}");
    let number = runtime.rename_voice(slow.id, " 3 ").await.unwrap_err();
    assert!(
        number.to_string().contains("picks a voice by its id"),
        "{number}"
    );
    // A voice keeps its own name in another case.
    runtime.rename_voice(slow.id, "joe slow").await.unwrap();
    runtime.rename_voice(slow.id, "Joe slow").await.unwrap();
    let refused = runtime
        .update_voice_settings(
            slow.id,
            VoiceSettings {
                speed: 9.0,
                ..VoiceSettings::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("speed must be 0.25 to 4"),
        "{refused}"
    );
    let voices = runtime.list_voices().await.unwrap();
    assert_eq!(voices[1].name, "Joe slow");
    assert_eq!(voices[1].settings.speed, 0.8);

    runtime.delete_voice(slow.id).await.unwrap();
    let gone = runtime.rename_voice(slow.id, "again").await.unwrap_err();
    assert_eq!(
        gone.to_string(),
        format!("voice {} does not exist", slow.id)
    );
    let last = runtime.delete_voice(preset.id).await.unwrap_err();
    assert!(last.to_string().contains("only voice of model"), "{last}");
    assert!(runtime
        .add_voice("whisper-base", "nope", VoiceSettings::default())
        .await
        .unwrap_err()
        .to_string()
        .contains("cannot speak"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speech_streams_sentence_by_sentence_into_a_wav() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events, _) = open_with_joe(dir.path()).await;
    let text = "Hello there. This is Izwi, speaking on your own machine! Is it clear?";
    let job = runtime
        .speak(SpeakRequest {
            voice: "joe".into(),
            text: text.into(),
            output: None,
            replace: false,
            speed: None,
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
    let output = PathBuf::from(job.output.clone().unwrap());
    assert!(output.starts_with(runtime.data_dir().join("audio")));
    let (rate, samples) = wav(&output);
    assert_eq!(rate, 22_050);
    let seconds = samples.len() as f64 / f64::from(rate);
    assert!((3.0..12.0).contains(&seconds), "{seconds} s");
    let metrics = &job.metrics;
    assert!((metrics.audio_seconds.unwrap() - seconds).abs() < 0.01);
    assert!(metrics.rtf.unwrap() > 0.0);

    // Three sentences, each streamed once and in order, adding up to the file.
    let streamed: Vec<(usize, usize, usize)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::SpeechAudio {
                job_id,
                index,
                total,
                samples,
                ..
            } if *job_id == job.id => Some((*index, *total, samples.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        streamed.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
        [(0, 3), (1, 3), (2, 3)]
    );
    let gaps = (0.15 * 22_050.0) as usize * 2;
    assert_eq!(
        streamed.iter().map(|s| s.2).sum::<usize>() + gaps,
        samples.len()
    );

    // The job makes two sentences at a time; a preview makes them one by one, with
    // the same seeds: the same audio, to the file's 16 bits.
    let clip = runtime
        .preview_voice("joe", Some(text.into()))
        .await
        .unwrap();
    assert_eq!(clip.samples.len(), samples.len());
    let worst = clip
        .samples
        .iter()
        .zip(&samples)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst <= 1.5 / 32768.0, "{worst}");

    // Saved elsewhere, byte for byte.
    let copy = dir.path().join("copy.wav");
    runtime.save_speech(job.id, &copy).await.unwrap();
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&output).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speed_changes_length_and_pitch_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, joe) = open_with_joe(dir.path()).await;
    let say = |speed: f32, pitch: f32| {
        let runtime = runtime.clone();
        let joe = joe.clone();
        async move {
            let voice = runtime
                .add_voice(
                    &joe,
                    &format!("joe {speed} {pitch}"),
                    VoiceSettings {
                        speed,
                        pitch,
                        ..VoiceSettings::default()
                    },
                )
                .await
                .unwrap();
            let clip = runtime
                .preview_voice(
                    &voice.id.to_string(),
                    Some("The rain in Spain stays mainly in the plain.".into()),
                )
                .await
                .unwrap();
            clip.samples.len() as f64 / f64::from(clip.sample_rate)
        }
    };
    let normal = say(1.0, 0.0).await;
    let fast = say(2.0, 0.0).await;
    let high = say(1.0, 5.0).await;
    // Durations are whole frames, rounded up per phoneme, so twice the speed is a
    // little more than half the length.
    eprintln!("normal {normal:.2} s, speed 2 {fast:.2} s, pitch +5 {high:.2} s");
    assert!((0.45..0.7).contains(&(fast / normal)), "{fast} vs {normal}");
    // A pitch shift keeps the pace (speed 2 is 0.6 of the length; this stays near 1).
    assert!((high / normal - 1.0).abs() < 0.15, "{high} vs {normal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joe_transcribed_by_whisper_base_comes_back_word_for_word() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, _) = open_with_joe(dir.path()).await;
    let base = runtime
        .import_model(&asset("models/whisper-base"), Some("base"))
        .unwrap();
    // Ordinary sentences, of the kind people have read to them.
    let sentences = [
        "Thank you for calling. Your appointment is confirmed for Tuesday morning.",
        "Please remember to bring your passport and a printed copy of your ticket.",
        "The weather today will be sunny, with a light breeze in the afternoon.",
        "She opened the window and listened to the birds singing in the garden.",
        "Our team finished the project two weeks earlier than we had planned.",
        "If you have any questions, you can send us a message at any time.",
        "He walked to the station, bought a newspaper, and waited for the train.",
        "Reading a few pages every evening is a good way to learn new words.",
    ];
    let mut reference = Vec::new();
    let mut hypothesis = Vec::new();
    for (i, sentence) in sentences.iter().enumerate() {
        let output = dir.path().join(format!("{i}.wav"));
        let job = runtime
            .speak(SpeakRequest {
                voice: "joe".into(),
                text: (*sentence).into(),
                output: Some(output.clone()),
                replace: false,
                speed: None,
            })
            .await
            .unwrap();
        let job = runtime.wait_job(job.id).await.unwrap();
        assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);
        let mut request = TranscribeRequest::new(&output, &base.id);
        request.language = Some("en".into());
        let heard = runtime.transcribe(request).await.unwrap();
        let heard = runtime.wait_job(heard.id).await.unwrap();
        let transcript_id: i64 = heard.output.unwrap()["transcript:".len()..]
            .parse()
            .unwrap();
        let text = runtime
            .transcript(transcript_id)
            .await
            .unwrap()
            .1
            .iter()
            .map(|s| s.text.clone())
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!("said {sentence:?}, heard {text:?}");
        reference.extend(words(sentence));
        hypothesis.extend(words(&text));
    }
    let wer = word_errors(&reference, &hypothesis) as f64 / reference.len() as f64;
    eprintln!(
        "round-trip WER {:.2}% over {} words",
        wer * 100.0,
        reference.len()
    );
    assert!(wer <= 0.10, "WER {wer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_100_lines_gives_100_wavs_and_a_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events, _) = open_with_joe(dir.path()).await;
    let script = dir.path().join("script.csv");
    let mut csv = String::from("id,text\n");
    for i in 1..=100 {
        csv.push_str(&format!("{i},\"Line {i}, spoken.\"\n"));
    }
    std::fs::write(&script, csv).unwrap();
    let lines = read_lines(&script).unwrap();
    assert_eq!(lines.len(), 100);
    let out = dir.path().join("out");
    let job = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines: lines.clone(),
            output_dir: out.clone(),
            speed: Some(1.5),
            max_wer: None,
        })
        .await
        .unwrap();
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);

    let manifest = std::fs::read_to_string(out.join(MANIFEST_NAME)).unwrap();
    let rows: Vec<&str> = manifest.lines().collect();
    assert_eq!(
        rows[0],
        "line,file,seconds,text,seed,transcript,wer,flagged"
    );
    assert_eq!(rows.len(), 101);
    for (i, row) in rows[1..].iter().enumerate() {
        let file = format!("{:03}.wav", i + 1);
        assert!(
            row.starts_with(&format!("{},{file},", i + 1))
                // Take 0, not checked: no Whisper model is installed here.
                && row.ends_with(&format!("\"Line {}, spoken.\",0,,,", i + 1)),
            "{row}"
        );
        let (rate, samples) = wav(&out.join(&file));
        assert_eq!(rate, 22_050);
        let seconds: f64 = row.split(',').nth(2).unwrap().parse().unwrap();
        assert!((samples.len() as f64 / 22_050.0 - seconds).abs() < 0.002);
        assert!(seconds > 0.4 && seconds < 5.0, "{row}");
    }
    let wavs = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "wav")
        })
        .count();
    assert_eq!(wavs, 100);
    let done = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::BatchLineDone { job_id, .. } if *job_id == job.id))
        .count();
    assert_eq!(done, 100);

    // The folder now holds a batch: a second one there is refused, nothing overwritten.
    let again = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines,
            output_dir: out.clone(),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap_err();
    assert!(again.to_string().contains("already holds"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_never_overwrites_a_file_nor_shares_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, _) = open_with_joe(dir.path()).await;
    let batch = |out: &Path| SpeakBatchRequest {
        voice: "joe".into(),
        lines: vec!["One.".into(), "Two.".into()],
        output_dir: out.to_path_buf(),
        speed: None,
        max_wer: None,
    };

    // A folder holding a file the batch would write is refused; the file is untouched.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("002.wav"), "my recording").unwrap();
    let refused = runtime.speak_batch(batch(&mine)).await.unwrap_err();
    assert!(refused.to_string().contains("002.wav"), "{refused}");
    assert_eq!(
        std::fs::read(mine.join("002.wav")).unwrap(),
        b"my recording"
    );
    assert!(!mine.join(MANIFEST_NAME).exists());

    // Two batches sent to one empty folder: the first reserves it, the second is refused.
    let shared = dir.path().join("shared");
    let first = runtime.speak_batch(batch(&shared)).await.unwrap();
    let second = runtime.speak_batch(batch(&shared)).await.unwrap_err();
    let second = second.to_string();
    assert!(
        second.contains("a batch there is starting") || second.contains("already holds a batch"),
        "{second}"
    );
    let first = runtime.wait_job(first.id).await.unwrap();
    assert_eq!(first.status, JobStatus::Done, "{:?}", first.error);
}

/// A batch stopped before its first line leaves its folder as it found it, free for the
/// next batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_cancelled_at_once_leaves_no_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, _) = open_with_joe(dir.path()).await;
    let out = dir.path().join("out");
    let request = || SpeakBatchRequest {
        voice: "joe".into(),
        lines: vec!["One line.".into()],
        output_dir: out.clone(),
        speed: None,
        max_wer: None,
    };
    let job = runtime.speak_batch(request()).await.unwrap();
    runtime.cancel_job(job.id).await.unwrap();
    let job = runtime.job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);
    assert!(!out.join(MANIFEST_NAME).exists());
    let again = runtime.speak_batch(request()).await.unwrap();
    let again = runtime.wait_job(again.id).await.unwrap();
    assert_eq!(again.status, JobStatus::Done, "{:?}", again.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_batch_keeps_its_finished_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, events, _) = open_with_joe(dir.path()).await;
    let out = dir.path().join("out");
    let lines: Vec<String> = (1..=40)
        .map(|i| format!("This is line number {i} of a long script."))
        .collect();
    let job = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines,
            output_dir: out.clone(),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap();
    // Cancel once two lines are done.
    for _ in 0..600 {
        let done = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::BatchLineDone { .. }))
            .count();
        if done >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    runtime.cancel_job(job.id).await.unwrap();
    let job = runtime.job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);

    let manifest = std::fs::read_to_string(out.join(MANIFEST_NAME)).unwrap();
    let listed = manifest.lines().count() - 1;
    assert!((2..40).contains(&listed), "{listed} lines listed");
    let mut wavs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .collect();
    wavs.sort();
    assert_eq!(wavs.len(), listed, "every WAV is in the manifest");
    for path in &wavs {
        assert!(wav(path).1.len() > 22_050 / 2);
    }
    // No temporary files left behind.
    assert!(std::fs::read_dir(&out).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with('.')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, _) = open_with_joe(dir.path()).await;
    let speak =
        |voice: &str, text: &str, output: Option<PathBuf>, speed: Option<f32>| SpeakRequest {
            voice: voice.into(),
            text: text.into(),
            output,
            replace: false,
            speed,
        };
    let cases = [
        (speak("joe", "  ... ", None, None), "nothing to say"),
        (speak("nobody", "Hi.", None, None), "no voice \"nobody\""),
        (
            speak("joe", "Hi.", None, Some(0.0)),
            "speed must be 0.25 to 4",
        ),
        (
            speak(
                "joe",
                "Hi.",
                Some(dir.path().join("missing/dir/out.wav")),
                None,
            ),
            "does not exist",
        ),
        (speak("whisper-base", "Hi.", None, None), "cannot speak"),
    ];
    for (request, want) in cases {
        let err = match runtime.speak(request).await {
            Ok(job) => runtime
                .wait_job(job.id)
                .await
                .unwrap()
                .error
                .unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{err:?} should say {want:?}");
    }
    let batch = runtime
        .speak_batch(SpeakBatchRequest {
            voice: "joe".into(),
            lines: vec!["Fine.".into(), "--".into()],
            output_dir: dir.path().join("b"),
            speed: None,
            max_wer: None,
        })
        .await
        .unwrap_err();
    assert!(batch.to_string().contains("line 2 has no words"), "{batch}");
}

/// What the output folder held when sentence `index` was reported: the bytes of the
/// WAV being written (a hidden temporary file) and whether the WAV had appeared.
#[derive(Debug, Clone, Copy)]
struct Seen {
    index: usize,
    samples: usize,
    samples_before: usize,
    temp_bytes: u64,
    wav_exists: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_is_spoken_to_disk_sentence_by_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let wav_path = out.join("book.wav");
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (record, folder, target) = (seen.clone(), out.clone(), wav_path.clone());
    let sink = move |e: Event| {
        if let Event::SpeechAudio { index, samples, .. } = e {
            let temp_bytes = std::fs::read_dir(&folder)
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.metadata().unwrap().len())
                .sum();
            let mut record = record.lock().unwrap();
            let samples_before = record.iter().map(|s| s.samples).sum();
            record.push(Seen {
                index,
                samples: samples.len(),
                samples_before,
                temp_bytes,
                wav_exists: target.exists(),
            });
        }
    };
    let runtime = Runtime::open(common::config(dir.path()), Arc::new(sink))
        .await
        .unwrap();
    runtime
        .import_model(
            &asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
            Some("joe"),
        )
        .unwrap();
    let book = dir.path().join("book.txt");
    let chapter: String = (1..=8)
        .map(|i| format!("This is sentence number {i} of the chapter, read in order. "))
        .collect();
    std::fs::write(&book, format!("Chapter one\n\n{chapter}\n")).unwrap();
    let job = runtime
        .speak_file(SpeakFileRequest {
            voice: "joe".into(),
            file: book.clone(),
            output: Some(wav_path.clone()),
            replace: false,
            speed: None,
        })
        .await
        .unwrap();
    // The row names the file; it does not hold the text.
    assert_eq!(job.input, book.display().to_string());
    assert!(
        !job.params.to_string().contains("sentence number"),
        "{}",
        job.params
    );
    let job = runtime.wait_job(job.id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done, "{:?}", job.error);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 9, "{seen:?}");
    let gap = (0.15 * 22_050.0) as usize;
    for s in &seen[1..] {
        // Every earlier sentence (and its gap) is on disk, but for what the writer's
        // buffer holds, before this one is written; the WAV appears only at the end.
        let written = 44 + 2 * (s.samples_before + gap * (s.index - 1)) as u64;
        assert!(s.temp_bytes + 8 * 1024 >= written, "{s:?}: {written}");
        assert!(!s.wav_exists, "{s:?}");
    }
    let (rate, samples) = wav(&wav_path);
    assert_eq!(rate, 22_050);
    let spoken: usize = seen.iter().map(|s| s.samples).sum();
    assert_eq!(samples.len(), spoken + gap * 8);
    assert!((job.metrics.audio_seconds.unwrap() - samples.len() as f64 / 22_050.0).abs() < 1e-6);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "no temp left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_is_bounded_and_its_row_keeps_an_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _, _) = open_with_joe(dir.path()).await;
    let request = |text: String| SpeakRequest {
        voice: "joe".into(),
        text,
        output: None,
        replace: false,
        speed: None,
    };
    let too_long = runtime
        .speak(request("word ".repeat(MAX_SPEAK_CHARS / 5 + 1)))
        .await
        .unwrap_err();
    assert!(
        too_long
            .to_string()
            .contains(&format!("at most {MAX_SPEAK_CHARS}")),
        "{too_long}"
    );

    let text = "A sentence that goes on. ".repeat(400);
    let job = runtime.speak(request(text.clone())).await.unwrap();
    runtime.cancel_job(job.id).await.unwrap();
    let stored = runtime.job(job.id).await.unwrap();
    for job in [job, stored] {
        assert!(job.input.chars().count() <= 201, "{}", job.input);
        assert!(text.starts_with(job.input.trim_end_matches('…')));
        assert!(job.params.to_string().len() < 200, "{}", job.params);
        assert_eq!(job.params["chars"], text.chars().count());
    }
}
