//! Importing local folders: Whisper in Hugging Face layout (a cache snapshot of links
//! too), Piper voices, refusals that say what is wrong, verifying an import, what an
//! import knows of itself, and removal that never touches anything but the import.

#![cfg(unix)]

use std::path::{Path, PathBuf};

use izwi_hub::{
    CatalogEntry, CatalogFile, Family, Hub, HubConfig, HubError, ModelSource, ModelStatus,
    ModelTask,
};
use izwi_test_support::fixtures::{
    copy_dir, lfm2_audio_detokenizer_tiny, lfm2_audio_tiny, qwen3_tts_tiny,
};
use sha2::Digest;

fn hub_with(dir: &Path, catalog: Vec<CatalogEntry>) -> Hub {
    Hub::new(HubConfig {
        cache_dir: Some(dir.join("hf")),
        endpoint: Some("http://127.0.0.1:9".into()),
        local_dir: dir.join("models"),
        chunk_size: 1 << 20,
        catalog: Some(catalog),
    })
}

fn hub(dir: &Path) -> Hub {
    hub_with(dir, Vec::new())
}

/// Imports here never meet a CTranslate2 folder but the one that fails to convert.
fn no_converter(src: &Path, _: &Path) -> Result<(), String> {
    Err(format!("{} is not a CTranslate2 model", src.display()))
}

fn sha(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn whisper_folder(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("my whisper");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("config.json"),
        r#"{"model_type": "whisper", "vocab_size": 51864}"#,
    )
    .unwrap();
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
    let info = hub.import(&src, None, &no_converter).unwrap();
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
        hub.import(&src, None, &no_converter),
        Err(HubError::AlreadyImported(_))
    ));
    let other = hub.import(&src, Some("second"), &no_converter).unwrap();
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
    let info = hub.import(&onnx, None, &no_converter).unwrap();
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
    let reason = |path: &Path| match hub.import(path, None, &no_converter) {
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
        hub.import(&ct2, None, &|_: &Path, dst: &Path| {
            std::fs::create_dir_all(dst).map_err(|e| e.to_string())?;
            std::fs::write(dst.join("half.safetensors"), b"x").map_err(|e| e.to_string())?;
            Err("not a CTranslate2 model".to_string())
        }),
        Err(HubError::Convert { .. })
    ));
    // A failed import leaves nothing behind, not even its staging folder.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("models"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `.` or `x/..` name the folder they resolve to.
#[test]
fn a_folder_given_as_a_relative_step_is_named_after_itself() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let src = whisper_folder(dir.path());
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let info = hub
        .import(&src.join("sub/.."), None, &no_converter)
        .unwrap();
    assert_eq!(info.name, "my-whisper");
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
fn each_voice_of_a_folder_of_voices_is_used_by_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let voices = dir.path().join("voices");
    std::fs::create_dir_all(&voices).unwrap();
    for (name, code) in [("aa", "de_DE"), ("zz", "en_GB")] {
        std::fs::write(voices.join(format!("{name}.onnx")), b"onnx").unwrap();
        std::fs::write(
            voices.join(format!("{name}.onnx.json")),
            format!(r#"{{"language": {{"code": "{code}"}}}}"#),
        )
        .unwrap();
    }
    let zz = voices.join("zz.onnx");
    let info = hub.info(&zz.display().to_string()).unwrap();
    assert_eq!(info.family, Family::Piper);
    // The file named, not the folder (whose first voice is another).
    assert_eq!(info.path.as_deref(), Some(zz.as_path()));
    assert_eq!(info.languages, ["en_GB"]);
}

/// A folder as the Hugging Face cache lays a snapshot out: every file a relative link
/// into `../../blobs/`.
fn hf_snapshot(dir: &Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("hf-cache/models--openai--whisper-tiny.en");
    let snapshot = repo.join("snapshots/87c7102498dcde7456f24cfd30239ca606ed9063");
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    let files: [(&str, Vec<u8>); 3] = [
        (
            "config.json",
            br#"{"model_type": "whisper", "vocab_size": 51865}"#.to_vec(),
        ),
        ("tokenizer.json", b"{}".to_vec()),
        ("model.safetensors", vec![7u8; 4096]),
    ];
    for (name, bytes) in files {
        let hash = sha(&bytes);
        std::fs::write(repo.join("blobs").join(&hash), &bytes).unwrap();
        std::os::unix::fs::symlink(format!("../../blobs/{hash}"), snapshot.join(name)).unwrap();
    }
    (repo, snapshot)
}

#[test]
fn a_hugging_face_snapshot_of_links_is_imported_as_real_bytes() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let (repo, snapshot) = hf_snapshot(dir.path());
    let info = hub.import(&snapshot, Some("tiny"), &no_converter).unwrap();
    let path = info.path.unwrap();
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        let copy = std::fs::symlink_metadata(path.join(name)).unwrap();
        assert!(copy.file_type().is_file(), "{name} is a link");
        let original = std::fs::metadata(snapshot.join(name)).unwrap();
        assert_ne!(copy.ino(), original.ino(), "{name} shares the user's file");
        assert_eq!(copy.len(), original.len(), "{name}");
    }
    // The source goes; the import still holds everything and verifies.
    std::fs::remove_dir_all(&repo).unwrap();
    hub.verify("local/tiny").unwrap();
    assert_eq!(
        std::fs::read(path.join("model.safetensors")).unwrap(),
        vec![7u8; 4096]
    );
    assert_eq!(
        hub.info("local/tiny").unwrap().status,
        ModelStatus::Installed
    );
}

#[test]
fn a_snapshot_whose_links_are_broken_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let (repo, snapshot) = hf_snapshot(dir.path());
    std::fs::remove_dir_all(repo.join("blobs")).unwrap();
    let err = hub.import(&snapshot, None, &no_converter).unwrap_err();
    assert!(matches!(err, HubError::NotImportable { .. }), "{err}");
}

#[test]
fn an_import_is_verified_against_what_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let src = whisper_folder(dir.path());
    let info = hub.import(&src, Some("w"), &no_converter).unwrap();
    hub.verify("local/w").unwrap();
    std::fs::write(
        info.path.unwrap().join("model.safetensors"),
        vec![2u8; 1000],
    )
    .unwrap();
    let err = hub.verify("local/w").unwrap_err();
    assert!(
        matches!(err, HubError::ChecksumMismatch { ref file, .. } if file == "model.safetensors"),
        "{err}"
    );
    assert!(matches!(
        hub.verify("local/nothing"),
        Err(HubError::UnknownModel(_))
    ));
}

#[test]
fn an_import_reads_its_languages_from_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let english = hub
        .import(&whisper_folder(dir.path()), Some("en"), &no_converter)
        .unwrap();
    assert_eq!(english.languages, ["en"]);
    let (_, snapshot) = hf_snapshot(dir.path());
    let multi = hub.import(&snapshot, Some("multi"), &no_converter).unwrap();
    assert_eq!(multi.languages.len(), 99);
    assert!(multi.languages.iter().any(|l| l == "de"));

    let onnx = dir.path().join("de_DE-thorsten-medium.onnx");
    std::fs::write(&onnx, b"onnx").unwrap();
    std::fs::write(
        dir.path().join("de_DE-thorsten-medium.onnx.json"),
        br#"{"language": {"code": "de_DE", "family": "de"}}"#,
    )
    .unwrap();
    let voice = hub.import(&onnx, None, &no_converter).unwrap();
    assert_eq!(voice.languages, ["de_DE"]);
}

#[test]
fn an_import_of_a_catalog_models_weights_says_which_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = |path: &str, bytes: &[u8]| CatalogFile {
        path: path.into(),
        size: bytes.len() as u64,
        sha256: sha(bytes),
    };
    let entry = CatalogEntry {
        id: "whisper-tiny.en".into(),
        name: "Whisper tiny (English)".into(),
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-tiny.en".into(),
        commit: "87c7102498dcde7456f24cfd30239ca606ed9063".into(),
        files: vec![
            pinned("config.json", b"{}"),
            pinned("model.safetensors", &[1u8; 1000]),
        ],
        languages: vec!["en".into()],
        license: "test".into(),
        description: "test".into(),
    };
    let hub = hub_with(dir.path(), vec![entry]);
    let src = whisper_folder(dir.path());
    let same = hub.import(&src, Some("same"), &no_converter).unwrap();
    assert_eq!(same.catalog_id.as_deref(), Some("whisper-tiny.en"));
    std::fs::write(src.join("model.safetensors"), vec![3u8; 1000]).unwrap();
    let other = hub.import(&src, Some("other"), &no_converter).unwrap();
    assert_eq!(other.catalog_id, None);
    // The catalog's own card does not claim the import's files.
    assert_eq!(
        hub.info("whisper-tiny.en").unwrap().status,
        ModelStatus::NotInstalled
    );
}

/// A folder of the user's that must outlive every removal below.
fn users_folder(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("precious.txt"), b"mine").unwrap();
    folder
}

#[test]
fn removal_touches_only_an_import_folder_inside_the_imports() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let victim = users_folder(dir.path(), "victim");
    let src = whisper_folder(dir.path());
    let info = hub.import(&src, Some("real"), &no_converter).unwrap();
    let models = dir.path().join("models");

    // Ids that climb out of the imports folder, or name it.
    for id in [
        "local/../victim",
        "local/..",
        "local/",
        "local/./real/..",
        "../victim",
    ] {
        let err = hub.remove(id).unwrap_err();
        assert!(matches!(err, HubError::NotRemovable(_)), "{id}: {err}");
    }
    // A link planted in the imports folder, dressed as an import, pointing outside.
    let manifest = std::fs::read_to_string(info.path.as_ref().unwrap().join("izwi-model.json"))
        .unwrap()
        .replace("\"real\"", "\"planted\"");
    std::fs::write(victim.join("izwi-model.json"), manifest).unwrap();
    std::os::unix::fs::symlink(&victim, models.join("planted")).unwrap();
    let err = hub.remove("local/planted").unwrap_err();
    assert!(matches!(err, HubError::NotRemovable(_)), "{err}");
    assert!(!hub.list().iter().any(|m| m.id == "local/planted"));

    // A link inside a real import goes with the import; what it points to stays.
    std::os::unix::fs::symlink(&victim, info.path.as_ref().unwrap().join("link")).unwrap();
    // A folder used in place is the user's.
    let err = hub.remove(&src.display().to_string()).unwrap_err();
    assert!(matches!(err, HubError::NotRemovable(_)), "{err}");

    hub.remove("local/real").unwrap();
    assert!(!info.path.unwrap().exists());
    assert_eq!(std::fs::read(victim.join("precious.txt")).unwrap(), b"mine");
    assert!(src.join("model.safetensors").exists());
    assert!(
        models.join("planted").exists(),
        "the planted link is not ours either"
    );
}

#[test]
fn a_qwen3_tts_folder_is_imported_with_its_codec() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let info = hub
        .import(&qwen3_tts_tiny(), Some("qwen-tiny"), &no_converter)
        .unwrap();
    assert_eq!(info.id, "local/qwen-tiny");
    assert_eq!(
        (info.family, info.task),
        (Family::Qwen3Tts, ModelTask::Speak)
    );
    // The fixture's config names Chinese, English and German (and a dialect).
    assert_eq!(info.languages, ["zh", "en", "de"]);
    let path = info.path.clone().unwrap();
    for file in [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "vocab.json",
        "merges.txt",
        "speech_tokenizer/config.json",
        "speech_tokenizer/model.safetensors",
        "speech_tokenizer/preprocessor_config.json",
    ] {
        assert_eq!(
            std::fs::read(path.join(file)).unwrap(),
            std::fs::read(qwen3_tts_tiny().join(file)).unwrap(),
            "{file}"
        );
    }
    // Its size counts the codec's folder too.
    let weights: u64 = ["model.safetensors", "speech_tokenizer/model.safetensors"]
        .iter()
        .map(|f| std::fs::metadata(qwen3_tts_tiny().join(f)).unwrap().len())
        .sum();
    assert!(
        info.size_bytes > weights,
        "{} <= {weights}",
        info.size_bytes
    );
    hub.verify("local/qwen-tiny").unwrap();
    std::fs::write(path.join("speech_tokenizer/model.safetensors"), b"changed").unwrap();
    assert!(hub.verify("local/qwen-tiny").is_err());

    // Used in place, it is the same family.
    let id = qwen3_tts_tiny().display().to_string();
    assert_eq!(hub.info(&id).unwrap().family, Family::Qwen3Tts);
}

#[test]
fn a_qwen3_tts_folder_without_its_codec_or_tokenizer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let reason = |path: &Path| match hub.import(path, None, &no_converter) {
        Err(HubError::NotImportable { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let src = dir.path().join("qwen");
    copy_dir(&qwen3_tts_tiny(), &src);
    std::fs::remove_file(src.join("speech_tokenizer/model.safetensors")).unwrap();
    assert!(reason(&src).contains("speech_tokenizer/"));
    copy_dir(&qwen3_tts_tiny(), &src);
    for file in ["tokenizer.json", "merges.txt"] {
        std::fs::remove_file(src.join(file)).unwrap();
    }
    assert!(reason(&src).contains("text tokenizer"));
}

#[test]
fn an_lfm2_audio_folder_is_imported_with_its_codec() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let info = hub
        .import(&lfm2_audio_tiny(), Some("lfm2-audio-tiny"), &no_converter)
        .unwrap();
    assert_eq!(
        (info.family, info.task),
        (Family::Lfm2Audio, ModelTask::Transcribe)
    );
    let path = info.path.clone().unwrap();
    for file in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "tokenizer-e351c8d8-checkpoint125.safetensors",
    ] {
        assert_eq!(
            std::fs::read(path.join(file)).unwrap(),
            std::fs::read(lfm2_audio_tiny().join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn an_lfm2_5_audio_folder_is_imported_with_its_detokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("lfm2.5");
    copy_dir(&lfm2_audio_tiny(), &src);
    std::fs::remove_file(src.join("tokenizer-e351c8d8-checkpoint125.safetensors")).unwrap();
    copy_dir(
        &lfm2_audio_detokenizer_tiny(),
        &src.join("audio_detokenizer"),
    );
    let hub = hub(dir.path());
    let info = hub.import(&src, None, &no_converter).unwrap();
    assert_eq!(info.family, Family::Lfm2Audio);
    let path = info.path.clone().unwrap();
    for file in ["config.json", "model.safetensors"] {
        assert_eq!(
            std::fs::read(path.join("audio_detokenizer").join(file)).unwrap(),
            std::fs::read(lfm2_audio_detokenizer_tiny().join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn an_lfm2_audio_folder_without_a_speech_decoder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("no-codec");
    copy_dir(&lfm2_audio_tiny(), &src);
    std::fs::remove_file(src.join("tokenizer-e351c8d8-checkpoint125.safetensors")).unwrap();
    let error = hub(dir.path())
        .import(&src, None, &no_converter)
        .unwrap_err()
        .to_string();
    assert!(error.contains("Mimi codec"), "{error}");
}
