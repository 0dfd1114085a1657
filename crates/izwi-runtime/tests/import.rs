//! Importing a CTranslate2 Whisper folder: the runtime converts it with the engine's
//! converter and registers the result through the hub (which does not depend on the
//! engine).

mod common;

use common::{config, open_recording};
use izwi_runtime::ModelStatus;
use izwi_test_support::asset;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ctranslate2_folder_is_converted_then_imported() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _events) = open_recording(config(dir.path())).await;
    let info = runtime
        .import_model(&asset("ct2/whisper-tiny.en"), Some("tiny-ct2"))
        .unwrap();
    assert_eq!(info.id, "local/tiny-ct2");
    assert_eq!(info.status, ModelStatus::Installed);
    assert_eq!(info.languages, ["en"]);
    let path = info.path.unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        assert!(path.join(file).is_file(), "{file}");
    }
    runtime.verify_model("local/tiny-ct2").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_fails_to_convert_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, _events) = open_recording(config(dir.path())).await;
    let ct2 = dir.path().join("ct2");
    std::fs::create_dir_all(&ct2).unwrap();
    std::fs::write(ct2.join("model.bin"), b"garbage").unwrap();
    std::fs::write(ct2.join("config.json"), b"{}").unwrap();
    let err = runtime.import_model(&ct2, None).unwrap_err();
    assert!(err.to_string().contains("converting"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path().join("data/models"))
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
