//! The voice library through `izwi serve`, as OpenAI's custom voices API shapes it, on
//! the tiny random-weight Qwen3-TTS checkpoint of izwi-core's fixtures (imported as a
//! Base model, and a copy whose config says VoiceDesign): a voice cloned from an uploaded
//! recording and a voice made from a prompt, listed, then speaking through
//! `/v1/audio/speech` exactly as the same voices do through `izwi speak`; errors in
//! OpenAI's shape, after which the server still answers, and no upload left behind.
//! Random weights say nothing intelligible: this checks the path, not the voice.

use std::path::Path;
use std::process::Stdio;

use base64::Engine;
use izwi_test_support::cli::Izwi;
use izwi_test_support::fixtures::{qwen3_tts_tiny as fixture, qwen3_tts_variant};
use izwi_test_support::serve::Server;
use reqwest::blocking::{multipart, Client};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

/// Two seconds of a 160 Hz hum at 16 kHz.
fn recording(path: &Path) {
    let samples: Vec<f32> = (0..32_000)
        .map(|n| 0.3 * (2.0 * std::f32::consts::PI * 160.0 * n as f32 / 16_000.0).sin())
        .collect();
    izwi_runtime::write_wav(path, &samples, 16_000).unwrap();
}

fn client() -> Client {
    Client::builder()
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .unwrap()
}

/// `POST /v1/audio/voices` with a multipart form of `fields` and, when given, the
/// recording as `audio_sample`.
fn create(server: &Server, fields: &[(&str, &str)], sample: Option<&Path>) -> (u16, Value) {
    let mut form = multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    if let Some(sample) = sample {
        form = form.file("audio_sample", sample).expect("reads the file");
    }
    let response = client()
        .post(server.url("/v1/audio/voices"))
        .multipart(form)
        .send()
        .expect("answers");
    (response.status().as_u16(), response.json().expect("JSON"))
}

/// The 16-bit samples of `/v1/audio/speech` saying `input` in `voice`.
fn speech(server: &Server, body: Value) -> Vec<i16> {
    let response = client()
        .post(server.url("/v1/audio/speech"))
        .json(&body)
        .send()
        .expect("answers");
    assert_eq!(response.status().as_u16(), 200, "{:?}", response.text());
    let bytes = response.bytes().unwrap();
    // A streamed WAV: a 44-byte header with open lengths, then the samples.
    bytes[44..]
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// The samples `izwi speak` writes for the same request.
fn spoken(data: &Izwi, args: &[&str]) -> Vec<i16> {
    let out = data.path("spoken.wav");
    // Each call replaces the WAV the last one made.
    let mut all = vec!["speak", "--force", "--output", out.to_str().unwrap()];
    all.extend(args);
    data.ok(&all);
    hound::WavReader::open(&out)
        .unwrap()
        .samples()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn voices_are_cloned_and_designed_through_the_api_and_speak() {
    let data = Izwi::new(BIN);
    data.import(&fixture(), &["--name", "qwen"]);
    let design = qwen3_tts_variant(data.folder(), "voice_design");
    data.import(&design, &["--name", "design"]);
    let sample = data.path("me.wav");
    recording(&sample);
    let server = Server::spawn(data.command().stderr(Stdio::inherit()), &[]);

    let (status, me) = create(
        &server,
        &[
            ("name", "Me"),
            ("model", "local/qwen"),
            ("text", "A low hum."),
            ("consent", "cons_1234"),
        ],
        Some(&sample),
    );
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["object"], "audio.voice");
    assert_eq!(me["type"], "audio_sample");
    assert_eq!(me["name"], "Me");
    assert_eq!(me["model"], "local/qwen");
    assert_eq!(me["text"], "A low hum.");

    // A prompt voice as JSON, as OpenAI's client sends it.
    let response = client()
        .post(server.url("/v1/audio/voices"))
        .json(&json!({
            "type": "prompt",
            "name": "Calm",
            "prompt": "a calm, low voice",
            "model": "local/design",
        }))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let calm: Value = response.json().unwrap();
    assert_eq!(calm["type"], "prompt");
    assert_eq!(calm["prompt"], "a calm, low voice");

    let listed: Value = client()
        .get(server.url("/v1/audio/voices"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(listed["object"], "list");
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Me") && names.contains(&"Calm"), "{listed}");

    // Both speak. The API takes no seed and the voices sample, so their audio is not
    // compared; that the API's clone is the library's own is checked through
    // `izwi speak` below.
    let said = speech(
        &server,
        json!({"model": "tts-1", "voice": me["id"], "input": "Hello in my voice."}),
    );
    assert!(said.len() >= 1920, "{} samples", said.len());
    let said = speech(
        &server,
        json!({"model": "local/design", "voice": "Calm", "input": "Hello, calmly."}),
    );
    assert!(said.len() >= 1920, "{} samples", said.len());
    // The library the API wrote is the one `izwi speak` reads.
    let by_name = spoken(&data, &["--voice", "Me", "--seed", "3", "--text", "Hi."]);
    let by_id = spoken(
        &data,
        &[
            "--voice",
            me["id"].as_str().unwrap(),
            "--seed",
            "3",
            "--text",
            "Hi.",
        ],
    );
    assert!(by_name == by_id && !by_name.is_empty());

    // Errors in OpenAI's shape; the server still answers after them.
    let bad_audio = data.path("notes.txt");
    std::fs::write(&bad_audio, "not audio").unwrap();
    for (fields, file, param) in [
        (
            vec![("name", "X"), ("model", "local/qwen")],
            None,
            "audio_sample",
        ),
        (
            vec![("model", "local/qwen")],
            Some(sample.as_path()),
            "name",
        ),
        (vec![("name", "X")], Some(sample.as_path()), "model"),
        (
            vec![("name", "X"), ("model", "local/qwen")],
            Some(bad_audio.as_path()),
            "file",
        ),
        (
            vec![("name", "X"), ("model", "local/qwen"), ("type", "song")],
            Some(sample.as_path()),
            "type",
        ),
    ] {
        let (status, body) = create(&server, &fields, file);
        assert_eq!(status, 400, "{fields:?}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert_eq!(body["error"]["param"], param, "{fields:?}: {body}");
    }
    // A Base model does not design, nor a VoiceDesign model clone: said by name.
    let (status, body) = create(
        &server,
        &[("name", "X"), ("model", "local/design")],
        Some(&sample),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("only a Base checkpoint clones"),
        "{body}"
    );
    let (status, body) = create(
        &server,
        &[
            ("type", "prompt"),
            ("name", "X"),
            ("model", "local/qwen"),
            ("prompt", "bright"),
        ],
        None,
    );
    assert_eq!(status, 400, "{body}");
    let listed: Value = client()
        .get(server.url("/v1/audio/voices"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "{listed}");
    // A voice the speech request makes itself, in vLLM-Omni's fields (what a remote
    // Izwi sends): a design speaks; what cannot be used is refused by name.
    let designed = speech(
        &server,
        json!({"model": "local/design", "voice": "anyone", "input": "Hello.",
               "task_type": "VoiceDesign", "instructions": "a bright voice"}),
    );
    assert!(!designed.is_empty());
    // A clone asked for as Izwi's remote client asks (`tts-1`): with a Base and a
    // VoiceDesign model installed, the Base one clones.
    let hum = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&sample).unwrap());
    let cloned = speech(
        &server,
        json!({"model": "tts-1", "voice": "x", "input": "Hello.", "task_type": "Base",
               "ref_audio": format!("data:audio/wav;base64,{hum}"), "ref_text": "A low hum."}),
    );
    assert!(!cloned.is_empty());
    for (body, param, says) in [
        (
            json!({"model": "local/qwen", "voice": "x", "input": "Hi.",
                   "ref_audio": "https://example.com/me.wav"}),
            "ref_audio",
            "fetches no URLs",
        ),
        (
            json!({"model": "local/qwen", "voice": "x", "input": "Hi.", "task_type": "Song"}),
            "task_type",
            "not a task",
        ),
        (
            json!({"model": "tts-1", "voice": "x", "input": "Hi.", "task_type": "CustomVoice"}),
            "model",
            "no Qwen3-TTS CustomVoice model is installed",
        ),
        (
            json!({"model": "local/qwen", "voice": "x", "input": "Hi.",
                   "task_type": "VoiceDesign"}),
            "instructions",
            "give them",
        ),
    ] {
        let response = client()
            .post(server.url("/v1/audio/speech"))
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{body}");
        let error: Value = response.json().unwrap();
        assert_eq!(error["error"]["param"], param, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }

    // Every upload was let go: the clone keeps its own copy in the voices folder.
    let uploads = data.data_dir().join("uploads");
    let left: Vec<_> = std::fs::read_dir(&uploads)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
