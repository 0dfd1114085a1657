//! Models another tool put in the Hugging Face cache are found and used as they are.
#![cfg(unix)]

use std::path::Path;

use izwi_hub::{Hub, HubConfig, HubError, ModelStatus};

fn hub(dir: &Path) -> Hub {
    Hub::new(HubConfig {
        cache_dir: Some(dir.join("hf")),
        // Nothing listens here: these tests must not need the network.
        endpoint: Some("http://127.0.0.1:9".into()),
        local_dir: dir.join("models"),
        chunk_size: 1 << 20,
    })
}

/// Lays out a file as huggingface_hub does: the blob named by its hash, a relative
/// link from the snapshot, and the revision's ref.
fn place(
    cache: &Path,
    repo_folder: &str,
    revision: &str,
    commit: &str,
    file: &str,
    bytes: &[u8],
    hash: &str,
) {
    let repo = cache.join(repo_folder);
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::write(repo.join("blobs").join(hash), bytes).unwrap();
    let link = repo.join("snapshots").join(commit).join(file);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let depth = file.matches('/').count() + 2;
    let target = format!("{}blobs/{hash}", "../".repeat(depth));
    std::os::unix::fs::symlink(target, &link).unwrap();
    let ref_path = repo.join("refs").join(revision);
    std::fs::create_dir_all(ref_path.parent().unwrap()).unwrap();
    std::fs::write(ref_path, commit).unwrap();
}

#[test]
fn a_voice_fetched_by_another_tool_is_installed_and_verifiable() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("hf");
    let commit = "fedcba9876543210fedcba9876543210fedcba98";
    let onnx = b"not really onnx".to_vec();
    let json = b"{\"audio\": {\"sample_rate\": 22050}}".to_vec();
    let sha = |b: &[u8]| {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let folder = "models--rhasspy--piper-voices";
    let base = "en/en_US/joe/medium/en_US-joe-medium";
    place(
        &cache,
        folder,
        "v1.0.0",
        commit,
        &format!("{base}.onnx"),
        &onnx,
        &sha(&onnx),
    );

    let hub = hub(dir.path());
    // One of two files: not installed.
    assert_eq!(
        hub.info("piper-en_US-joe-medium").unwrap().status,
        ModelStatus::NotInstalled
    );

    place(
        &cache,
        folder,
        "v1.0.0",
        commit,
        &format!("{base}.onnx.json"),
        &json,
        &sha(&json),
    );
    let info = hub.info("piper-en_US-joe-medium").unwrap();
    assert_eq!(info.status, ModelStatus::Installed);
    let expected = cache
        .join(folder)
        .join("snapshots")
        .join(commit)
        .join("en/en_US/joe/medium");
    assert_eq!(info.path.as_deref(), Some(expected.as_path()));
    assert_eq!(info.disk_bytes, (onnx.len() + json.len()) as u64);
    hub.verify("piper-en_US-joe-medium").unwrap();
    // Other voices of the same repository are not installed by this one.
    assert_eq!(
        hub.info("piper-en_US-amy-medium").unwrap().status,
        ModelStatus::NotInstalled
    );

    // A blob changed on disk no longer matches the hash it is named by.
    let blob = cache.join(folder).join("blobs").join(sha(&onnx));
    std::fs::write(&blob, b"tampered").unwrap();
    assert!(matches!(
        hub.verify("piper-en_US-joe-medium"),
        Err(HubError::ChecksumMismatch { .. })
    ));

    // Removing it deletes its links and blobs and leaves other repositories alone.
    place(
        &cache,
        "models--openai--whisper-base",
        "refs/pr/22",
        commit,
        "config.json",
        b"{}",
        "9e26dfeeb6e641a33dae4961196235bdb965b21b",
    );
    hub.remove("piper-en_US-joe-medium").unwrap();
    assert_eq!(
        hub.info("piper-en_US-joe-medium").unwrap().status,
        ModelStatus::NotInstalled
    );
    assert!(std::fs::read_dir(cache.join(folder).join("blobs"))
        .unwrap()
        .next()
        .is_none());
    assert!(cache
        .join("models--openai--whisper-base/blobs/9e26dfeeb6e641a33dae4961196235bdb965b21b")
        .exists());
}

#[test]
fn a_revision_pinned_to_a_commit_needs_no_ref() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path());
    let entry = izwi_hub::CatalogEntry::find("whisper-large-v3-turbo").unwrap();
    let snapshot = dir
        .path()
        .join("hf/models--openai--whisper-large-v3-turbo/snapshots")
        .join(entry.revision);
    std::fs::create_dir_all(&snapshot).unwrap();
    for file in entry.files {
        std::fs::write(snapshot.join(file), b"x").unwrap();
    }
    let info = hub.info(entry.id).unwrap();
    assert_eq!(info.status, ModelStatus::Installed);
    assert_eq!(info.path.as_deref(), Some(snapshot.as_path()));
}
