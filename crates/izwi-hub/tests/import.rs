//! Importing local folders: Whisper in Hugging Face layout, Piper voices, and refusals
//! that say what is wrong.

use std::path::Path;

use izwi_hub::{Family, Hub, HubConfig, HubError, ModelSource, ModelStatus};

fn hub(dir: &Path) -> Hub {
    Hub::new(HubConfig {
        cache_dir: Some(dir.join("hf")),
        endpoint: Some("http://127.0.0.1:9".into()),
        local_dir: dir.join("models"),
        chunk_size: 1 << 20,
    })
}

fn whisper_folder(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("my whisper");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("config.json"), r#"{"model_type": "whisper"}"#).unwrap();
    std::fs::write(src.join("tokenizer.json"), "{}").unwrap();
    std::fs::write(src.join("model.safetensors"), vec![1u8; 1000]).unwrap();
    std::fs::write(src.join("README.md"), "not copied").unwrap();
    src
}

#[test]
fn a_whisper_folder_is_imported_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let src = whisper_folder(dir.path());
    let info = hub.import(&src, None).unwrap();
    assert_eq!(info.id, "local/my-whisper");
    assert_eq!(info.family, Family::Whisper);
    assert_eq!(info.status, ModelStatus::Installed);
    assert!(matches!(info.source, ModelSource::Local { .. }));
    let path = hub.model_dir("local/my-whisper").unwrap();
    assert_eq!(
        std::fs::read(path.join("model.safetensors")).unwrap(),
        vec![1u8; 1000]
    );
    assert!(!path.join("README.md").exists());
    assert!(hub.list().iter().any(|m| m.id == "local/my-whisper"));

    assert!(matches!(
        hub.import(&src, None),
        Err(HubError::AlreadyImported(_))
    ));
    let other = hub.import(&src, Some("second")).unwrap();
    assert_eq!(other.id, "local/second");

    hub.remove("local/my-whisper").unwrap();
    assert!(matches!(
        hub.model_dir("local/my-whisper"),
        Err(HubError::UnknownModel(_))
    ));
    assert!(
        src.join("model.safetensors").exists(),
        "the source is untouched"
    );
}

#[test]
fn a_piper_voice_file_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let onnx = dir.path().join("en_US-joe-medium.onnx");
    std::fs::write(&onnx, b"onnx").unwrap();
    std::fs::write(dir.path().join("en_US-joe-medium.onnx.json"), b"{}").unwrap();
    let info = hub.import(&onnx, None).unwrap();
    assert_eq!(info.id, "local/en_US-joe-medium");
    assert_eq!(info.family, Family::Piper);
    let path = info.path.unwrap();
    assert!(path.join("en_US-joe-medium.onnx").is_file());
    assert!(path.join("en_US-joe-medium.onnx.json").is_file());
}

#[test]
fn what_cannot_be_imported_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let reason = |path: &Path| match hub.import(path, None) {
        Err(HubError::NotImportable { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(reason(&dir.path().join("nowhere")).contains("does not exist"));

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(reason(&empty).contains("expected a Whisper folder"));

    let llama = dir.path().join("llama");
    std::fs::create_dir_all(&llama).unwrap();
    std::fs::write(llama.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    assert!(reason(&llama).contains("llama, not Whisper"));

    let src = whisper_folder(dir.path());
    std::fs::remove_file(src.join("tokenizer.json")).unwrap();
    assert!(reason(&src).contains("tokenizer.json"));

    let ct2 = dir.path().join("ct2");
    std::fs::create_dir_all(&ct2).unwrap();
    std::fs::write(ct2.join("model.bin"), b"garbage").unwrap();
    std::fs::write(ct2.join("config.json"), b"{}").unwrap();
    assert!(matches!(
        hub.import(&ct2, None),
        Err(HubError::Convert { .. })
    ));
    // A failed import leaves nothing behind, not even its staging folder.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("models"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_folder_is_usable_in_place_and_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let src = whisper_folder(dir.path());
    let id = src.display().to_string();
    let info = hub.info(&id).unwrap();
    assert_eq!(info.family, Family::Whisper);
    assert_eq!(hub.model_dir(&id).unwrap(), src);
    let err = hub.remove(&id).unwrap_err();
    assert!(matches!(err, HubError::NotRemovable(_)), "{err:?}");
    assert!(src.join("model.safetensors").exists());
}

#[test]
fn a_ctranslate2_whisper_folder_is_converted_on_import() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.assets/ct2/whisper-tiny.en");
    assert!(
        src.exists(),
        "{} is missing: run scripts/fetch-assets.sh first",
        src.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let info = hub.import(&src, Some("tiny-ct2")).unwrap();
    assert_eq!(info.id, "local/tiny-ct2");
    assert_eq!(info.family, Family::Whisper);
    let path = info.path.unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        assert!(path.join(file).is_file(), "{file}");
    }
    // What was converted is usable where it is.
    assert_eq!(
        hub.info(&path.display().to_string()).unwrap().family,
        Family::Whisper
    );
}
