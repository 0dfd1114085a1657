//! Checksums the hub publishes: sha256 for LFS files (also the name of their blob in
//! the cache), and git's blob id (sha1 over a `blob <len>\0` header) for small files
//! kept in git itself.

use std::io::Read;
use std::path::Path;

use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::HubError;

/// What a file's content must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    Sha256(String),
    GitBlob(String),
}

impl Checksum {
    /// The checksum a cache blob name stands for: 64 hex digits are an LFS sha256,
    /// 40 a git blob id; anything else names nothing we can check.
    pub fn from_blob_name(name: &str) -> Option<Self> {
        let hex = name.bytes().all(|b| b.is_ascii_hexdigit());
        match name.len() {
            64 if hex => Some(Checksum::Sha256(name.to_ascii_lowercase())),
            40 if hex => Some(Checksum::GitBlob(name.to_ascii_lowercase())),
            _ => None,
        }
    }

    /// Hashes `path` and fails with `ChecksumMismatch` (naming `file`) unless it matches.
    pub fn verify(&self, path: &Path, file: &str) -> Result<(), HubError> {
        let (algorithm, expected, actual) = match self {
            Checksum::Sha256(expected) => ("sha256", expected, sha256_file(path)?),
            Checksum::GitBlob(expected) => ("git blob id", expected, git_blob_id(path)?),
        };
        if actual.eq_ignore_ascii_case(expected) {
            Ok(())
        } else {
            Err(HubError::ChecksumMismatch {
                file: file.to_string(),
                algorithm,
                expected: expected.clone(),
                actual,
            })
        }
    }
}

pub fn sha256_file(path: &Path) -> Result<String, HubError> {
    let mut hasher = Sha256::new();
    hash_into(path, |bytes| hasher.update(bytes))?;
    Ok(hex(&hasher.finalize()))
}

pub fn git_blob_id(path: &Path) -> Result<String, HubError> {
    let len = std::fs::metadata(path)
        .map_err(|e| HubError::io(path, e))?
        .len();
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {len}\0").as_bytes());
    hash_into(path, |bytes| hasher.update(bytes))?;
    Ok(hex(&hasher.finalize()))
}

fn hash_into(path: &Path, mut update: impl FnMut(&[u8])) -> Result<(), HubError> {
    let mut file = std::fs::File::open(path).map_err(|e| HubError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| HubError::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        update(&buf[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello\n").unwrap();
        // `sha256sum` and `git hash-object` of "hello\n".
        assert_eq!(
            sha256_file(&path).unwrap(),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(
            git_blob_id(&path).unwrap(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        let good = Checksum::from_blob_name("ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        good.verify(&path, "f").unwrap();
        let bad = Checksum::Sha256("0".repeat(64));
        assert!(matches!(
            bad.verify(&path, "f"),
            Err(HubError::ChecksumMismatch { .. })
        ));
        assert_eq!(Checksum::from_blob_name("not-a-hash"), None);
    }
}
