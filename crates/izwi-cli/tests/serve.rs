//! `izwi serve`, Izwi's OpenAI-compatible API, as a real process on 127.0.0.1 with the
//! real models of scripts/fetch-assets.sh imported (tiny.en, the joe voice, SmolLM2):
//! every transcription format, speech as WAV and PCM (transcribed back), chat completions
//! whole and streamed, errors in OpenAI's shape (after which the server still answers),
//! the API key, foreign Host and Origin refused, and each request a job in the history.
//! tests/fixtures/openai_contract.py runs the same against the official `openai` client.

use std::path::Path;
use std::process::{Command, Stdio};

use izwi_test_support::asset;
use izwi_test_support::cli::Izwi;
use izwi_test_support::jfk_repeated;
use izwi_test_support::serve::Server;
use reqwest::blocking::{multipart, Client};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

const JFK: &str = "ask not what your country can do for you";

/// A data folder with the test models imported; the library voice's id.
fn data_with_models(data: &Izwi) -> String {
    for model in [
        asset("models/whisper-tiny.en"),
        asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
    ] {
        data.ok(&["models", "import", &model.display().to_string()]);
    }
    let gguf = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    data.import(&gguf, &["--name", "smollm2"]);
    let voices: Value = serde_json::from_str(&data.ok(&["voices", "list", "--json"])).unwrap();
    voices[0]["id"].to_string()
}

/// `izwi serve ARGS` on the data folder `data`, its log on the test's standard error.
fn serve(data: &Izwi, args: &[&str]) -> Server {
    Server::spawn(data.command().stderr(Stdio::inherit()), args)
}

fn client() -> Client {
    Client::builder()
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .unwrap()
}

fn transcribe(
    server: &Server,
    file: &Path,
    fields: &[(&str, &str)],
) -> reqwest::blocking::Response {
    let mut form = multipart::Form::new()
        .file("file", file)
        .expect("reads the file");
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    client()
        .post(server.url("/v1/audio/transcriptions"))
        .multipart(form)
        .send()
        .expect("answers")
}

/// An OpenAI-shaped error: its status, type and param.
fn assert_error(response: reqwest::blocking::Response, status: u16, kind: &str) -> Value {
    assert_eq!(response.status().as_u16(), status);
    let body: Value = response.json().expect("a JSON error");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body
}

#[test]
fn the_api_answers_as_openai_does() {
    let data = Izwi::new(BIN);
    let voice = data_with_models(&data);
    let server = serve(&data, &[]);
    let jfk = asset("speech/jfk.wav");

    let models: Value = client()
        .get(server.url("/v1/models"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    for id in [
        "local/whisper-tiny.en",
        "local/smollm2",
        "whisper-1",
        "tts-1",
    ] {
        assert!(ids.contains(&id), "{id} not in {ids:?}");
        let one: Value = client()
            .get(server.url(&format!("/v1/models/{id}")))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(one["id"], id);
        assert_eq!(one["object"], "model");
    }
    let body = assert_error(
        client()
            .get(server.url("/v1/models/local/nothing"))
            .send()
            .unwrap(),
        404,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["code"], "model_not_found");
    // A model file on the server's disk that is not in its library: a client cannot
    // make the server open it, nor learn that it is there.
    let on_disk = asset("models/whisper-base").display().to_string();
    let body = assert_error(
        transcribe(&server, &jfk, &[("model", &on_disk)]),
        404,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["code"], "model_not_found");
    let body = assert_error(
        client()
            .get(server.url(&format!("/v1/models/{on_disk}")))
            .send()
            .unwrap(),
        404,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["code"], "model_not_found");

    // Every format.
    let json: Value = transcribe(&server, &jfk, &[("model", "whisper-1")])
        .json()
        .unwrap();
    assert!(
        json["text"].as_str().unwrap().to_lowercase().contains(JFK),
        "{json}"
    );
    let text = transcribe(
        &server,
        &jfk,
        &[
            ("model", "local/whisper-tiny.en"),
            ("response_format", "text"),
        ],
    );
    assert!(text.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(text.text().unwrap().to_lowercase().contains(JFK));
    let srt = transcribe(
        &server,
        &jfk,
        &[("model", "whisper-1"), ("response_format", "srt")],
    )
    .text()
    .unwrap();
    assert!(srt.starts_with("1\n00:00:00,000 --> "), "{srt}");
    let vtt = transcribe(
        &server,
        &jfk,
        &[("model", "whisper-1"), ("response_format", "vtt")],
    )
    .text()
    .unwrap();
    assert!(vtt.starts_with("WEBVTT"), "{vtt}");
    let verbose: Value = transcribe(
        &server,
        &jfk,
        &[("model", "whisper-1"), ("response_format", "verbose_json")],
    )
    .json()
    .unwrap();
    assert_eq!(verbose["task"], "transcribe");
    assert!(
        (verbose["duration"].as_f64().unwrap() - 11.0).abs() < 0.5,
        "{verbose}"
    );
    let segments = verbose["segments"].as_array().unwrap();
    assert!(
        !segments.is_empty()
            && segments
                .iter()
                .all(|s| s["end"].as_f64() >= s["start"].as_f64())
    );
    // Words asked for: a `words` list as OpenAI's, without segments unless asked too.
    let worded: Value = transcribe(
        &server,
        &jfk,
        &[
            ("model", "whisper-1"),
            ("response_format", "verbose_json"),
            ("timestamp_granularities[]", "word"),
        ],
    )
    .json()
    .unwrap();
    assert!(worded.get("segments").is_none(), "{worded}");
    let words = worded["words"].as_array().unwrap();
    let spoken: Vec<&str> = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(spoken[..3], ["And", "so", "my"], "{worded}");
    assert!(words
        .windows(2)
        .all(|w| w[0]["end"].as_f64() <= w[1]["end"].as_f64()));
    let body = assert_error(
        transcribe(
            &server,
            &jfk,
            &[
                ("model", "whisper-1"),
                ("timestamp_granularities[]", "word"),
            ],
        ),
        400,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["param"], "timestamp_granularities");

    // Bad requests: OpenAI's shape, the field named, and the server still answers.
    let not_audio = data.path("notes.wav");
    std::fs::write(&not_audio, b"this is not a WAV file at all").unwrap();
    let body = assert_error(
        transcribe(&server, &not_audio, &[("model", "whisper-1")]),
        400,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["param"], "file");
    let body = assert_error(transcribe(&server, &jfk, &[]), 400, "invalid_request_error");
    assert_eq!(body["error"]["param"], "model");
    let body = assert_error(
        transcribe(&server, &jfk, &[("model", "local/smollm2")]),
        404,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["code"], "model_not_found");
    // Refused before a job is made, not failed in one: English-only model, French asked.
    let body = assert_error(
        transcribe(&server, &jfk, &[("model", "whisper-1"), ("language", "fr")]),
        400,
        "invalid_request_error",
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("English-only"),
        "{body}"
    );
    assert_error(
        transcribe(
            &server,
            &jfk,
            &[("model", "whisper-1"), ("response_format", "mp3")],
        ),
        400,
        "invalid_request_error",
    );
    assert_error(
        client()
            .post(server.url("/v1/audio/speech"))
            .body("{not json")
            .header("content-type", "application/json")
            .send()
            .unwrap(),
        400,
        "invalid_request_error",
    );
    // A field of the wrong type is a bad request too, as OpenAI answers it.
    assert_error(
        client()
            .post(server.url("/v1/audio/speech"))
            .json(&serde_json::json!({"model": "tts-1", "input": "Hi.", "voice": {"id": 1}}))
            .send()
            .unwrap(),
        400,
        "invalid_request_error",
    );
    assert_error(
        client().get(server.url("/v1/nothing")).send().unwrap(),
        404,
        "invalid_request_error",
    );
    assert!(client()
        .get(server.url("/v1/models"))
        .send()
        .unwrap()
        .status()
        .is_success());

    // Speech, as WAV and as 24 kHz PCM, heard back by Whisper.
    let said = "The museum opens at nine in the morning.";
    let speak = |format: &str| {
        client()
            .post(server.url("/v1/audio/speech"))
            .json(&json!({ "model": "tts-1", "input": said, "voice": voice.trim_matches('"'), "response_format": format }))
            .send()
            .unwrap()
    };
    let wav = speak("wav");
    assert_eq!(wav.headers()["content-type"], "audio/wav");
    let wav = wav.bytes().unwrap();
    // Streamed with its lengths left open, as OpenAI's: then the job's WAV, sample for
    // sample.
    assert_eq!(&wav[..4], b"RIFF");
    assert_eq!(&wav[4..8], &u32::MAX.to_le_bytes());
    assert_eq!(&wav[36..44], b"data\xff\xff\xff\xff");
    let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
    let saved = hound::WavReader::open(jobs[0]["output"].as_str().unwrap()).unwrap();
    let rate = saved.spec().sample_rate;
    let saved: Vec<i16> = saved.into_samples().map(Result::unwrap).collect();
    let streamed: Vec<i16> = wav[44..]
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), rate);
    assert!(
        streamed == saved,
        "{} vs {} samples",
        streamed.len(),
        saved.len()
    );
    let wav_path = data.path("said.wav");
    std::fs::write(&wav_path, &wav).unwrap();
    let heard: Value = transcribe(&server, &wav_path, &[("model", "whisper-1")])
        .json()
        .unwrap();
    let heard = heard["text"].as_str().unwrap().to_lowercase();
    assert!(
        heard.contains("museum") && (heard.contains("nine") || heard.contains(" 9 ")),
        "{heard}"
    );
    let pcm = speak("pcm").bytes().unwrap();
    let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
    let saved = hound::WavReader::open(jobs[0]["output"].as_str().unwrap()).unwrap();
    assert!(
        pcm_samples(&pcm) == at_24khz(saved),
        "the PCM is the job's WAV at 24 kHz"
    );
    let body = assert_error(
        client()
            .post(server.url("/v1/audio/speech"))
            .json(&json!({ "model": "tts-1", "input": said, "voice": "/etc/passwd" }))
            .send()
            .unwrap(),
        400,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["param"], "voice");

    // Chat, whole and streamed.
    let question = json!([
        { "role": "system", "content": "You are a helpful assistant. Answer in one short sentence." },
        { "role": "user", "content": "What is the capital of France?" },
    ]);
    let whole: Value = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({ "model": "local/smollm2", "messages": question, "max_tokens": 48 }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["choices"][0]["message"]["role"], "assistant");
    let reply = whole["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(reply.contains("Paris"), "{whole}");
    let stream = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({ "model": "local/smollm2", "messages": question, "max_tokens": 48, "stream": true }))
        .send()
        .unwrap();
    assert!(stream.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events: Vec<String> = stream
        .text()
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").map(str::to_owned))
        .collect();
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, reply, "greedy: the same reply whole and streamed");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    let body = assert_error(
        client()
            .post(server.url("/v1/chat/completions"))
            .json(&json!({ "model": "local/whisper-tiny.en", "messages": question }))
            .send()
            .unwrap(),
        404,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["code"], "model_not_found");

    // Every transcription and speech is a job in the history, as the app's are.
    drop(server);
    let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
    let kinds: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "transcribe").count(),
        7,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "speak").count(),
        2,
        "{kinds:?}"
    );
    // Chat completions too: the question the job's input, the reply its output.
    let chats: Vec<&Value> = jobs
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["kind"] == "chat")
        .collect();
    assert_eq!(chats.len(), 2, "{kinds:?}");
    for job in chats {
        assert_eq!(job["status"], "done", "{job}");
        assert_eq!(job["input"], "What is the capital of France?");
        assert_eq!(job["output"].as_str(), Some(reply), "{job}");
        assert_eq!(job["model_id"], "local/smollm2");
    }
}

#[test]
fn keys_hosts_and_origins_are_checked() {
    let data = Izwi::new(BIN);
    let server = serve(
        &data,
        &[
            "--api-key",
            "s3cret",
            "--allow-origin",
            "http://localhost:5173",
        ],
    );
    let models = || client().get(server.url("/v1/models"));
    let body = assert_error(models().send().unwrap(), 401, "authentication_error");
    assert_eq!(body["error"]["code"], "invalid_api_key");
    assert_error(
        models().bearer_auth("wrong").send().unwrap(),
        401,
        "authentication_error",
    );
    assert!(models()
        .bearer_auth("s3cret")
        .send()
        .unwrap()
        .status()
        .is_success());
    // A page whose DNS name was re-pointed at 127.0.0.1 sends its own name as Host.
    assert_error(
        models()
            .bearer_auth("s3cret")
            .header("host", "evil.example")
            .send()
            .unwrap(),
        403,
        "permission_error",
    );
    // A page of another origin, even with the key.
    assert_error(
        models()
            .bearer_auth("s3cret")
            .header("origin", "http://evil.example")
            .send()
            .unwrap(),
        403,
        "permission_error",
    );
    let allowed = models()
        .bearer_auth("s3cret")
        .header("origin", "http://localhost:5173")
        .send()
        .unwrap();
    assert!(allowed.status().is_success());
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
}

#[test]
fn listening_beyond_this_machine_needs_a_key() {
    let data = Izwi::new(BIN);
    let out = data
        .command()
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("IZWI_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--api-key"), "{err}");
}

/// The official client, pinned, in a venv kept in the build's scratch folder.
const OPENAI_CLIENT: &str = "openai==3.57.0";

fn openai_python() -> std::path::PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("openai-venv");
    let python = venv.join(if cfg!(windows) {
        "Scripts/python.exe"
    } else {
        "bin/python"
    });
    let installed = venv.join(format!(".izwi-{OPENAI_CLIENT}"));
    if !installed.exists() {
        let run = |cmd: &mut Command| {
            let status = cmd.status().expect("runs");
            assert!(status.success(), "{cmd:?}");
        };
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python).args(["-m", "pip", "install", "-q", OPENAI_CLIENT]));
        std::fs::write(&installed, b"").unwrap();
    }
    python
}

#[test]
fn the_official_openai_client_gets_what_openai_would_give() {
    let python = openai_python();
    let data = Izwi::new(BIN);
    let voice = data_with_models(&data);
    let reading = librivox_reading(data.folder());
    let server = serve(&data, &["--api-key", "contract-key"]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/openai_contract.py");
    let out = Command::new(python)
        .arg(script)
        .arg(server.url("/v1"))
        .arg("contract-key")
        .arg(voice.trim_matches('"'))
        .arg(asset("speech/jfk.wav"))
        .arg(reading)
        .output()
        .expect("python runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("every check passed"), "{said}");
}

/// Eleven minutes of speech: far longer to transcribe than a few seconds.
#[test]
fn a_client_that_goes_away_cancels_its_job() {
    let data = Izwi::new(BIN);
    data.import(&asset("models/whisper-tiny.en"), &[]);
    let gguf = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    data.import(&gguf, &["--name", "smollm2"]);
    let long = jfk_repeated(&data.path("long.wav"), 60);

    let server = serve(&data, &[]);
    let form = multipart::Form::new()
        .file("file", &long)
        .unwrap()
        .text("model", "whisper-1");
    let gone = Client::builder()
        .timeout(std::time::Duration::from_secs(3))
        .build()
        .unwrap()
        .post(server.url("/v1/audio/transcriptions"))
        .multipart(form)
        .send();
    assert!(
        gone.is_err_and(|e| e.is_timeout()),
        "the client gave up waiting"
    );
    // The job it left is cancelled, not run to its end for no one.
    let status = || -> Option<String> {
        let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
        jobs[0]["status"].as_str().map(str::to_owned)
    };
    let started = std::time::Instant::now();
    while status().as_deref() != Some("cancelled") {
        // A guard against hanging, not a speed check.
        assert!(started.elapsed().as_secs() < 120, "{:?}", status());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // So is a chat job whose client stops reading its stream: the reply is aborted.
    let mut stream = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({
            "model": "local/smollm2",
            "messages": [{ "role": "user", "content": "Count from one to one thousand in words." }],
            "max_tokens": 1000,
            "stream": true,
        }))
        .send()
        .unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(&mut stream, &mut first).unwrap();
    assert_eq!(&first, b"data: ");
    drop(stream);
    let chat_job = || -> Value {
        let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
        jobs[0].clone()
    };
    let started = std::time::Instant::now();
    while chat_job()["status"] != "cancelled" {
        // A guard against hanging, not a speed check.
        assert!(started.elapsed().as_secs() < 120, "{}", chat_job());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(chat_job()["kind"], "chat");
}

#[test]
fn requests_beyond_the_limit_are_refused_until_a_stream_is_sent() {
    let data = Izwi::new(BIN);
    data.import(&asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"), &[]);
    let voices: Value = serde_json::from_str(&data.ok(&["voices", "list", "--json"])).unwrap();
    let voice = voices[0]["id"].to_string();
    let server = serve(&data, &["--max-requests", "1"]);
    let text: Vec<String> = (1..=12)
        .map(|i| format!("This is sentence number {i}."))
        .collect();
    let mut stream = client()
        .post(server.url("/v1/audio/speech"))
        .json(&json!({ "model": "tts-1", "input": text.join(" "), "voice": voice, "response_format": "pcm" }))
        .send()
        .unwrap();
    assert!(stream.status().is_success());
    let mut first = [0u8; 2];
    std::io::Read::read_exact(&mut stream, &mut first).expect("the first sentence comes");
    // The stream is one request until all of it is sent: another is refused meanwhile.
    let body = assert_error(
        client().get(server.url("/v1/models")).send().unwrap(),
        429,
        "rate_limit_error",
    );
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut rest).unwrap();
    assert!(
        rest.len() > 24_000 * 2 * 10,
        "about two seconds of speech a sentence"
    );
    // The permit goes back as the body ends; the server may take a moment to see it.
    let started = std::time::Instant::now();
    while !client()
        .get(server.url("/v1/models"))
        .send()
        .unwrap()
        .status()
        .is_success()
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "the permit was never given back"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The LibriVox clips eight times over, a second and a half of silence after each: over
/// four minutes of speech, cut into nine windows of up to 30 s. At most six windows are
/// transcribed at once, so the first is done before the last ones start.
fn librivox_reading(dir: &Path) -> std::path::PathBuf {
    let mut clips: Vec<_> = std::fs::read_dir(asset("speech/librivox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wav"))
        .collect();
    clips.sort();
    let path = dir.join("reading.wav");
    let spec = hound::WavReader::open(&clips[0]).unwrap().spec();
    let mut writer = hound::WavWriter::create(&path, spec).unwrap();
    for round in 0..8 {
        // Each round in another order, so no two windows are alike.
        let turn = round % clips.len();
        clips.rotate_left(turn);
        for clip in &clips {
            let mut reader = hound::WavReader::open(clip).unwrap();
            for s in reader.samples::<i16>() {
                writer.write_sample(s.unwrap()).unwrap();
            }
            for _ in 0..spec.sample_rate * 3 / 2 {
                writer.write_sample(0i16).unwrap();
            }
        }
    }
    writer.finalize().unwrap();
    path
}

/// A server-sent events body's `data:` payloads.
fn sse_data(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("JSON events"))
        .collect()
}

#[test]
fn a_streamed_transcription_sends_its_text_in_order_as_it_comes() {
    let data = Izwi::new(BIN);
    data.import(&asset("models/whisper-tiny.en"), &[]);
    let reading = librivox_reading(data.folder());
    let server = serve(&data, &[]);
    let whole: Value = transcribe(&server, &reading, &[("model", "whisper-1")])
        .json()
        .unwrap();
    let whole = whole["text"].as_str().unwrap();
    assert!(whole.to_lowercase().contains("amiable himself"), "{whole}");

    for format in ["json", "text"] {
        let stream = transcribe(
            &server,
            &reading,
            &[
                ("model", "whisper-1"),
                ("stream", "true"),
                ("response_format", format),
            ],
        );
        assert!(stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        let events = sse_data(&stream.text().unwrap());
        let (done, deltas) = events.split_last().expect("events");
        assert_eq!(done["type"], "transcript.text.done", "{done}");
        assert_eq!(done["text"], whole, "the same text as asked whole");
        assert!(deltas.len() >= 2, "deltas as windows finish: {deltas:?}");
        let joined: String = deltas
            .iter()
            .map(|d| {
                assert_eq!(d["type"], "transcript.text.delta", "{d}");
                d["delta"].as_str().unwrap()
            })
            .collect();
        // Windows finish out of order: the deltas, joined, still read in order.
        assert_eq!(joined, whole);
    }

    let body = assert_error(
        transcribe(
            &server,
            &reading,
            &[
                ("model", "whisper-1"),
                ("stream", "true"),
                ("response_format", "srt"),
            ],
        ),
        400,
        "invalid_request_error",
    );
    assert_eq!(body["error"]["param"], "stream");

    // Translations stream the same way (a multilingual model).
    data.import(&asset("models/whisper-base"), &[]);
    let form = multipart::Form::new()
        .file("file", asset("speech/jfk.wav"))
        .unwrap()
        .text("model", "local/whisper-base")
        .text("stream", "true");
    let events = sse_data(
        &client()
            .post(server.url("/v1/audio/translations"))
            .multipart(form)
            .send()
            .unwrap()
            .text()
            .unwrap(),
    );
    let (done, deltas) = events.split_last().expect("events");
    assert_eq!(done["type"], "transcript.text.done", "{done}");
    let joined: String = deltas.iter().filter_map(|d| d["delta"].as_str()).collect();
    assert!(!deltas.is_empty() && joined == done["text"], "{events:?}");
    assert!(joined.to_lowercase().contains("your country"), "{joined}");
}

#[test]
fn a_request_that_runs_out_of_time_gets_504_and_its_job_is_cancelled() {
    let data = Izwi::new(BIN);
    data.import(&asset("models/whisper-tiny.en"), &[]);
    let long = jfk_repeated(&data.path("long.wav"), 60);
    // Time enough to take the upload, not to transcribe it.
    let server = serve(&data, &["--request-timeout", "5"]);
    let body = assert_error(
        transcribe(&server, &long, &[("model", "whisper-1")]),
        504,
        "server_error",
    );
    assert_eq!(body["error"]["code"], "timeout");
    // The job is cancelled, and the history says why.
    let job = || -> Value {
        let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
        jobs[0].clone()
    };
    let started = std::time::Instant::now();
    while job()["status"] != "cancelled" {
        // A guard against hanging, not a speed check.
        assert!(started.elapsed().as_secs() < 120, "{}", job());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        job()["error"]
            .as_str()
            .is_some_and(|e| e.contains("timed out")),
        "{}",
        job()
    );

    // A streamed answer still going at the deadline is cut off, its job cancelled too.
    let stream = transcribe(
        &server,
        &long,
        &[("model", "whisper-1"), ("stream", "true")],
    );
    assert_eq!(stream.status().as_u16(), 200);
    assert!(stream.text().is_err(), "the stream ends unfinished");
    let started = std::time::Instant::now();
    while job()["status"] != "cancelled" {
        assert!(started.elapsed().as_secs() < 120, "{}", job());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(client()
        .get(server.url("/v1/models"))
        .send()
        .unwrap()
        .status()
        .is_success());
}

/// 16-bit little-endian PCM's samples.
fn pcm_samples(bytes: &[u8]) -> Vec<i16> {
    bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// A speak job's WAV file as the `pcm` format sends it: resampled to 24 kHz.
fn at_24khz(wav: hound::WavReader<std::io::BufReader<std::fs::File>>) -> Vec<i16> {
    let rate = wav.spec().sample_rate;
    let samples: Vec<f32> = wav
        .into_samples::<i16>()
        .map(|s| f32::from(s.unwrap()) / 32767.0)
        .collect();
    let resampled = izwi_audio::resample(&samples, rate, 24_000).unwrap();
    pcm_samples(&izwi_audio::pcm16_bytes(&resampled))
}

#[test]
fn a_client_that_falls_behind_gets_the_rest_from_the_jobs_file() {
    let data = Izwi::new(BIN);
    data.import(&asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"), &[]);
    let voices: Value = serde_json::from_str(&data.ok(&["voices", "list", "--json"])).unwrap();
    let log = data.path("serve.log");
    let server = Server::spawn(
        data.command()
            .env("RUST_LOG", "warn,izwi_server=info")
            .stderr(std::fs::File::create(&log).unwrap()),
        &[],
    );
    // Far more sentences than the events held for a client (two a sentence, 256 held),
    // and more audio than the sockets' buffers hold while the client reads nothing.
    let text: Vec<String> = (1..=400)
        .map(|i| format!("Here is sentence {i}."))
        .collect();
    for format in ["wav", "pcm"] {
        let mut speech = client()
            .post(server.url("/v1/audio/speech"))
            .json(&json!({
                "model": "tts-1",
                "input": text.join(" "),
                "voice": voices[0]["id"].to_string(),
                "response_format": format,
            }))
            .send()
            .unwrap();
        assert!(speech.status().is_success(), "{}", speech.status());
        let job = || -> Value {
            let jobs: Value = serde_json::from_str(&data.ok(&["history", "--json"])).unwrap();
            jobs[0].clone()
        };
        let started = std::time::Instant::now();
        while job()["status"] != "done" {
            // A guard against hanging, not a speed check.
            assert!(started.elapsed().as_secs() < 600, "{}", job());
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut speech, &mut bytes).expect("the whole answer");
        let saved = hound::WavReader::open(job()["output"].as_str().unwrap()).unwrap();
        let (streamed, expected) = if format == "wav" {
            assert_eq!(&bytes[..4], b"RIFF");
            let saved: Vec<i16> = saved.into_samples().map(Result::unwrap).collect();
            (pcm_samples(&bytes[44..]), saved)
        } else {
            (pcm_samples(&bytes), at_24khz(saved))
        };
        assert!(
            streamed == expected,
            "{format}: {} vs {} samples",
            streamed.len(),
            expected.len()
        );
    }
    drop(server);
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        log.matches("comes from its WAV file").count(),
        2,
        "both clients fell behind the events: {log}"
    );
}
