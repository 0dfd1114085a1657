//! `izwi voices` and `izwi speak` on a data folder of their own, with the real Piper
//! voice en_US-joe-medium (scripts/fetch-assets.sh) and Debian's espeak-ng.

use std::path::Path;

use izwi_test_support::asset;
use izwi_test_support::cli::{failed, Izwi};

const BIN: &str = env!("CARGO_BIN_EXE_izwi");

/// `izwi ARGS` with `env` set fails; its standard error.
fn fails_with(izwi: &Izwi, args: &[&str], env: &[(&str, &str)]) -> String {
    failed(
        args,
        izwi.command()
            .envs(env.iter().copied())
            .args(args)
            .output()
            .unwrap(),
    )
}

fn joe() -> String {
    asset("voices/en_US-joe-medium/en_US-joe-medium.onnx")
        .display()
        .to_string()
}

fn wav_seconds(path: &Path) -> f64 {
    let reader = hound::WavReader::open(path).unwrap();
    let spec = reader.spec();
    assert_eq!(
        (spec.channels, spec.sample_rate, spec.bits_per_sample),
        (1, 22_050, 16)
    );
    f64::from(reader.duration()) / 22_050.0
}

#[test]
fn speak_text_and_a_script_through_the_voice_library() {
    let izwi = Izwi::new(BIN);
    assert!(izwi.ok(&["voices"]).contains("No voices yet"));
    izwi.ok(&["models", "import", &joe(), "--name", "joe"]);
    let list = izwi.ok(&["voices"]);
    assert!(list.contains("local/joe"), "{list}");

    let out = izwi.path("hello.wav");
    let said = izwi.ok(&[
        "speak",
        "--voice",
        "joe",
        "--text",
        "Hello from Izwi. It runs on your own machine.",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("s of speech"), "{said}");
    let seconds = wav_seconds(&out);
    assert!((2.0..8.0).contains(&seconds), "{seconds}");

    // A second voice on the same model, faster: the same words take less time.
    izwi.ok(&["voices", "add", "local/joe", "Joe fast", "--speed", "1.6"]);
    let fast = izwi.path("fast.wav");
    izwi.ok(&[
        "speak",
        "--voice",
        "joe fast",
        "--text",
        "Hello from Izwi. It runs on your own machine.",
        "--output",
        fast.to_str().unwrap(),
    ]);
    assert!(wav_seconds(&fast) < seconds * 0.8);

    let script = izwi.path("script.txt");
    std::fs::write(&script, "One, two, three.\n\nFour.\nFive and six!\n").unwrap();
    let dir = izwi.path("lines");
    izwi.ok(&[
        "speak",
        "--voice",
        &joe(),
        "--lines",
        script.to_str().unwrap(),
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    let manifest = std::fs::read_to_string(dir.join("manifest.csv")).unwrap();
    assert_eq!(manifest.lines().count(), 4, "{manifest}");
    assert!(manifest.contains("1,001.wav,") && manifest.contains(",\"One, two, three.\""));
    for file in ["001.wav", "002.wav", "003.wav"] {
        assert!(wav_seconds(&dir.join(file)) > 0.3);
    }
    let history = izwi.ok(&["history"]);
    assert_eq!(history.matches("speak_batch").count(), 1, "{history}");
    assert_eq!(history.matches(" speak ").count(), 2, "{history}");
}

#[test]
fn refusals_name_the_problem() {
    let izwi = Izwi::new(BIN);
    let out = izwi.path("x.wav");
    let out = out.to_str().unwrap();
    let joe = joe();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (
            &["speak", "--voice", &joe, "--text", " ... ", "-o", out],
            &[],
            "nothing to say",
        ),
        (
            &["speak", "--voice", "nobody", "--text", "Hi.", "-o", out],
            &[],
            "no voice \"nobody\"",
        ),
        (
            &["speak", "--voice", &joe, "--text", "Hi."],
            &[],
            "--output OUT.wav is needed",
        ),
        (
            &["speak", "--voice", &joe, "--text", "Hi.", "-o", out],
            &[("IZWI_ESPEAK_NG", "/nonexistent/espeak-ng")],
            "sudo apt install espeak-ng",
        ),
        (
            &[
                "speak", "--voice", &joe, "--text", "Hi.", "-o", out, "--speed", "9",
            ],
            &[],
            "speed must be 0.25 to 4",
        ),
    ];
    for (args, env, want) in cases {
        let err = fails_with(&izwi, args, env);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!Path::new(out).exists());
}

#[test]
fn a_multi_megabyte_text_file_is_read_through_and_its_row_stays_small() {
    let izwi = Izwi::new(BIN);
    let said = [
        "The book begins here.",
        "Halfway through, it goes on.",
        "And this is the end.",
    ];
    // Four megabytes: the three sentences at the start, the middle and the end, and
    // between them scene breaks with nothing to say, which are read and skipped.
    let filler = "* * *\n\n".repeat(300_000);
    let book = izwi.path("book.txt");
    std::fs::write(
        &book,
        format!(
            "{}\n\n{filler}{}\n\n{filler}{}\n",
            said[0], said[1], said[2]
        ),
    )
    .unwrap();
    assert!(std::fs::metadata(&book).unwrap().len() > 4_000_000);
    let from_file = izwi.path("book.wav");
    izwi.ok(&[
        "speak",
        "--voice",
        &joe(),
        "--file",
        book.to_str().unwrap(),
        "--output",
        from_file.to_str().unwrap(),
    ]);
    // The same sentences typed in make the same recording.
    let typed = izwi.path("typed.wav");
    izwi.ok(&[
        "speak",
        "--voice",
        &joe(),
        "--text",
        &said.join(" "),
        "--output",
        typed.to_str().unwrap(),
    ]);
    assert_eq!(wav_seconds(&from_file), wav_seconds(&typed));
    assert!(wav_seconds(&from_file) > 3.0);

    // The history shows the file, and no job row carries the text.
    let history = izwi.ok(&["history"]);
    assert!(history.contains(book.to_str().unwrap()), "{history}");
    let json = izwi.ok(&["history", "--json"]);
    assert!(json.len() < 10_000, "{} bytes of history", json.len());
}

#[test]
fn a_text_over_the_limit_is_refused() {
    let izwi = Izwi::new(BIN);
    let out = izwi.path("x.wav");
    let long = "word ".repeat(izwi_runtime::MAX_SPEAK_CHARS / 5 + 1);
    let err = fails_with(
        &izwi,
        &[
            "speak",
            "--voice",
            &joe(),
            "--text",
            &long,
            "-o",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(err.contains("read a longer text from a file"), "{err}");
}
