//! The tiny model checkpoints izwi-core commits for its parity tests, and copies of them
//! changed for a test (another variant, greedy decoding).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// izwi-core's tiny random Qwen3-TTS checkpoint (a Base checkpoint), in the official
/// layout.
pub fn qwen3_tts_tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../izwi-core/tests/fixtures/qwen3-tts-tiny")
}

/// The tiny random LFM2-Audio checkpoint (with its Mimi codec) of izwi-core's parity
/// tests.
pub fn lfm2_audio_tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../izwi-core/tests/fixtures/lfm2-audio-tiny")
}

/// The tiny random LFM2.5-Audio detokenizer of izwi-core's parity tests.
pub fn lfm2_audio_detokenizer_tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../izwi-core/tests/fixtures/lfm2-audio-detokenizer-tiny")
}

/// A copy of the folder `from`, and everything in it, at `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder for the copy");
    for entry in std::fs::read_dir(from)
        .expect("the folder to copy")
        .flatten()
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copies");
        }
    }
}

/// Rewrites the JSON file `path` as `edit` leaves it.
pub fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let text = std::fs::read_to_string(path).expect("the JSON file");
    let mut json: Value = serde_json::from_str(&text).expect("JSON");
    edit(&mut json);
    std::fs::write(path, json.to_string()).expect("writes");
}

/// A copy of the tiny Qwen3-TTS checkpoint at `to` whose config.json `edit` changes.
pub fn qwen3_tts_copy(to: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    copy_dir(&qwen3_tts_tiny(), to);
    edit_json(&to.join("config.json"), edit);
    to.to_path_buf()
}

/// A copy of the tiny Qwen3-TTS checkpoint in `dir/kind` that says it is a `kind`
/// checkpoint (`custom_voice`, `voice_design`).
pub fn qwen3_tts_variant(dir: &Path, kind: &str) -> PathBuf {
    qwen3_tts_copy(&dir.join(kind), |config| {
        config["tts_model_type"] = kind.into();
    })
}

/// Makes the checkpoint at `dir` decode greedily (codebook 0 and the code predictor),
/// so that one text in one voice is the same samples wherever it is spoken.
pub fn decode_greedily(dir: &Path) {
    edit_json(&dir.join("generation_config.json"), |generation| {
        generation["do_sample"] = false.into();
        generation["subtalker_dosample"] = false.into();
    });
}

/// The values of tensor `name` (F32 or I64) in the safetensors file `path`, flattened:
/// the references the fixtures' scripts saved.
pub fn safetensors_values(path: &Path, name: &str) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header_len = u64::from_le_bytes(bytes[..8].try_into().expect("a header length")) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + header_len]).expect("a header");
    let entry = &header[name];
    let offset =
        |i: usize| 8 + header_len + entry["data_offsets"][i].as_u64().expect(name) as usize;
    let data = &bytes[offset(0)..offset(1)];
    match entry["dtype"].as_str() {
        Some("F32") => data
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes(b.try_into().expect("4 bytes"))))
            .collect(),
        Some("I64") => data
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as f64)
            .collect(),
        other => panic!("{name}: dtype {other:?} is not read here"),
    }
}

/// The tiny LFM2-Audio reference's second of speech as a 32-bit float WAV at `path`
/// (the very samples liquid-audio heard); returns it.
pub fn lfm2_audio_reference_speech(path: &Path) -> PathBuf {
    let reference = lfm2_audio_tiny().join("reference.safetensors");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut wav = hound::WavWriter::create(path, spec).expect("a WAV file");
    for s in safetensors_values(&reference, "audio") {
        wav.write_sample(s as f32).expect("written");
    }
    wav.finalize().expect("written");
    path.to_path_buf()
}

/// The text tokens of the tiny LFM2-Audio reference's ASR turn (those before it turned
/// to audio).
pub fn lfm2_audio_reference_asr_tokens() -> Vec<u32> {
    let reference = lfm2_audio_tiny().join("reference.safetensors");
    let kinds = safetensors_values(&reference, "asr_out_kind");
    let texts = safetensors_values(&reference, "asr_out_text");
    kinds
        .iter()
        .zip(texts)
        .take_while(|(&kind, _)| kind == 0.0)
        .map(|(_, token)| token as u32)
        .collect()
}
