//! Models another tool put in the Hugging Face cache are found and used as they are,
//! checked against the catalog's pins.
#![cfg(unix)]

use std::path::Path;

use izwi_hub::{
    CatalogEntry, CatalogFile, Family, Hub, HubConfig, HubError, ModelStatus, ModelTask,
};
use sha2::Digest;

const COMMIT: &str = "fedcba9876543210fedcba9876543210fedcba98";
const FOLDER: &str = "models--rhasspy--piper-voices";
const BASE: &str = "en/en_US/joe/medium/en_US-joe-medium";
const ONNX: &[u8] = b"not really onnx";
const JSON: &[u8] = b"{\"audio\": {\"sample_rate\": 22050}}";

fn sha(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn voice(id: &str, base: &str) -> CatalogEntry {
    let file = |suffix: &str, bytes: &[u8]| CatalogFile {
        path: format!("{base}{suffix}"),
        size: bytes.len() as u64,
        sha256: sha(bytes),
    };
    CatalogEntry {
        id: id.into(),
        name: id.into(),
        family: Family::Piper,
        task: ModelTask::Speak,
        repo: "rhasspy/piper-voices".into(),
        commit: COMMIT.into(),
        files: vec![file(".onnx", ONNX), file(".onnx.json", JSON)],
        languages: vec!["en".into()],
        license: "test".into(),
        description: "test".into(),
    }
}

fn hub(dir: &Path) -> Hub {
    Hub::new(HubConfig {
        cache_dir: Some(dir.join("hf")),
        // Nothing listens here: these tests must not need the network.
        endpoint: Some("http://127.0.0.1:9".into()),
        local_dir: dir.join("models"),
        chunk_size: 1 << 20,
        catalog: Some(vec![
            voice("joe", BASE),
            voice("amy", "en/en_US/amy/medium/en_US-amy-medium"),
        ]),
    })
}

/// Lays out a file as huggingface_hub does: the blob named by its hash and a relative
/// link from the snapshot.
fn place(cache: &Path, repo_folder: &str, file: &str, bytes: &[u8]) {
    let repo = cache.join(repo_folder);
    let hash = sha(bytes);
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::write(repo.join("blobs").join(&hash), bytes).unwrap();
    let link = repo.join("snapshots").join(COMMIT).join(file);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let depth = file.matches('/').count() + 2;
    let target = format!("{}blobs/{hash}", "../".repeat(depth));
    std::os::unix::fs::symlink(target, &link).unwrap();
}

#[test]
fn a_voice_fetched_by_another_tool_is_installed_and_verifiable() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("hf");
    place(&cache, FOLDER, &format!("{BASE}.onnx"), ONNX);

    let hub = hub(dir.path());
    // One of two files: not installed.
    assert_eq!(hub.info("joe").unwrap().status, ModelStatus::NotInstalled);

    place(&cache, FOLDER, &format!("{BASE}.onnx.json"), JSON);
    let info = hub.info("joe").unwrap();
    assert_eq!(info.status, ModelStatus::Installed);
    let expected = cache
        .join(FOLDER)
        .join("snapshots")
        .join(COMMIT)
        .join("en/en_US/joe/medium");
    assert_eq!(info.path.as_deref(), Some(expected.as_path()));
    assert_eq!(info.disk_bytes, (ONNX.len() + JSON.len()) as u64);
    hub.verify("joe").unwrap();
    // Other voices of the same repository are not installed by this one.
    assert_eq!(hub.info("amy").unwrap().status, ModelStatus::NotInstalled);

    // A blob changed on disk no longer matches the catalog's pin.
    let blob = cache.join(FOLDER).join("blobs").join(sha(ONNX));
    std::fs::write(&blob, b"tampered, and of another size").unwrap();
    assert!(matches!(
        hub.verify("joe"),
        Err(HubError::ChecksumMismatch { .. })
    ));

    // Removing it deletes its links and blobs and leaves other repositories alone.
    place(&cache, "models--openai--whisper-base", "config.json", b"{}");
    hub.remove("joe").unwrap();
    assert_eq!(hub.info("joe").unwrap().status, ModelStatus::NotInstalled);
    assert!(std::fs::read_dir(cache.join(FOLDER).join("blobs"))
        .unwrap()
        .next()
        .is_none());
    assert!(cache
        .join("models--openai--whisper-base/blobs")
        .join(sha(b"{}"))
        .exists());
}

#[test]
fn entries_that_are_not_pinned_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut floating = voice("floating", BASE);
    floating.commit = "v1.0.0".into();
    let mut unhashed = voice("unhashed", BASE);
    unhashed.files[0].sha256 = String::new();
    let hub = Hub::new(HubConfig {
        catalog: Some(vec![floating, unhashed, voice("joe", BASE)]),
        ..HubConfig::new(dir.path().join("models"))
    });
    let ids: Vec<_> = hub.list().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["joe"]);
    assert!(matches!(
        hub.info("floating"),
        Err(HubError::UnknownModel(_))
    ));
}

#[test]
fn the_built_in_catalog_is_pinned_and_used_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(HubConfig {
        cache_dir: Some(dir.path().join("hf")),
        ..HubConfig::new(dir.path().join("models"))
    });
    assert_eq!(hub.catalog().len(), izwi_hub::catalog().len());
    for entry in hub.catalog() {
        assert!(entry.is_pinned(), "{}", entry.id);
        assert_eq!(entry.commit.len(), 40, "{}", entry.id);
        for file in &entry.files {
            assert_eq!(file.sha256.len(), 64, "{} {}", entry.id, file.path);
            assert!(file.size > 0, "{} {}", entry.id, file.path);
        }
    }
}
