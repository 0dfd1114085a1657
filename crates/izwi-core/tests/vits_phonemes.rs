//! Our text → phoneme ids path (sentence splitting, espeak-ng run as a program, Piper's
//! id framing) against the ids piper-tts 1.8 made for the same sentences (stored in
//! tests/fixtures/vits/reference.safetensors by tests/fixtures/make_vits_reference.py).
//! Needs espeak-ng (Debian's package) and `scripts/fetch-assets.sh` for the voice config.

use std::path::PathBuf;

use candle_core::Device;
use izwi_core::models::vits::{phonemize, VoiceConfig};
use izwi_core::text::{split_sentences, Espeak};

const TEXTS: [&str; 4] = [
    "The quick brown fox jumps over the lazy dog.",
    "Izwi runs Piper voices natively, on your own machine!",
    "How much wood would a woodchuck chuck?",
    "Hi.",
];

fn joe_config() -> VoiceConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.assets/voices/en_US-joe-medium/en_US-joe-medium.onnx.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-assets.sh", path.display()));
    VoiceConfig::from_json(&text).unwrap()
}

fn piper_ids() -> Vec<Vec<i64>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vits/reference.safetensors");
    let tensors = candle_core::safetensors::load(path, &Device::Cpu).unwrap();
    (0..TEXTS.len())
        .map(|i| tensors[&format!("ids_{i}")].to_vec1::<i64>().unwrap())
        .collect()
}

#[test]
fn our_ids_equal_piper_tts_for_each_sentence_and_for_all_in_one_run() {
    let espeak = Espeak::find().expect("espeak-ng is installed");
    let config = joe_config();
    let want = piper_ids();

    for (text, want) in TEXTS.iter().zip(&want) {
        let got = phonemize(&espeak, &config, &split_sentences(text)).unwrap();
        assert_eq!(got.len(), 1, "{text}");
        assert_eq!(&got[0].ids, want, "{text}: {}", got[0].phonemes);
        assert!(got[0].unknown.is_empty());
    }

    // One paragraph, one espeak-ng process: the same ids, sentence by sentence.
    let all = phonemize(&espeak, &config, &split_sentences(&TEXTS.join(" "))).unwrap();
    let got: Vec<Vec<i64>> = all.iter().map(|s| s.ids.clone()).collect();
    assert_eq!(got, want);
    assert_eq!(all[1].text, TEXTS[1]);
}

#[test]
fn numbers_and_abbreviations_are_read_out() {
    let espeak = Espeak::find().expect("espeak-ng is installed");
    let config = joe_config();
    let sentences = split_sentences("Dr. Smith paid $42.50 on 3 May. Then 1,000 people came.");
    let got = phonemize(&espeak, &config, &sentences).unwrap();
    assert_eq!(got.len(), 2);
    // "doctor", "dollar", "forty", "thousand".
    for part in ["dˈɑːktɚ", "dˈɑːlɚ", "fˈoːɹɾi", "θˈaʊzənd"] {
        let all = format!("{} {}", got[0].phonemes, got[1].phonemes);
        assert!(all.contains(part), "{part} not in {all}");
    }
}

#[test]
fn an_unknown_espeak_voice_is_named() {
    let espeak = Espeak::find().expect("espeak-ng is installed");
    let mut config = joe_config();
    config.espeak.as_mut().unwrap().voice = "xx-nope".into();
    let err = phonemize(&espeak, &config, &split_sentences("Hello.")).unwrap_err();
    assert!(err.to_string().contains("no voice \"xx-nope\""), "{err}");
}
