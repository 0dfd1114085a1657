//! The remote backend: `izwi --backend URL` sends transcription, speech and chat to an
//! OpenAI-compatible server — here a second, real `izwi serve` on 127.0.0.1 with the
//! models of scripts/fetch-assets.sh — and keeps the jobs in its own history. The same
//! job through this machine and through the server gives the same text (the same
//! samples, for one sentence of speech, a batch's line, and a cloned voice's sentence);
//! a server killed mid-job fails the job with a clear error and nothing hangs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use izwi_test_support::asset;
use izwi_test_support::cli::Izwi;
use izwi_test_support::fixtures::{decode_greedily, qwen3_tts_copy};
use izwi_test_support::jfk_repeated;
use izwi_test_support::serve::Server;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

const KEY: &str = "sk-remote-test-key";

fn run(command: &mut Command) -> Output {
    command.output().expect("izwi runs")
}

/// A data folder with tiny.en, the joe voice and SmolLM2 imported.
fn data_with_models(data: &Izwi) {
    for model in [
        asset("models/whisper-tiny.en"),
        asset("voices/en_US-joe-medium/en_US-joe-medium.onnx"),
    ] {
        data.ok(&["models", "import", &model.display().to_string()]);
    }
    let gguf = asset("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    data.import(&gguf, &["--name", "smollm2"]);
}

/// `izwi serve ARGS` on the data folder `data`; its OpenAI base URL is `url("/v1")`.
fn serve(data: &Izwi, args: &[&str]) -> Server {
    Server::spawn(data.command().stderr(Stdio::inherit()), args)
}

fn chat(data: &Izwi, backend: &[&str], question: &str) -> String {
    let mut child = data
        .command()
        .args(backend)
        .args(["chat", "--llm", "local/smollm2", "--max-tokens", "40"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{question}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn samples(path: &Path) -> Vec<i16> {
    hound::WavReader::open(path)
        .unwrap()
        .into_samples()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn remote_jobs_give_what_local_ones_give() {
    let server_data = Izwi::new(BIN);
    let here = Izwi::new(BIN);
    data_with_models(&server_data);
    let voices: Value =
        serde_json::from_str(&server_data.ok(&["voices", "list", "--json"])).unwrap();
    let voice = voices[0]["name"].as_str().unwrap().to_string();
    let jfk = asset("speech/jfk.wav").display().to_string();

    // On the server's own machine, before it serves.
    let local_text = server_data.ok(&["transcribe", &jfk]);
    let said = "The museum opens at nine in the morning.";
    let local_wav = server_data.path("local.wav");
    server_data.ok(&[
        "speak",
        "--voice",
        &voice,
        "--text",
        said,
        "-o",
        &local_wav.display().to_string(),
    ]);
    let question = "What is the capital of France?";
    let local_reply = chat(&server_data, &[], question);
    assert!(local_reply.contains("Paris"), "{local_reply}");

    let server = serve(&server_data, &["--api-key", KEY]);

    // Without the key the server refuses, and the job says so.
    let out = run(here
        .command()
        .args(["--backend", &server.url("/v1"), "transcribe", &jfk]));
    assert!(!out.status.success());
    let job = &here.jobs()[0];
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.contains(&server.url("/v1")) && error.contains("refused the API key"),
        "{error}"
    );

    // The key goes into the store from standard input and is never shown.
    let mut set = here
        .command()
        .args(["backend", "set", &server.url("/v1"), "--key-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(set.stdin.take().unwrap(), "{KEY}").unwrap();
    let set = set.wait_with_output().unwrap();
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let shown = here.ok(&["backend"]);
    assert_eq!(
        shown.trim(),
        format!("remote: {} (with an API key)", server.url("/v1"))
    );

    // Transcription: the same text, the job in this machine's history.
    let out = run(here
        .command()
        .env("RUST_LOG", "debug")
        .args(["transcribe", &jfk]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), local_text);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("run remotely") && !log.contains(KEY),
        "the key is never logged: {log}"
    );
    let job = &here.jobs()[0];
    assert_eq!(job["kind"], "transcribe");
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(job["model_id"], "whisper-1");
    assert_eq!(job["progress"], 1.0);

    // Speech: one sentence is the same samples as the server's machine makes.
    let remote_wav = here.path("remote.wav");
    here.ok(&[
        "speak",
        "--voice",
        &voice,
        "--text",
        said,
        "-o",
        &remote_wav.display().to_string(),
    ]);
    assert!(
        samples(&remote_wav) == samples(&local_wav),
        "the same speech"
    );
    let job = &here.jobs()[0];
    assert_eq!(
        (job["kind"].as_str(), job["status"].as_str()),
        (Some("speak"), Some("done"))
    );

    // A batch: a request per line, each line's WAV as the server's machine says it; no
    // Whisper here, so no line is checked.
    let script = here.path("lines.txt");
    std::fs::write(&script, format!("{said}\nGoodbye for now.\n")).unwrap();
    let batch = here.path("batch");
    here.ok(&[
        "speak",
        "--voice",
        &voice,
        "--lines",
        &script.display().to_string(),
        "--output-dir",
        &batch.display().to_string(),
    ]);
    assert!(
        samples(&batch.join("001.wav")) == samples(&local_wav),
        "the batch's first line is the same speech"
    );
    assert!(!samples(&batch.join("002.wav")).is_empty());
    let manifest = std::fs::read_to_string(batch.join("manifest.csv")).unwrap();
    assert_eq!(manifest.lines().count(), 3, "{manifest}");
    let job = &here.jobs()[0];
    assert_eq!(
        (job["kind"].as_str(), job["status"].as_str()),
        (Some("speak_batch"), Some("done")),
        "{job}"
    );

    // Chat: greedy, the same reply.
    assert_eq!(chat(&here, &[], question), local_reply);

    // A voice the server lacks is its error, in its words.
    let out = run(here
        .command()
        .args(["speak", "--voice", "nobody", "--text", said, "-o"])
        .arg(here.path("x.wav")));
    assert!(!out.status.success());
    let job = &here.jobs()[0];
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("no voice \"nobody\""), "{error}");

    // `--backend local` runs here for one command: this folder has no models.
    let out = run(here
        .command()
        .args(["--backend", "local", "transcribe", &jfk]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Whisper model is installed"));
    here.ok(&["backend", "local"]);
    assert!(here.ok(&["backend"]).starts_with("local"));
}

/// Eleven minutes of speech: jfk.wav sixty times.
#[test]
fn a_server_killed_mid_job_fails_the_job_and_nothing_hangs() {
    let server_data = Izwi::new(BIN);
    let here = Izwi::new(BIN);
    server_data.import(&asset("models/whisper-tiny.en"), &[]);
    let long = jfk_repeated(&here.path("long.wav"), 60);
    let mut server = serve(&server_data, &[]);
    let mut client = here
        .command()
        .args(["--backend", &server.url("/v1"), "transcribe"])
        .arg(&long)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-job: the server has taken some of its windows.
    let started = Instant::now();
    while !server_data.jobs().iter().any(|j| j["status"] == "running") {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the server got no window"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    server.kill();
    // A guard against hanging, not a speed check.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = client.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the job hangs on a dead server"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!status.success());
    let job = &here.jobs()[0];
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "the remote server {} did not answer: ",
            server.url("/v1")
        )),
        "{error}"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("the remote server"), "{stderr}");
}

/// faster-whisper-server, a third-party OpenAI-compatible server from PyPI, in a venv
/// the test makes once beside the build.
const FASTER_WHISPER_SERVER: &str = "faster-whisper-server==0.0.3";

fn faster_whisper_server() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faster-whisper-server-venv");
    let bin = venv.join(if cfg!(windows) { "Scripts" } else { "bin" });
    let installed = venv.join(format!(".izwi-{FASTER_WHISPER_SERVER}"));
    if !installed.exists() {
        let run = |cmd: &mut Command| {
            let status = cmd.status().expect("runs");
            assert!(status.success(), "{cmd:?}");
        };
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(bin.join("python")).args([
            "-m",
            "pip",
            "install",
            "-q",
            FASTER_WHISPER_SERVER,
        ]));
        std::fs::write(&installed, b"").unwrap();
    }
    bin.join("faster-whisper-server")
}

/// A third-party server, killed when dropped.
struct ThirdParty(Child);

impl Drop for ThirdParty {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Words only: servers punctuate differently.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn a_third_party_server_transcribes_and_says_what_it_lacks() {
    let server_bin = faster_whisper_server();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The same tiny.en as the HF folder the local run uses, in CTranslate2's format.
    let _server = ThirdParty(
        Command::new(server_bin)
            .arg(asset("ct2/whisper-tiny.en"))
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .env("HF_HUB_OFFLINE", "1")
            .stdout(Stdio::null())
            .spawn()
            .expect("faster-whisper-server starts"),
    );
    let url = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "it never listened"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    let local = Izwi::new(BIN);
    local.import(&asset("models/whisper-tiny.en"), &[]);
    let jfk = asset("speech/jfk.wav").display().to_string();
    let local_text = local.ok(&["transcribe", &jfk]);

    let here = Izwi::new(BIN);
    let remote_text = here.ok(&["--backend", &url, "transcribe", &jfk]);
    assert_eq!(
        words(&remote_text),
        words(&local_text),
        "{remote_text} / {local_text}"
    );
    assert_eq!(here.jobs()[0]["status"], "done");

    // What it lacks fails the job with the reason.
    let fails = |args: &[&str], expected: &str| {
        let out = run(here.command().args(["--backend", &url]).args(args));
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("the remote server {url}")) && stderr.contains(expected),
            "{args:?}: {stderr}"
        );
    };
    fails(
        &["transcribe", &jfk, "--word-timestamps"],
        "gives no word timestamps",
    );
    let wav = here.path("x.wav").display().to_string();
    fails(
        &["speak", "--voice", "alloy", "--text", "Hello.", "-o", &wav],
        "offers no speech",
    );
    let mut chat = here
        .command()
        .args(["--backend", &url, "chat", "--llm", "any"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(chat.stdin.take().unwrap(), "Hello?").unwrap();
    let out = chat.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("offers no chat"), "{stderr}");
}

/// Two seconds of a 16 kHz hum, quieter than half scale: its samples go over the wire
/// as 16-bit and come back the same.
fn hum(path: &Path) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for n in 0..32_000 {
        let t = n as f32 / 16_000.0;
        let v = 0.3 * (2.0 * std::f32::consts::PI * 140.0 * t).sin();
        writer.write_sample((v * 32_767.0) as i16).unwrap();
    }
    writer.finalize().unwrap();
}

#[test]
fn a_cloned_voice_speaks_through_the_remote_with_its_recording() {
    let server_data = Izwi::new(BIN);
    let here = Izwi::new(BIN);
    // Greedy, so that one text in one voice is the same samples on both machines.
    let checkpoint = qwen3_tts_copy(&here.path("qwen3-greedy"), |_| {});
    decode_greedily(&checkpoint);
    let checkpoint = checkpoint.display().to_string();
    server_data.ok(&["models", "import", &checkpoint, "--name", "qwen"]);
    here.ok(&["models", "import", &checkpoint, "--name", "qwen"]);
    let recording = here.path("me.wav");
    hum(&recording);
    let cloned = here.ok(&[
        "voices",
        "clone",
        "Me",
        "--model",
        "local/qwen",
        "--audio",
        &recording.display().to_string(),
        "--text",
        "A low hum.",
    ]);
    assert!(cloned.contains("cloned voice"), "{cloned}");
    let said = "Hello in my voice.";
    let local_wav = here.path("local.wav");
    here.ok(&[
        "speak",
        "--voice",
        "Me",
        "--text",
        said,
        "-o",
        &local_wav.display().to_string(),
    ]);

    // The server knows no voice "Me": its recording and transcript go with the request.
    let server = serve(&server_data, &[]);
    let url = server.url("/v1");
    let remote_wav = here.path("remote.wav");
    let remote = here.ok(&[
        "--backend",
        &url,
        "speak",
        "--voice",
        "Me",
        "--text",
        said,
        "-o",
        &remote_wav.display().to_string(),
    ]);
    assert!(!samples(&remote_wav).is_empty(), "{remote}");
    assert!(
        samples(&remote_wav) == samples(&local_wav),
        "the clone says the same through the server as here"
    );
    let served = &server_data.jobs()[0];
    assert_eq!(served["kind"], "speak");
    assert_eq!(served["status"], "done", "{served}");
    assert_eq!(served["model_id"], "local/qwen");
    // The recording the request brought is not kept on the server.
    let uploads = server_data.data_dir().join("uploads");
    let left = std::fs::read_dir(&uploads).map_or(0, |d| d.count());
    assert_eq!(left, 0, "uploads left in {}", uploads.display());

    // A server without a Qwen3-TTS model says so; nothing is spoken.
    drop(server);
    let bare = Izwi::new(BIN);
    let server = serve(&bare, &[]);
    let out = run(here
        .command()
        .args([
            "--backend",
            &server.url("/v1"),
            "speak",
            "--voice",
            "Me",
            "--text",
            said,
            "-o",
        ])
        .arg(here.path("x.wav")));
    assert!(!out.status.success());
    let error = here.jobs()[0]["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("no Qwen3-TTS Base model is installed on this server"),
        "{error}"
    );
}
