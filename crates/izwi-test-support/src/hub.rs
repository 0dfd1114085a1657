//! A small Hugging Face hub on 127.0.0.1: ranged file downloads (`resolve`) with the
//! commit and etag headers, serving generated files, with faults a test can switch
//! on; and catalog entries pinned to those files.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha1::Sha1;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

#[derive(Clone)]
pub struct ServedFile {
    pub bytes: Vec<u8>,
    /// Served from LFS (sha256 in the listing and as the etag), else from git.
    pub lfs: bool,
}

impl ServedFile {
    pub fn sha256(&self) -> String {
        hex(&Sha256::digest(&self.bytes))
    }

    pub fn git_blob_id(&self) -> String {
        let mut h = Sha1::new();
        h.update(format!("blob {}\0", self.bytes.len()).as_bytes());
        h.update(&self.bytes);
        hex(&h.finalize())
    }
}

struct Hashed {
    file: ServedFile,
    sha256: String,
    blob_id: String,
}

/// Faults and a log, shared with the test.
#[derive(Default)]
pub struct Behaviour {
    /// The next download of this file stops sending at this byte and drops the connection.
    pub cut: Option<(String, u64)>,
    /// This file's bytes are served with one byte changed (the listing keeps the true hash).
    pub corrupt: Option<String>,
    /// Pause between 8 KiB pieces of file bodies.
    pub throttle: Option<Duration>,
    /// Answers every download with 200 and an endless body, ignoring Range.
    pub ignore_range: bool,
    /// Answers with the range asked for, then keeps sending past its end (no
    /// content-length: the body ends when the connection closes).
    pub overlong: bool,
    /// Bytes of file bodies written to clients.
    pub sent: u64,
    /// Every request: (path, Range header).
    pub log: Vec<(String, Option<String>)>,
}

pub struct HubServer {
    pub endpoint: String,
    pub behaviour: Arc<Mutex<Behaviour>>,
}

impl HubServer {
    /// Serves `files` (paths in the repository) of `repo` at `COMMIT`.
    pub fn start(repo: &str, files: BTreeMap<String, ServedFile>) -> Self {
        let behaviour = Arc::new(Mutex::new(Behaviour::default()));
        // Hashed once: hashing a large file on every request would be the server's
        // cost, measured as the client's.
        let files: BTreeMap<String, Hashed> = files
            .into_iter()
            .map(|(name, file)| {
                let hashed = Hashed {
                    sha256: file.sha256(),
                    blob_id: file.git_blob_id(),
                    file,
                };
                (name, hashed)
            })
            .collect();
        let files = Arc::new(files);
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", std_listener.local_addr().unwrap());
        let b = behaviour.clone();
        let repo = repo.to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let (b, f, repo) = (b.clone(), files.clone(), repo.clone());
                    tokio::spawn(async move {
                        let _ = serve(stream, &repo, &f, &b).await;
                    });
                }
            });
        });
        Self {
            endpoint,
            behaviour,
        }
    }

    pub fn requests(&self) -> Vec<(String, Option<String>)> {
        self.behaviour.lock().unwrap().log.clone()
    }
}

async fn serve(
    mut stream: TcpStream,
    repo: &str,
    files: &BTreeMap<String, Hashed>,
    behaviour: &Mutex<Behaviour>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.lines();
    let target = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let range = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("range"))
        .map(|(_, v)| v.trim().to_string());
    behaviour
        .lock()
        .unwrap()
        .log
        .push((target.clone(), range.clone()));
    let path = target.split('?').next().unwrap_or("");

    let prefix = format!("/{repo}/resolve/{COMMIT}/");
    let Some(file) = path
        .strip_prefix(&prefix)
        .and_then(|name| files.get(name).map(|f| (name, f)))
    else {
        return stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    };
    let (name, served) = file;
    let len = served.file.bytes.len() as u64;
    let (ignore_range, overlong) = {
        let b = behaviour.lock().unwrap();
        (b.ignore_range, b.overlong)
    };
    if ignore_range {
        let head =
            format!("HTTP/1.1 200 OK\r\ncontent-length: {ENDLESS}\r\nconnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).await?;
        return send_endless(&mut stream, behaviour).await;
    }
    let (start, end) = match range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
    {
        Some((a, b)) => {
            let a: u64 = a.parse().unwrap_or(0);
            let b: u64 = b.parse().unwrap_or(len - 1);
            (a, b.min(len - 1))
        }
        None => (0, len - 1),
    };
    // Only the requested range is copied: files may be hundreds of MB.
    let mut body = served.file.bytes[start as usize..=end as usize].to_vec();
    let (cut, throttle) = {
        let mut b = behaviour.lock().unwrap();
        if b.corrupt.as_deref() == Some(name) && end == len - 1 {
            let last = body.len() - 1;
            body[last] ^= 0xff;
        }
        // Only a body request (not hf-hub's 1-byte probe) is cut, and only once.
        let cut = match &b.cut {
            Some((f, at)) if f == name && end > start && *at >= start && *at <= end => {
                let at = *at;
                b.cut = None;
                Some(at)
            }
            _ => None,
        };
        (cut, b.throttle)
    };
    let etag = if served.file.lfs {
        &served.sha256
    } else {
        &served.blob_id
    };
    let length = if overlong {
        String::new()
    } else {
        format!("content-length: {}\r\n", end - start + 1)
    };
    let mut head = format!(
        "HTTP/1.1 206 Partial Content\r\n{length}content-range: bytes {start}-{end}/{len}\r\naccept-ranges: bytes\r\nx-repo-commit: {COMMIT}\r\netag: \"{}\"\r\nconnection: close\r\n",
        served.blob_id,
    );
    if served.file.lfs {
        head.push_str(&format!(
            "x-linked-etag: \"{etag}\"\r\nx-linked-size: {len}\r\n"
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    let body = match cut {
        Some(at) => &body[..(at - start) as usize],
        None => &body[..],
    };
    for piece in body.chunks(8192) {
        stream.write_all(piece).await?;
        behaviour.lock().unwrap().sent += piece.len() as u64;
        if let Some(pause) = throttle {
            tokio::time::sleep(pause).await;
        }
    }
    if overlong {
        return send_endless(&mut stream, behaviour).await;
    }
    stream.flush().await?;
    if cut.is_some() {
        // Drop the connection with the body short of its content-length.
        stream.shutdown().await?;
    }
    Ok(())
}

/// What an endless body claims, and sends at most: far more than any client should take.
pub const ENDLESS: u64 = 1 << 30;

/// Sends zeros until the client hangs up (or `ENDLESS` bytes), counting them.
async fn send_endless(stream: &mut TcpStream, behaviour: &Mutex<Behaviour>) -> std::io::Result<()> {
    let piece = [0u8; 8192];
    let mut sent = 0;
    while sent < ENDLESS {
        stream.write_all(&piece).await?;
        sent += piece.len() as u64;
        behaviour.lock().unwrap().sent += piece.len() as u64;
    }
    Ok(())
}

/// A catalog entry for `files` (paths in `repo`) served by this hub at `COMMIT`,
/// pinned to their sizes and sha256.
pub fn entry(
    id: &str,
    family: izwi_hub::Family,
    repo: &str,
    files: &BTreeMap<String, ServedFile>,
    names: &[&str],
) -> izwi_hub::CatalogEntry {
    let task = match family {
        izwi_hub::Family::Whisper
        | izwi_hub::Family::VoxtralRealtime
        | izwi_hub::Family::Lfm2Audio => izwi_hub::ModelTask::Transcribe,
        izwi_hub::Family::Piper | izwi_hub::Family::Qwen3Tts => izwi_hub::ModelTask::Speak,
        izwi_hub::Family::Llama => izwi_hub::ModelTask::Chat,
    };
    izwi_hub::CatalogEntry {
        id: id.into(),
        name: id.into(),
        family,
        task,
        repo: repo.into(),
        commit: COMMIT.into(),
        files: names
            .iter()
            .map(|name| izwi_hub::CatalogFile {
                path: name.to_string(),
                size: files[*name].bytes.len() as u64,
                sha256: files[*name].sha256(),
            })
            .collect(),
        languages: vec!["en".into()],
        license: "test".into(),
        description: "served on 127.0.0.1".into(),
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Deterministic pseudo-random bytes.
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
