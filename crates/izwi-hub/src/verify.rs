//! Checking a file against a pinned size and sha256, streaming (models are large).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::HubError;

/// Fails with `ChecksumMismatch` (naming `name`) unless `path` has `size` bytes
/// hashing to `sha256`.
pub fn check(path: &Path, name: &str, size: u64, sha256: &str) -> Result<(), HubError> {
    let len = std::fs::metadata(path)
        .map_err(|e| HubError::io(path, e))?
        .len();
    if len != size {
        return Err(HubError::ChecksumMismatch {
            file: name.to_string(),
            algorithm: "size",
            expected: format!("{size} bytes"),
            actual: format!("{len} bytes"),
        });
    }
    let actual = sha256_file(path)?;
    if !actual.eq_ignore_ascii_case(sha256) {
        return Err(HubError::ChecksumMismatch {
            file: name.to_string(),
            algorithm: "sha256",
            expected: sha256.to_string(),
            actual,
        });
    }
    Ok(())
}

pub fn sha256_file(path: &Path) -> Result<String, HubError> {
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path).map_err(|e| HubError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| HubError::io(path, e))?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_size_then_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello\n").unwrap();
        // `sha256sum` of "hello\n".
        let sha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        assert_eq!(sha256_file(&path).unwrap(), sha);
        check(&path, "f", 6, sha).unwrap();
        assert!(matches!(
            check(&path, "f", 7, sha),
            Err(HubError::ChecksumMismatch {
                algorithm: "size",
                ..
            })
        ));
        assert!(matches!(
            check(&path, "f", 6, &"0".repeat(64)),
            Err(HubError::ChecksumMismatch {
                algorithm: "sha256",
                ..
            })
        ));
    }
}
