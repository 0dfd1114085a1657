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
