//! Batch export's self-check and re-takes, and batches in Qwen3-TTS voices: the real
//! Piper voice en_US-joe-medium and Whisper tiny.en of .assets (scripts/fetch-assets.sh)
//! for a real check of the flagging (a line of made-up words is not heard as written;
//! a plain sentence is), and the tiny random Qwen3-TTS checkpoint of izwi-core's
//! fixtures for lines that go to its engine together.

use std::path::Path;

use izwi_test_support::asset;
use izwi_test_support::cli::Izwi;
use izwi_test_support::fixtures::qwen3_tts_tiny;

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

fn qwen3() -> String {
    qwen3_tts_tiny().display().to_string()
}

/// The manifest's rows as header → cell maps.
fn manifest(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(dir.join("manifest.csv")).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        header,
        [
            "line",
            "file",
            "seconds",
            "text",
            "seed",
            "transcript",
            "wer",
            "flagged"
        ]
    );
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn a_batch_is_heard_back_and_its_flagged_lines_retaken() {
    let izwi = Izwi::new(BIN);
    let joe = asset("voices/en_US-joe-medium/en_US-joe-medium.onnx");
    izwi.import(&joe, &["--name", "joe"]);
    let whisper = asset("models/whisper-tiny.en");
    izwi.import(&whisper, &["--name", "tiny"]);
    let script = izwi.path("script.txt");
    std::fs::write(
        &script,
        "The weather is lovely today.\nZorblat quixxen vumbrel snaft.\nThank you very much.\n",
    )
    .unwrap();
    let out = izwi.path("takes");
    let said = izwi.ok(&[
        "speak",
        "--voice",
        "joe",
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let rows = manifest(&out);
    assert_eq!(rows.len(), 3);
    for row in &rows {
        assert_eq!(row["seed"], "0");
        assert!(!row["transcript"].is_empty(), "{row:?}");
    }
    let wer = |row: &std::collections::HashMap<String, String>| row["wer"].parse::<f64>().unwrap();
    assert!(wer(&rows[0]) <= 0.25, "{:?}", rows[0]);
    assert!(wer(&rows[2]) <= 0.25, "{:?}", rows[2]);
    assert_eq!(rows[0]["flagged"], "");
    assert_eq!(rows[2]["flagged"], "");
    // Made-up words are not heard as written.
    assert!(wer(&rows[1]) > 0.25, "{:?}", rows[1]);
    assert_eq!(rows[1]["flagged"], "yes");
    assert!(
        said.contains("1 of 3 lines flagged") && said.contains("002.wav"),
        "{said}"
    );

    let before: Vec<Vec<u8>> = ["001.wav", "002.wav", "003.wav"]
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    izwi.ok(&[
        "speak",
        "--voice",
        "joe",
        "--retake-flagged",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let after = manifest(&out);
    assert_eq!(after.len(), 3);
    assert_eq!(after[0], rows[0]);
    assert_eq!(after[2], rows[2]);
    assert_eq!(after[1]["seed"], "1", "a new seed");
    assert!(!after[1]["transcript"].is_empty());
    assert_eq!(std::fs::read(out.join("001.wav")).unwrap(), before[0]);
    assert_eq!(std::fs::read(out.join("003.wav")).unwrap(), before[2]);
    assert!(
        std::fs::read(out.join("002.wav")).unwrap() != before[1],
        "the re-take is another take"
    );
    assert!(!out.join("002.wav.partial").exists());

    // A threshold no line exceeds flags none, and then there is nothing to re-take.
    let lenient = izwi.path("lenient");
    let said = izwi.ok(&[
        "speak",
        "--voice",
        "joe",
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        lenient.to_str().unwrap(),
        "--max-wer",
        "100",
    ]);
    assert!(said.contains("every line's transcript is within"), "{said}");
    let err = izwi.fails(&[
        "speak",
        "--voice",
        "joe",
        "--retake-flagged",
        "--output-dir",
        lenient.to_str().unwrap(),
    ]);
    assert!(err.contains("is flagged"), "{err}");
    let err = izwi.fails(&[
        "speak",
        "--voice",
        "joe",
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        izwi.path("x").to_str().unwrap(),
        "--max-wer=-1",
    ]);
    assert!(err.contains("0 or more"), "{err}");
}

#[test]
fn a_qwen3_tts_batch_says_each_line_as_a_single_request_would() {
    let izwi = Izwi::new(BIN);
    let voice = qwen3();
    let lines = [
        "Good morning, everyone.",
        "The quick brown fox jumps over the lazy dog.",
        "See you tomorrow.",
    ];
    let script = izwi.path("script.txt");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let out = izwi.path("takes");
    let said = izwi.ok(&[
        "speak",
        "--voice",
        &voice,
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("not checked: no Whisper model"), "{said}");
    let rows = manifest(&out);
    assert_eq!(rows.len(), 3);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(rows[i]["text"], *line);
        assert_eq!(rows[i]["transcript"], "");
        // Lines said together in the engine are what each says alone, seeded alike.
        let alone = izwi.path(&format!("alone-{i}.wav"));
        izwi.ok(&[
            "speak",
            "--voice",
            &voice,
            "--text",
            line,
            "--seed",
            "0",
            "--output",
            alone.to_str().unwrap(),
        ]);
        let batch = hound::WavReader::open(out.join(&rows[i]["file"]))
            .unwrap()
            .into_samples::<i16>()
            .map(Result::unwrap)
            .collect::<Vec<_>>();
        let single = hound::WavReader::open(&alone)
            .unwrap()
            .into_samples::<i16>()
            .map(Result::unwrap)
            .collect::<Vec<_>>();
        assert!(
            batch == single,
            "line {} differs from its single take",
            i + 1
        );
    }
    let err = izwi.fails(&[
        "speak",
        "--voice",
        &voice,
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        izwi.path("fast").to_str().unwrap(),
        "--speed",
        "1.5",
    ]);
    assert!(err.contains("no speed setting"), "{err}");
}

#[test]
fn a_qwen3_tts_batchs_flagged_lines_are_retaken_with_the_next_seed() {
    let izwi = Izwi::new(BIN);
    let whisper = asset("models/whisper-tiny.en");
    izwi.import(&whisper, &["--name", "tiny"]);
    let voice = qwen3();
    let script = izwi.path("script.txt");
    std::fs::write(&script, "Hello there.\nGood night.\n").unwrap();
    let out = izwi.path("takes");
    izwi.ok(&[
        "speak",
        "--voice",
        &voice,
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    // Random weights say nothing Whisper can hear as these words.
    let rows = manifest(&out);
    assert!(rows.iter().all(|r| r["flagged"] == "yes"), "{rows:?}");
    izwi.ok(&[
        "speak",
        "--voice",
        &voice,
        "--retake-flagged",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let rows = manifest(&out);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["seed"], "1");
        let alone = izwi.path(&format!("seed1-{i}.wav"));
        izwi.ok(&[
            "speak",
            "--voice",
            &voice,
            "--text",
            &row["text"],
            "--seed",
            "1",
            "--output",
            alone.to_str().unwrap(),
        ]);
        let retaken = std::fs::read(out.join(&row["file"])).unwrap();
        assert!(
            retaken == std::fs::read(&alone).unwrap(),
            "line {} is not its seed-1 take",
            i + 1
        );
    }
}
