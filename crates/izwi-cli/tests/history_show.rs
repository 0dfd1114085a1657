//! `izwi history --show JOB` for speech jobs: a speak job's text, voice, settings and
//! audio; a batch's lines and files. Needs the Piper voice en_US-joe-medium
//! (scripts/fetch-assets.sh) and Debian's espeak-ng.

use izwi_test_support::asset;
use izwi_test_support::cli::Izwi;

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

/// The id of the newest job.
fn last_job(izwi: &Izwi) -> String {
    izwi.json(&["history", "--json", "--limit", "1"])[0]["id"].to_string()
}

fn joe() -> String {
    asset("voices/en_US-joe-medium/en_US-joe-medium.onnx")
        .display()
        .to_string()
}

#[test]
fn show_prints_a_speak_job_and_a_batch() {
    let izwi = Izwi::new(BIN);
    izwi.ok(&["models", "import", &joe(), "--name", "joe"]);
    izwi.ok(&["voices", "add", "local/joe", "Joe low", "--pitch=-2"]);

    let wav = izwi.path("hello.wav");
    let text = "Hello from Izwi. It runs on your own machine.";
    izwi.ok(&[
        "speak",
        "--voice",
        "joe low",
        "--speed",
        "1.25",
        "--text",
        text,
        "--output",
        wav.to_str().unwrap(),
    ]);
    let speak_job = last_job(&izwi);
    let shown = izwi.ok(&["history", "--show", &speak_job]);
    for want in [
        format!("Job {speak_job} · speak · done"),
        "Voice:    Joe low (local/joe)".into(),
        "Settings: speed 1.25, pitch -2 semitones".into(),
        format!("Audio:    {}", wav.display()),
        format!("Text:\n{text}\n"),
    ] {
        assert!(shown.contains(&want), "no {want:?} in:\n{shown}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&izwi.ok(&["history", "--show", &speak_job, "--json"])).unwrap();
    assert_eq!(json["kind"], "speech");
    assert_eq!(json["audio_exists"], true);

    // Moved away: said so, not an error.
    std::fs::remove_file(&wav).unwrap();
    let shown = izwi.ok(&["history", "--show", &speak_job]);
    assert!(shown.contains("(no longer there)"), "{shown}");

    let script = izwi.path("script.txt");
    std::fs::write(&script, "One, two, three.\nFour.\nFive and six!\n").unwrap();
    let dir = izwi.path("lines");
    izwi.ok(&[
        "speak",
        "--voice",
        "joe",
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    let batch_job = last_job(&izwi);
    std::fs::remove_file(dir.join("002.wav")).unwrap();
    let shown = izwi.ok(&["history", "--show", &batch_job]);
    for want in [
        format!("Job {batch_job} · speak_batch · done"),
        "Voice:    joe (local/joe)".into(),
        format!("Folder:   {}", dir.display()),
        format!("Manifest: {}", dir.join("manifest.csv").display()),
    ] {
        assert!(shown.contains(&want), "no {want:?} in:\n{shown}");
    }
    let rows: Vec<&str> = shown.lines().skip_while(|l| !l.contains("LINE")).collect();
    assert_eq!(rows.len(), 4, "{shown}");
    assert!(rows[1].contains("001.wav") && rows[1].ends_with("One, two, three."));
    assert!(rows[2].contains("002.wav (missing)") && rows[2].ends_with("Four."));
    assert!(rows[3].contains("003.wav") && rows[3].ends_with("Five and six!"));
}
