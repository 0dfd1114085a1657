//! GGUF files (llama.cpp's format): metadata by key and quantized tensors by name,
//! with errors that name the file and what is missing.

use std::cell::RefCell;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::{Device, Result};

pub struct GgufFile {
    path: PathBuf,
    content: Content,
    reader: RefCell<BufReader<File>>,
}

impl GgufFile {
    pub fn open(path: &Path) -> Result<Self> {
        let fail = |what: String| candle_core::Error::msg(format!("{}: {what}", path.display()));
        let file = File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader)
            .map_err(|e| fail(format!("not a readable GGUF file: {e}")))?;
        Ok(Self {
            path: path.to_path_buf(),
            content,
            reader: RefCell::new(reader),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, what: String) -> candle_core::Error {
        candle_core::Error::msg(format!("{}: {what}", self.path.display()))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    fn require(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| self.error(format!("the metadata has no `{key}`")))
    }

    /// An integer value, whichever integer type the writer chose.
    pub fn integer(&self, key: &str) -> Result<Option<u64>> {
        self.get(key)
            .map(|v| integer(v).ok_or_else(|| self.error(format!("`{key}` is not an integer"))))
            .transpose()
    }

    pub fn required_integer(&self, key: &str) -> Result<u64> {
        self.require(key)?;
        self.integer(key).map(|v| v.unwrap_or_default())
    }

    pub fn float(&self, key: &str) -> Result<Option<f64>> {
        self.get(key)
            .map(|v| match v {
                Value::F32(x) => Ok(*x as f64),
                Value::F64(x) => Ok(*x),
                other => integer(other)
                    .map(|i| i as f64)
                    .ok_or_else(|| self.error(format!("`{key}` is not a number"))),
            })
            .transpose()
    }

    pub fn boolean(&self, key: &str) -> Result<Option<bool>> {
        self.get(key)
            .map(|v| match v {
                Value::Bool(b) => Ok(*b),
                _ => Err(self.error(format!("`{key}` is not a boolean"))),
            })
            .transpose()
    }

    pub fn string(&self, key: &str) -> Result<Option<&str>> {
        self.get(key)
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                _ => Err(self.error(format!("`{key}` is not a string"))),
            })
            .transpose()
    }

    pub fn required_string(&self, key: &str) -> Result<&str> {
        self.require(key)?;
        self.string(key).map(|v| v.unwrap_or_default())
    }

    pub fn strings(&self, key: &str) -> Result<Vec<&str>> {
        match self.require(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.as_str()),
                    _ => Err(self.error(format!("`{key}` holds a value that is not a string"))),
                })
                .collect(),
            _ => Err(self.error(format!("`{key}` is not a list"))),
        }
    }

    pub fn integers(&self, key: &str) -> Result<Vec<u64>> {
        match self.require(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    integer(v).ok_or_else(|| {
                        self.error(format!("`{key}` holds a value that is not an integer"))
                    })
                })
                .collect(),
            _ => Err(self.error(format!("`{key}` is not a list"))),
        }
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads a tensor as stored (quantized or not); its shape is `[rows, columns]` for a
    /// matrix, GGUF's dimension order reversed.
    pub fn tensor(&self, name: &str, device: &Device) -> Result<QTensor> {
        if !self.has_tensor(name) {
            return Err(self.error(format!("the file has no tensor `{name}`")));
        }
        self.content
            .tensor(&mut *self.reader.borrow_mut(), name, device)
            .map_err(|e| self.error(format!("cannot read tensor `{name}`: {e}")))
    }
}

fn integer(value: &Value) -> Option<u64> {
    match *value {
        Value::U8(v) => Some(v as u64),
        Value::U16(v) => Some(v as u64),
        Value::U32(v) => Some(v as u64),
        Value::U64(v) => Some(v),
        Value::I8(v) => u64::try_from(v).ok(),
        Value::I16(v) => u64::try_from(v).ok(),
        Value::I32(v) => u64::try_from(v).ok(),
        Value::I64(v) => u64::try_from(v).ok(),
        _ => None,
    }
}
