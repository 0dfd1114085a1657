//! CTranslate2 variable names to Hugging Face Whisper names: fused attention split,
//! quantized weights dequantized, the model's dimensions read off its variables.

use std::collections::{BTreeMap, HashMap};

use candle_core::{DType, Device, Tensor};

use super::model_bin::{Checkpoint, Ct2Dtype, RawVar};
use super::{CtranslateError, Result};

#[derive(Debug, Clone)]
pub(super) struct Dims {
    pub(super) d_model: usize,
    pub(super) n_mels: usize,
    pub(super) encoder_layers: usize,
    pub(super) decoder_layers: usize,
    pub(super) encoder_heads: usize,
    pub(super) decoder_heads: usize,
    pub(super) encoder_ffn: usize,
    pub(super) decoder_ffn: usize,
    pub(super) vocab_size: usize,
    pub(super) max_source_positions: usize,
    pub(super) max_target_positions: usize,
    pub(super) dtype: DType,
    pub(super) dequantized: bool,
}

impl Dims {
    /// OpenAI's own rule (whisper/model.py): English-only models have 51864 tokens,
    /// multilingual ones 51865 or more. The tokenizer cannot tell: the `.en`
    /// tokenizer.json also lists the language tokens.
    pub(super) fn multilingual(&self) -> bool {
        self.vocab_size >= 51865
    }
}

/// Scalars CTranslate2 stores for Whisper, with the value a plain Whisper model has.
/// Any other value changes the computation in a way the HF layout cannot express.
pub(super) const FLAGS: &[(&str, i64)] = &[
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
pub(super) const IGNORED: &[&str] = &["decoder/alignment_heads", "decoder/alignment_layer"];

pub(super) struct Vars {
    pub(super) map: BTreeMap<String, RawVar>,
    pub(super) dtype: DType,
}

impl Vars {
    pub(super) fn shape(&self, name: &str) -> Result<&[usize]> {
        self.map
            .get(name)
            .map(|v| v.shape.as_slice())
            .ok_or_else(|| CtranslateError::MissingVariable(name.into()))
    }

    pub(super) fn dim(&self, name: &str, axis: usize) -> Result<usize> {
        let shape = self.shape(name)?;
        shape
            .get(axis)
            .copied()
            .ok_or_else(|| CtranslateError::BadVariable {
                name: name.into(),
                problem: format!("shape {shape:?} has no axis {axis}"),
            })
    }

    pub(super) fn take(&mut self, name: &str) -> Result<RawVar> {
        self.map
            .remove(name)
            .ok_or_else(|| CtranslateError::MissingVariable(name.into()))
    }

    pub(super) fn scalar(&mut self, name: &str) -> Result<Option<i64>> {
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
    pub(super) fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
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

    pub(super) fn dequantize(&mut self, name: &str, var: RawVar) -> Result<Tensor> {
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

pub(super) fn count_layers(vars: &BTreeMap<String, RawVar>, prefix: &str) -> usize {
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
pub(super) fn output_dtype(vars: &BTreeMap<String, RawVar>) -> (DType, bool) {
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

pub(super) fn to_hf_weights(checkpoint: Checkpoint) -> Result<(HashMap<String, Tensor>, Dims)> {
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
pub(super) fn layer_norm(ct2: &str, hf: &str) -> [(String, String); 2] {
    [
        (format!("{ct2}/gamma"), format!("{hf}.weight")),
        (format!("{ct2}/beta"), format!("{hf}.bias")),
    ]
}

pub(super) type Named = Vec<(String, Tensor)>;

/// Self-attention: `linear_0` is q, k and v fused along the output dim, `linear_1` the
/// output projection. HF has no k bias: CTranslate2 stores zeros there, and a key
/// bias adds the same q·b to every score of a query, which softmax cancels anyway.
pub(super) fn self_attention(v: &mut Vars, c: &str, h: &str, d: usize) -> Result<Named> {
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
pub(super) fn cross_attention(v: &mut Vars, c: &str, h: &str, d: usize) -> Result<Named> {
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

pub(super) fn ffn(v: &mut Vars, c: &str, h: &str, d: usize, ffn_dim: usize) -> Result<Named> {
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
