//! Downloads against a hub served on 127.0.0.1, with catalog entries pinned to the
//! files it serves: progress, resume after a cut connection, wrong bytes, servers
//! that ignore Range or send too much, and cancellation never leaving a model that
//! looks installed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use izwi_hub::{
    CancellationToken, CatalogEntry, DownloadProgress, Family, Hub, HubConfig, HubError,
    ModelStatus,
};
use izwi_test_support::hub::{self as support, bytes, HubServer, ServedFile, COMMIT, ENDLESS};

const MODEL: &str = "whisper-tiny.en";
const REPO: &str = "openai/whisper-tiny.en";
const WEIGHTS_LEN: usize = 1_000_003;
const FILES: &[&str] = &[
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
];

fn whisper_files() -> BTreeMap<String, ServedFile> {
    let git = |text: &str| ServedFile {
        bytes: text.as_bytes().to_vec(),
        lfs: false,
    };
    BTreeMap::from([
        ("config.json".into(), git(r#"{"model_type": "whisper"}"#)),
        ("generation_config.json".into(), git("{}")),
        ("tokenizer.json".into(), git(r#"{"version": "1.0"}"#)),
        (
            "model.safetensors".into(),
            ServedFile {
                bytes: bytes(WEIGHTS_LEN, 7),
                lfs: true,
            },
        ),
        // In the repository, not needed by Izwi: never fetched.
        (
            "flax_model.msgpack".into(),
            ServedFile {
                bytes: bytes(5000, 9),
                lfs: true,
            },
        ),
    ])
}

struct Setup {
    server: HubServer,
    hub: Hub,
    dir: tempfile::TempDir,
}

/// The catalog entry pinned to what the test hub serves.
fn pinned() -> CatalogEntry {
    support::entry(MODEL, Family::Whisper, REPO, &whisper_files(), FILES)
}

fn hub_for(endpoint: &str, dir: &Path, entry: CatalogEntry) -> Hub {
    Hub::new(HubConfig {
        cache_dir: Some(dir.join("hf")),
        endpoint: Some(endpoint.to_string()),
        local_dir: dir.join("models"),
        chunk_size: 64 * 1024,
        catalog: Some(vec![entry]),
    })
}

fn setup() -> Setup {
    let server = HubServer::start(REPO, whisper_files());
    let dir = tempfile::tempdir().unwrap();
    let hub = hub_for(&server.endpoint, dir.path(), pinned());
    Setup { server, hub, dir }
}

type Reports = Arc<Mutex<Vec<DownloadProgress>>>;

fn recorder() -> (Reports, impl Fn(&DownloadProgress) + Send + Sync + 'static) {
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    (reports, move |p: &DownloadProgress| {
        sink.lock().unwrap().push(p.clone())
    })
}

fn repo_dir(s: &Setup) -> std::path::PathBuf {
    s.dir
        .path()
        .join("hf")
        .join("models--openai--whisper-tiny.en")
}

/// Files in the blobs folder, by name.
fn blobs(s: &Setup) -> Vec<String> {
    match std::fs::read_dir(repo_dir(s).join("blobs")) {
        Ok(entries) => {
            let mut names: Vec<_> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

fn weights_requests(s: &Setup) -> Vec<Option<String>> {
    s.server
        .requests()
        .into_iter()
        .filter(|(path, _)| path.ends_with("/model.safetensors"))
        .map(|(_, range)| range)
        .collect()
}

fn assert_not_installed(s: &Setup) {
    let info = s.hub.info(MODEL).unwrap();
    assert_eq!(info.status, ModelStatus::NotInstalled);
    assert!(info.path.is_none());
    assert!(matches!(
        s.hub.model_dir(MODEL),
        Err(HubError::NotInstalled(_))
    ));
}

/// No part, lock or blob of the weights, and no link to them.
fn assert_no_trace_of_weights(s: &Setup) {
    let sha = whisper_files()["model.safetensors"].sha256();
    assert!(
        !blobs(s).iter().any(|b| b.starts_with(&sha)),
        "{:?}",
        blobs(s)
    );
    let pointer = repo_dir(s)
        .join("snapshots")
        .join(COMMIT)
        .join("model.safetensors");
    assert!(std::fs::symlink_metadata(pointer).is_err());
}

fn assert_installed_correctly(s: &Setup, dir: &Path) {
    for (name, served) in whisper_files()
        .into_iter()
        .filter(|(n, _)| n != "flax_model.msgpack")
    {
        assert_eq!(
            std::fs::read(dir.join(&name)).unwrap(),
            served.bytes,
            "{name}"
        );
    }
    assert_eq!(
        dir,
        repo_dir(s).join("snapshots").join(COMMIT),
        "the standard Hugging Face layout"
    );
    assert_eq!(s.hub.model_dir(MODEL).unwrap(), dir);
    s.hub.verify(MODEL).unwrap();
}

#[tokio::test]
async fn full_download_reports_progress_and_installs_verified_files() {
    let s = setup();
    assert_not_installed(&s);
    let (reports, on_progress) = recorder();
    let dir = s
        .hub
        .download(MODEL, on_progress, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &dir);

    let reports = reports.lock().unwrap().clone();
    let total = whisper_files()
        .iter()
        .filter(|(n, _)| *n != "flax_model.msgpack")
        .map(|(_, f)| f.bytes.len() as u64)
        .sum::<u64>();
    assert!(reports.len() >= 5, "{} reports", reports.len());
    assert!(reports
        .iter()
        .all(|r| r.total == total && r.model_id == MODEL));
    assert!(reports
        .windows(2)
        .all(|w| w[0].downloaded <= w[1].downloaded));
    assert!(reports
        .iter()
        .any(|r| r.file == "model.safetensors" && !r.done));
    let last = reports.last().unwrap();
    assert!(last.done && last.downloaded == total);
    assert!(reports
        .iter()
        .any(|r| r.bytes_per_second > 0.0 && r.eta_seconds.is_some()));
    assert!(blobs(&s).iter().all(|b| !b.ends_with(".part")));
    // Fetched at the pinned commit, never at a branch or ref.
    assert!(s
        .server
        .requests()
        .iter()
        .all(|(path, _)| path.starts_with(&format!("/{REPO}/resolve/{COMMIT}/"))));

    // Downloading again reuses the cache: nothing is fetched.
    let before = s.server.requests().len();
    let again = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(again, dir);
    assert_eq!(s.server.requests().len(), before);
}

/// Another tool (or a disk fault) cut a file of the shared cache short: the model is not
/// taken as installed, and downloading it again fetches that file and repairs it.
#[tokio::test]
async fn a_file_cut_short_in_the_cache_is_fetched_again() {
    let s = setup();
    let dir = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    let weights = std::fs::canonicalize(dir.join("model.safetensors")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&weights)
        .unwrap()
        .set_len(1000)
        .unwrap();
    assert_not_installed(&s);
    let before = s.server.requests().len();
    let again = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &again);
    let fetched: Vec<_> = s.server.requests()[before..]
        .iter()
        .map(|(path, _)| path.clone())
        .collect();
    assert!(
        !fetched.is_empty() && fetched.iter().all(|p| p.ends_with("/model.safetensors")),
        "{fetched:?}"
    );
}

#[tokio::test]
async fn a_cut_connection_fails_then_the_next_download_resumes() {
    let s = setup();
    let cut_at = 600_000;
    s.server.behaviour.lock().unwrap().cut = Some(("model.safetensors".into(), cut_at));
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HubError::Download { ref file, .. } if file == "model.safetensors"),
        "{err}"
    );
    assert!(err.to_string().contains("resume"), "{err}");
    assert_not_installed(&s);
    let part = format!(
        "{}.izwi.part",
        whisper_files()["model.safetensors"].sha256()
    );
    assert!(blobs(&s).contains(&part), "{:?}", blobs(&s));

    let requests_before = weights_requests(&s).len();
    let (reports, on_progress) = recorder();
    let dir = s
        .hub
        .download(MODEL, on_progress, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &dir);

    // The second download started at the byte where the cut stopped it, not at zero.
    let chunk = 64 * 1024;
    let resumed_from = cut_at;
    let second: Vec<_> = weights_requests(&s)[requests_before..].to_vec();
    assert_eq!(
        second[0].as_deref(),
        Some(format!("bytes={resumed_from}-{}", resumed_from + chunk - 1).as_str())
    );
    assert!(!second.iter().flatten().any(|r| r.starts_with("bytes=0-")));
    // Progress starts from the resumed bytes, and the rate counts only new ones.
    let first = reports.lock().unwrap().first().unwrap().clone();
    assert!(first.downloaded < resumed_from);
    assert!(reports
        .lock()
        .unwrap()
        .iter()
        .any(|r| r.downloaded >= resumed_from));
}

#[tokio::test]
async fn bytes_that_do_not_match_the_pins_are_never_installed() {
    let s = setup();
    s.server.behaviour.lock().unwrap().corrupt = Some("model.safetensors".into());
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    match &err {
        HubError::ChecksumMismatch {
            file,
            algorithm,
            expected,
            actual,
        } => {
            assert_eq!(file, "model.safetensors");
            assert_eq!(*algorithm, "sha256");
            assert_eq!(*expected, whisper_files()["model.safetensors"].sha256());
            assert_ne!(expected, actual);
        }
        other => panic!("expected a checksum mismatch, got {other}"),
    }
    assert_not_installed(&s);
    assert_no_trace_of_weights(&s);

    // With the hub serving the right bytes again, the model installs.
    s.server.behaviour.lock().unwrap().corrupt = None;
    let dir = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &dir);
}

#[tokio::test]
async fn cancelling_leaves_nothing_half_installed_and_stops_fetching() {
    let s = setup();
    s.server.behaviour.lock().unwrap().throttle = Some(Duration::from_millis(5));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let on_progress = move |p: &DownloadProgress| {
        if p.file == "model.safetensors" && p.downloaded > 100_000 {
            trigger.cancel();
        }
    };
    let err = s
        .hub
        .download(MODEL, on_progress, cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, HubError::Cancelled), "{err}");
    assert_not_installed(&s);
    assert_no_trace_of_weights(&s);

    // The download's requests went with it: no request arrives after it.
    let count = s.server.requests().len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.server.requests().len(), count);
}

#[tokio::test]
async fn a_model_larger_than_the_free_space_is_refused_before_fetching() {
    let server = HubServer::start(REPO, whisper_files());
    let dir = tempfile::tempdir().unwrap();
    let mut huge = pinned();
    huge.files[2].size = 1 << 60;
    let s = Setup {
        hub: hub_for(&server.endpoint, dir.path(), huge),
        server,
        dir,
    };
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    match err {
        HubError::NotEnoughSpace {
            needed, available, ..
        } => {
            assert!(needed >= 1 << 60 && available < needed)
        }
        other => panic!("expected not enough space, got {other}"),
    }
    assert!(weights_requests(&s).is_empty());
    assert_not_installed(&s);
}

#[tokio::test]
async fn removing_deletes_the_files_and_their_blobs() {
    let s = setup();
    s.hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    let freed = s.hub.remove(MODEL).unwrap();
    assert!(freed >= WEIGHTS_LEN as u64, "{freed}");
    assert_not_installed(&s);
    assert!(blobs(&s).is_empty(), "{:?}", blobs(&s));
    assert!(!repo_dir(&s).join("snapshots").join(COMMIT).exists());
}

#[tokio::test]
async fn an_unreachable_hub_and_a_missing_file_are_named() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let hub = hub_for(&endpoint, dir.path(), pinned());
    let err = hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, HubError::Network { .. }), "{err}");
    // Said once, in words, without the address of the request.
    let text = err.to_string();
    assert!(text.contains("check the internet connection"), "{text}");
    assert!(
        !text.contains("http://") && !text.contains("resolve/"),
        "{text}"
    );

    let mut files = whisper_files();
    files.remove("tokenizer.json");
    let server = HubServer::start(REPO, files);
    let hub = hub_for(&server.endpoint, dir.path(), pinned());
    let err = hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HubError::MissingRemoteFile { ref file, .. } if file == "tokenizer.json"),
        "{err}"
    );
    assert!(!err.to_string().contains("http://"), "{err}");
    assert!(matches!(
        hub.download("whisper-huge", |_| {}, CancellationToken::new())
            .await,
        Err(HubError::UnknownModel(_))
    ));
}

#[tokio::test]
async fn a_part_file_is_resumed_from_its_length() {
    let s = setup();
    let weights = &whisper_files()["model.safetensors"];
    let blobs_dir = repo_dir(&s).join("blobs");
    std::fs::create_dir_all(&blobs_dir).unwrap();
    let have = 300_001;
    std::fs::write(
        blobs_dir.join(format!("{}.izwi.part", weights.sha256())),
        &weights.bytes[..have],
    )
    .unwrap();
    assert_not_installed(&s);
    let dir = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &dir);
    let first = weights_requests(&s)[0].clone().unwrap();
    assert_eq!(first, format!("bytes={have}-{}", have + 64 * 1024 - 1));
}

#[tokio::test]
async fn a_complete_but_unchecked_part_never_counts_as_installed() {
    // What a crash while hashing leaves: every byte fetched, nothing checked yet.
    let s = setup();
    let weights = &whisper_files()["model.safetensors"];
    let blobs_dir = repo_dir(&s).join("blobs");
    std::fs::create_dir_all(&blobs_dir).unwrap();
    let mut wrong = weights.bytes.clone();
    wrong[10] ^= 1;
    std::fs::write(
        blobs_dir.join(format!("{}.izwi.part", weights.sha256())),
        &wrong,
    )
    .unwrap();
    assert_not_installed(&s);
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, HubError::ChecksumMismatch { .. }), "{err}");
    assert_not_installed(&s);
    assert_no_trace_of_weights(&s);
    let dir = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_installed_correctly(&s, &dir);
}

#[tokio::test]
async fn a_server_ignoring_range_is_stopped_without_reading_its_body() {
    let s = setup();
    s.server.behaviour.lock().unwrap().ignore_range = true;
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HubError::Download { .. }) && err.to_string().contains("byte range"),
        "{err}"
    );
    assert_not_installed(&s);
    // The client hung up: the server could write only what socket buffers hold of
    // its 1 GiB body, not the body a buffering client would have read.
    let sent = s.server.behaviour.lock().unwrap().sent;
    assert!(sent < ENDLESS / 16, "{sent} bytes were taken");
}

#[tokio::test]
async fn a_server_sending_more_than_announced_is_stopped() {
    let s = setup();
    s.server.behaviour.lock().unwrap().overlong = true;
    let err = s
        .hub
        .download(MODEL, |_| {}, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HubError::Download { .. }) && err.to_string().contains("more bytes"),
        "{err}"
    );
    assert_not_installed(&s);
    let sent = s.server.behaviour.lock().unwrap().sent;
    assert!(sent < ENDLESS / 16, "{sent} bytes were taken");
}
