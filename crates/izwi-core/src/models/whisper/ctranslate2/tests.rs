use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};

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
        .map(|(seed, (name, shape))| f32_var(name, shape, &values(seed, shape.iter().product())))
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
