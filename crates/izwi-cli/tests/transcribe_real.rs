//! Real Whisper weights on real speech, end to end through `izwi transcribe` with its
//! defaults and the voice activity detector installed, as the setup script leaves a
//! user: decoding, the VAD's chunks, the engine and the decoding rules. Needs
//! `scripts/fetch-assets.sh` first.

use std::path::{Path, PathBuf};
use std::process::Command;

use izwi_core::word_errors::{word_errors, words};
use izwi_test_support::{asset, install_vad};
use serde_json::Value;

fn izwi(args: &[&std::ffi::OsStr]) -> String {
    install_vad(&izwi_runtime::vad_path(&scratch("data")));
    let output = Command::new(env!("CARGO_BIN_EXE_izwi"))
        // Jobs are recorded: keep them out of the user's own history and cache.
        .env("IZWI_DATA_DIR", scratch("data"))
        .env("HF_HOME", scratch("hf"))
        .args(args)
        .output()
        .expect("izwi runs");
    assert!(
        output.status.success(),
        "izwi {:?} failed: {}",
        args,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// `izwi transcribe AUDIO --model MODEL --format json`, parsed.
fn transcribe_json(audio: &Path, model: &Path) -> Value {
    let json = izwi(&[
        "transcribe".as_ref(),
        audio.as_os_str(),
        "--model".as_ref(),
        model.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    serde_json::from_str(&json).expect("JSON transcript")
}

fn check_segments(transcript: &Value) {
    let duration = transcript["duration"].as_f64().expect("duration");
    let mut last_end = 0.0;
    for s in transcript["segments"].as_array().expect("segments") {
        let (start, end) = (
            s["start"].as_f64().expect("start"),
            s["end"].as_f64().expect("end"),
        );
        assert!(
            start >= last_end - 1e-6,
            "segments overlap or go back: {transcript}"
        );
        assert!(
            start <= end && end <= duration + 1e-6,
            "segment outside the audio: {s}"
        );
        last_end = end;
    }
}

#[test]
fn tiny_en_transcribes_jfk_exactly() {
    let model = asset("models/whisper-tiny.en");
    let audio = asset("speech/jfk.wav");
    let transcript = transcribe_json(&audio, &model);
    let want = "And so my fellow Americans, ask not what your country can do for you, \
                ask what you can do for your country.";
    assert_eq!(
        words(transcript["text"].as_str().expect("text")),
        words(want)
    );
    assert_eq!(transcript["language"], "en");
    check_segments(&transcript);
}

/// Word error rate of a model over the five LibriVox clips, all in one run.
/// Word error rate of `izwi transcribe` over the five clips, each a file of its own;
/// `extra` arguments after the defaults.
fn librivox_wer(model: &str, extra: &[&str]) -> f64 {
    let clips = librivox_clips();
    let out = std::env::temp_dir().join(format!("izwi-librivox-{model}-{}", std::process::id()));
    let model_dir = asset(&format!("models/{model}"));
    let mut args: Vec<&std::ffi::OsStr> = vec!["transcribe".as_ref()];
    args.extend(clips.iter().map(|c| c.as_os_str()));
    args.extend([
        "--model".as_ref(),
        model_dir.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    args.extend(["--output".as_ref(), out.as_os_str()]);
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    izwi(&args);
    let (mut errors, mut reference_words) = (0, 0);
    for clip in &clips {
        let stem = clip
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let reference =
            std::fs::read_to_string(clip.with_extension("txt")).expect("reference text");
        let json =
            std::fs::read_to_string(out.join(format!("{stem}.json"))).expect("transcript written");
        let transcript: Value = serde_json::from_str(&json).expect("JSON transcript");
        check_segments(&transcript);
        let (r, h) = (
            words(&reference),
            words(transcript["text"].as_str().expect("text")),
        );
        let e = word_errors(&r, &h);
        eprintln!("{model} {stem}: {e} errors / {} words", r.len());
        errors += e;
        reference_words += r.len();
    }
    let _ = std::fs::remove_dir_all(&out);
    errors as f64 / reference_words as f64
}

/// tiny.en's held rate is with beam search: greedy decoding (the default) writes
/// "coldhearted" for "cold hearted" on one clip, two errors more (8.45 %; faster-whisper's
/// greedy decoding, on its own features, writes "cold-hearted"). The default is held to
/// faster-whisper's errors below.
#[test]
fn tiny_en_word_error_rate_on_librivox_is_at_most_6_percent() {
    let wer = librivox_wer("whisper-tiny.en", &["--beam-size", "5"]);
    eprintln!("whisper-tiny.en LibriVox WER {:.2}%", wer * 100.0);
    assert!(wer <= 0.06, "WER {:.2}%", wer * 100.0);
}

#[test]
fn base_word_error_rate_on_librivox_is_at_most_4_percent() {
    let wer = librivox_wer("whisper-base", &[]);
    eprintln!("whisper-base LibriVox WER {:.2}%", wer * 100.0);
    assert!(wer <= 0.04, "WER {:.2}%", wer * 100.0);
}

/// The five clips joined and repeated past 60 s: several windows cut at silence and
/// decoded concurrently, stitched back with absolute timestamps.
#[test]
fn long_audio_is_windowed_and_stitched_in_order() {
    let clips = librivox_clips();
    let (mut samples, mut reference) = (Vec::new(), String::new());
    while samples.len() < 65 * 16_000 {
        for clip in &clips {
            samples.extend(izwi_audio::load_for_asr(clip).expect("clip decodes"));
            samples.extend(std::iter::repeat_n(0.0, 8_000));
            reference.push_str(&std::fs::read_to_string(clip.with_extension("txt")).expect("text"));
            reference.push(' ');
        }
    }
    let joined = std::env::temp_dir().join(format!("izwi-long-{}.wav", std::process::id()));
    izwi_audio::write_wav(&joined, &samples, 16_000).expect("WAV written");
    let model = asset("models/whisper-base");
    let transcript = transcribe_json(&joined, &model);
    let _ = std::fs::remove_file(&joined);
    check_segments(&transcript);
    let segments = transcript["segments"].as_array().expect("segments");
    let last_end = segments
        .last()
        .and_then(|s| s["end"].as_f64())
        .unwrap_or(0.0);
    assert!(
        last_end > 55.0,
        "segments reach the end of the audio, not {last_end} s"
    );
    let (r, h) = (
        words(&reference),
        words(transcript["text"].as_str().expect("text")),
    );
    let wer = word_errors(&r, &h) as f64 / r.len() as f64;
    eprintln!(
        "whisper-base joined LibriVox ({:.0} s) WER {:.2}%",
        samples.len() as f64 / 16_000.0,
        wer * 100.0
    );
    assert!(wer <= 0.06, "WER {:.2}%", wer * 100.0);
}

/// The clips joined and repeated 3× (74 s), as `izwi bench whisper` transcribes them:
/// with the defaults, no more word errors than faster-whisper 1.2.1 makes on the same
/// file with its batched pipeline, greedy, on the same weights (6 of 213 words with
/// tiny.en and with base, measured with `izwi bench whisper --runs 1
/// --python PY` where PY has faster-whisper).
#[test]
fn defaults_make_no_more_word_errors_than_faster_whisper_on_74_seconds() {
    const FASTER_WHISPER_ERRORS: usize = 6;
    let clips = librivox_clips();
    let (mut joined, mut reference) = (Vec::new(), String::new());
    for clip in &clips {
        joined.extend(izwi_audio::load_for_asr(clip).expect("clip decodes"));
        reference.push_str(&std::fs::read_to_string(clip.with_extension("txt")).expect("text"));
        reference.push(' ');
    }
    let samples = joined.repeat(3);
    let reference = reference.repeat(3);
    let path = std::env::temp_dir().join(format!("izwi-lv74-{}.wav", std::process::id()));
    izwi_audio::write_wav(&path, &samples, 16_000).expect("WAV written");
    for model in ["whisper-tiny.en", "whisper-base"] {
        let transcript = transcribe_json(&path, &asset(&format!("models/{model}")));
        check_segments(&transcript);
        let errors = word_errors(
            &words(&reference),
            &words(transcript["text"].as_str().expect("text")),
        );
        eprintln!("{model} on 74 s: {errors} word errors");
        assert!(
            errors <= FASTER_WHISPER_ERRORS,
            "{model}: {errors} word errors, faster-whisper makes {FASTER_WHISPER_ERRORS}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// Silence and faint noise give no text, not a hallucination.
#[test]
fn silence_gives_no_text() {
    let mut state = 12345u32;
    let noise: Vec<f32> = (0..10 * 16_000)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 * 2e-4 - 1e-4
        })
        .collect();
    let path = std::env::temp_dir().join(format!("izwi-silence-{}.wav", std::process::id()));
    izwi_audio::write_wav(&path, &noise, 16_000).expect("WAV written");
    let model = asset("models/whisper-tiny.en");
    let transcript = transcribe_json(&path, &model);
    let _ = std::fs::remove_file(&path);
    assert_eq!(transcript["text"], "", "{transcript}");
}

/// 20 s of silence, then 10 s of a chord with harmonics swelling and fading like a
/// held note: music, not speech. The VAD finds no speech, so nothing is decoded and no
/// words are invented.
#[test]
fn silence_and_music_give_no_words() {
    let rate = 16_000.0;
    let mut samples = vec![0f32; 20 * 16_000];
    samples.extend((0..10 * 16_000).map(|i| {
        let t = i as f64 / rate;
        let envelope = (std::f64::consts::PI * t / 10.0).sin();
        let note = |f: f64| {
            (1..=4)
                .map(|h| (2.0 * std::f64::consts::PI * f * h as f64 * t).sin() / h as f64)
                .sum::<f64>()
        };
        (0.1 * envelope * (note(220.0) + note(277.2) + note(329.6))) as f32
    }));
    let path = std::env::temp_dir().join(format!("izwi-music-{}.wav", std::process::id()));
    izwi_audio::write_wav(&path, &samples, 16_000).expect("WAV written");
    for model in ["models/whisper-tiny.en", "models/whisper-base"] {
        let transcript = transcribe_json(&path, &asset(model));
        assert_eq!(transcript["text"], "", "{model}: {transcript}");
        assert_eq!(transcript["segments"], serde_json::json!([]), "{model}");
    }
    let _ = std::fs::remove_file(&path);
}

/// The five LibriVox clips (.wav, their references beside them as .txt), in order.
fn librivox_clips() -> Vec<PathBuf> {
    let dir = asset("speech/librivox");
    let mut clips: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("librivox folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wav"))
        .collect();
    clips.sort();
    assert_eq!(clips.len(), 5, "five LibriVox clips in {}", dir.display());
    clips
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("izwi-test-{name}-{}", std::process::id()))
}
