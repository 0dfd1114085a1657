//! The model.bin reader: versions, dtypes, variables and aliases, read with bounded
//! allocation.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use candle_core::DType;

use super::files::{io_err, open};
use super::{CtranslateError, Result, MAX_VERSION, MIN_VERSION, WHISPER_REVISION};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Dtype {
    pub(super) fn from_id(id: u8) -> Option<Self> {
        // Order of CTranslate2's DataType enum (include/ctranslate2/types.h).
        Some(match id {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            _ => return None,
        })
    }

    pub(super) fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }

    pub(super) fn float(self) -> Option<DType> {
        match self {
            Self::F32 => Some(DType::F32),
            Self::F16 => Some(DType::F16),
            Self::Bf16 => Some(DType::BF16),
            _ => None,
        }
    }
}

pub(super) struct RawVar {
    pub(super) shape: Vec<usize>,
    pub(super) dtype: Ct2Dtype,
    pub(super) bytes: Vec<u8>,
}

pub(super) struct Checkpoint {
    pub(super) vars: BTreeMap<String, RawVar>,
    pub(super) aliases: Vec<(String, String)>,
}

/// A forward-only reader that knows how many bytes are left, so that no length read
/// from the file is trusted before it is checked against what the file really holds.
pub(super) struct Reader<R> {
    pub(super) inner: R,
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) path: PathBuf,
}

impl<R: Read> Reader<R> {
    pub(super) fn remaining(&self) -> u64 {
        self.len - self.offset
    }

    pub(super) fn bytes(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<Vec<u8>> {
        if n > self.remaining() {
            return Err(CtranslateError::Truncated {
                what: what(),
                offset: self.offset,
                needed: n,
                remaining: self.remaining(),
            });
        }
        // n <= remaining <= file size, so this allocation is bounded by the file.
        let mut buf = vec![0u8; n as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(io_err(&self.path))?;
        self.offset += n;
        Ok(buf)
    }

    pub(super) fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let bytes = self.bytes(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&bytes);
        Ok(out)
    }

    pub(super) fn u8(&mut self, what: &dyn Fn() -> String) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(super) fn u16(&mut self, what: &dyn Fn() -> String) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(super) fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(super) fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let len = self.u16(what)?;
        let mut bytes = self.bytes(u64::from(len), what)?;
        // The length counts a trailing NUL (C string); CTranslate2 reads up to it.
        if let Some(nul) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(nul);
        }
        String::from_utf8(bytes).map_err(|_| CtranslateError::BadVariable {
            name: what(),
            problem: "string is not UTF-8".into(),
        })
    }
}

pub(super) fn read_model_bin(path: &Path) -> Result<Checkpoint> {
    let file = open(path)?;
    let len = file.metadata().map_err(io_err(path))?.len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 20, file),
        offset: 0,
        len,
        path: path.to_path_buf(),
    };

    let version = r.u32(&|| "binary version".into())?;
    if !(MIN_VERSION..=MAX_VERSION).contains(&version) {
        return Err(CtranslateError::UnsupportedVersion(version));
    }
    let spec = r.string(&|| "spec name".into())?;
    if spec != "WhisperSpec" {
        return Err(CtranslateError::NotWhisper(spec));
    }
    let revision = r.u32(&|| "spec revision".into())?;
    if revision != WHISPER_REVISION {
        return Err(CtranslateError::UnsupportedRevision(revision));
    }

    let count = r.u32(&|| "variable count".into())?;
    let mut vars = BTreeMap::new();
    for i in 0..count {
        let name = r.string(&|| format!("name of variable {i}"))?;
        let what = |field: &str| {
            let name = name.clone();
            let field = field.to_string();
            move || format!("{field} of variable {name:?}")
        };
        let rank = r.u8(&what("rank"))?;
        let mut shape = Vec::with_capacity(usize::from(rank));
        for _ in 0..rank {
            shape.push(r.u32(&what("shape"))? as usize);
        }
        let dtype_id = r.u8(&what("dtype"))?;
        let dtype = Ct2Dtype::from_id(dtype_id).ok_or_else(|| CtranslateError::UnknownDtype {
            name: name.clone(),
            id: dtype_id,
        })?;
        let byte_count = r.u32(&what("byte count"))?;
        let expected = shape
            .iter()
            .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| CtranslateError::BadVariable {
                name: name.clone(),
                problem: format!("shape {shape:?} is too large"),
            })?;
        if byte_count as usize != expected {
            return Err(CtranslateError::BadVariable {
                name,
                problem: format!(
                    "holds {byte_count} bytes but shape {shape:?} of {dtype:?} needs {expected}"
                ),
            });
        }
        let bytes = r.bytes(u64::from(byte_count), &what("data"))?;
        if vars
            .insert(
                name.clone(),
                RawVar {
                    shape,
                    dtype,
                    bytes,
                },
            )
            .is_some()
        {
            return Err(CtranslateError::BadVariable {
                name,
                problem: "appears twice".into(),
            });
        }
    }

    let alias_count = r.u32(&|| "alias count".into())?;
    let mut aliases = Vec::new();
    for i in 0..alias_count {
        let alias = r.string(&|| format!("alias {i}"))?;
        let target = r.string(&|| format!("target of alias {alias:?}"))?;
        aliases.push((alias, target));
    }
    // CTranslate2 ignores what follows, but extra bytes mean a damaged file (or parts
    // of a split file joined wrongly): refuse rather than convert something odd.
    if r.remaining() != 0 {
        return Err(CtranslateError::TrailingBytes(r.remaining()));
    }
    Ok(Checkpoint { vars, aliases })
}
