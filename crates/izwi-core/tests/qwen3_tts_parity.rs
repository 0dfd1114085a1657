//! Parity with the reference implementation (PyPI qwen-tts 0.1.1): a tiny random-weight
//! Qwen3-TTS Base checkpoint made by tests/fixtures/qwen3-tts/make_fixtures.py with
//! qwen-tts's own classes, in the official layout, run on the paged, batched engine.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;

use candle_core::{DType, Device, Tensor};
use izwi_core::engine::{
    EngineCore, EngineCoreConfig, EngineOutput, FinishReason, GenerationParams, RequestId,
};
use izwi_core::models::qwen3_tts::codec::{
    CodecDecoder, CodecEncoder, CodecStream, LEFT_CONTEXT_FRAMES,
};
use izwi_core::models::qwen3_tts::{
    Frame, Qwen3Tts, Qwen3TtsConfig, Qwen3TtsExecutor, SpeakOptions, SpeakerEncoder, SpeakerMel,
    SpeechPrompt, VoiceReference, VoiceSample, STREAM_CHUNK_FRAMES,
};
use izwi_core::models::shared::bf16_weights;
use izwi_core::models::shared::sampling::argmax;
use izwi_test_support::fixtures::qwen3_tts_variant;
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;
/// How far logits of bf16 products may stray from f32's, relative to the largest (at
/// most 0.007 on the tiny checkpoint).
const BF16_PRODUCTS_TOLERANCE: f32 = 0.02;

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(Deserialize, Clone)]
struct Case {
    name: String,
    text: String,
    text_ids: Vec<u32>,
    language: String,
    speaker_embedding: bool,
    speaker: Option<String>,
    instruct: Option<String>,
    instruct_ids: Option<Vec<u32>>,
    /// In-context cloning: the voice sample's transcript and its tokens.
    ref_text: Option<String>,
    ref_ids: Option<Vec<u32>>,
    repetition_penalty: f32,
    max_new_tokens: usize,
    /// The whole text in the prompt (the reference's non-streaming mode).
    #[serde(default)]
    non_streaming: bool,
    frames: Vec<Vec<u32>>,
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn checkpoint() -> PathBuf {
    fixtures().join("qwen3-tts-tiny")
}

fn reference() -> (Vec<Case>, HashMap<String, Tensor>) {
    let dir = fixtures().join("qwen3-tts");
    let text = std::fs::read_to_string(dir.join("reference.json")).expect("reference.json");
    let cases = serde_json::from_str::<Reference>(&text)
        .expect("valid reference.json")
        .cases;
    let tensors = candle_core::safetensors::load(dir.join("reference.safetensors"), &Device::Cpu)
        .expect("reference.safetensors");
    (cases, tensors)
}

fn rows(tensors: &HashMap<String, Tensor>, name: &str) -> Vec<Vec<f32>> {
    tensors[name].to_vec2::<f32>().expect(name)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn prompt(case: &Case, tensors: &HashMap<String, Tensor>) -> SpeechPrompt {
    SpeechPrompt {
        text_ids: case.text_ids.clone(),
        language: (case.language != "auto").then(|| case.language.clone()),
        speaker_embedding: case.speaker_embedding.then(|| {
            tensors["speaker/embedding"]
                .to_vec1::<f32>()
                .expect("embedding")
        }),
        speaker: case.speaker.clone(),
        instruct_ids: case.instruct_ids.clone(),
        reference: case.ref_ids.as_ref().map(|ids| VoiceReference {
            text_ids: ids.clone(),
            codes: sample_codes(tensors),
        }),
        whole_text: case.non_streaming,
    }
}

/// The reference's codes of the voice sample.
fn sample_codes(tensors: &HashMap<String, Tensor>) -> Vec<Vec<u32>> {
    tensors["encoder/codes"]
        .to_dtype(DType::U32)
        .and_then(|t| t.to_vec2::<u32>())
        .expect("codes")
}

fn greedy(case: &Case) -> GenerationParams {
    GenerationParams {
        max_tokens: case.max_new_tokens,
        repetition_penalty: case.repetition_penalty,
        return_logits: true,
        ..GenerationParams::default()
    }
}

/// Runs the cases on one engine together; per case its output and its frames.
fn run(
    config: EngineCoreConfig,
    cases: &[Case],
    tensors: &HashMap<String, Tensor>,
) -> Vec<(EngineOutput, Vec<Frame>)> {
    let executor =
        Qwen3TtsExecutor::from_dir(&checkpoint(), DType::F32, &Device::Cpu).expect("loads");
    run_on(executor, config, cases, tensors)
}

fn run_on(
    executor: Qwen3TtsExecutor,
    config: EngineCoreConfig,
    cases: &[Case],
    tensors: &HashMap<String, Tensor>,
) -> Vec<(EngineOutput, Vec<Frame>)> {
    let requests = executor.requests();
    let mut core = EngineCore::new(config, Box::new(executor)).expect("engine");
    let mut order: HashMap<RequestId, usize> = HashMap::new();
    let mut receivers: Vec<Receiver<Frame>> = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let (request, frames) = requests
            .prepare(
                prompt(case, tensors),
                greedy(case),
                &GenerationParams::default(),
            )
            .expect("prepared");
        order.insert(core.add_request(request).expect("accepted"), n);
        receivers.push(frames);
    }
    let mut outputs: Vec<Option<EngineOutput>> = vec![None; cases.len()];
    while core.has_unfinished() {
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            let n = order[&out.request_id];
            outputs[n] = Some(out);
        }
    }
    outputs
        .into_iter()
        .zip(receivers)
        .map(|(out, frames)| (out.expect("finished"), frames.try_iter().collect()))
        .collect()
}

fn assert_matches(
    case: &Case,
    tensors: &HashMap<String, Tensor>,
    out: &EngineOutput,
    frames: &[Frame],
) {
    let name = &case.name;
    assert_eq!(frames, case.frames.as_slice(), "{name}: greedy frames");
    let want = rows(tensors, &format!("{name}/talker_logits"));
    if want.len() < case.max_new_tokens {
        assert_eq!(
            out.finish_reason,
            FinishReason::Stop,
            "{name} ends by itself"
        );
    }
    assert_eq!(out.logits.len(), want.len(), "{name}: talker steps");
    for (step, (got, want)) in out.logits.iter().zip(&want).enumerate() {
        let diff = max_abs_diff(got, want);
        assert!(
            diff <= TOLERANCE,
            "{name}: talker logits of step {step} differ by {diff}"
        );
    }
}

fn config() -> EngineCoreConfig {
    EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(128),
        max_seq_len: 256,
        ..EngineCoreConfig::default()
    }
}

#[test]
fn each_case_alone_matches_the_reference() {
    let (cases, tensors) = reference();
    for case in &cases {
        let out = run(config(), std::slice::from_ref(case), &tensors);
        let (out, frames) = &out[0];
        assert_matches(case, &tensors, out, frames);
    }
}

#[test]
fn batched_requests_match_each_alone() {
    let (cases, tensors) = reference();
    // Both cases twice, all in one engine: every request gets the reference's frames.
    let batch: Vec<Case> = cases.iter().chain(&cases).cloned().collect();
    for ((out, frames), case) in run(config(), &batch, &tensors).iter().zip(&batch) {
        assert_matches(case, &tensors, out, frames);
    }
}

#[test]
fn preempted_and_chunked_requests_still_match() {
    let (cases, tensors) = reference();
    let batch: Vec<Case> = cases.iter().chain(&cases).cloned().collect();
    // Too small a cache for all of them at once (the largest, a sample with the whole
    // text, just fits alone), and prompts split into chunks: requests are preempted and
    // recomputed from their tokens and kept frames.
    let tight = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(40),
        max_seq_len: 256,
        max_tokens_per_step: 24,
        chunked_prefill_threshold: 4,
        ..EngineCoreConfig::default()
    };
    let outputs = run(tight, &batch, &tensors);
    let preemptions: u32 = outputs.iter().map(|(o, _)| o.stats.num_preemptions).sum();
    assert!(preemptions > 0, "the cache was meant to force preemption");
    for ((out, frames), case) in outputs.iter().zip(&batch) {
        assert_matches(case, &tensors, out, frames);
    }
}

/// The tiny checkpoint with its weights rounded to bf16, stored as `stored`.
fn rounded_to_bf16(stored: DType) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(checkpoint()).expect("fixture") {
        let path = entry.expect("entry").path();
        if path.is_file() && path.extension().is_none_or(|e| e != "safetensors") {
            std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
        }
    }
    let weights =
        candle_core::safetensors::load(checkpoint().join("model.safetensors"), &Device::Cpu)
            .expect("weights");
    let rounded: HashMap<String, Tensor> = weights
        .into_iter()
        .map(|(name, t)| {
            let t = t.to_dtype(DType::BF16).and_then(|t| t.to_dtype(stored));
            (name, t.expect("rounds"))
        })
        .collect();
    candle_core::safetensors::save(&rounded, dir.path().join("model.safetensors")).expect("saves");
    dir
}

#[test]
fn a_bf16_checkpoint_keeps_its_weights_in_bf16_and_says_what_f32_says() {
    // The same values stored as bf16 and as f32.
    let (cases, tensors) = reference();
    let load = |dir: &tempfile::TempDir| {
        Qwen3TtsExecutor::from_dir(dir.path(), DType::F32, &Device::Cpu).expect("loads")
    };
    let (bf16, f32) = (rounded_to_bf16(DType::BF16), rounded_to_bf16(DType::F32));
    let (half, full) = (load(&bf16), load(&f32));
    assert_eq!(half.talker().half_weights(), Some(DType::BF16));
    assert_eq!(full.talker().half_weights(), None);
    assert_eq!(full.products_dtype(), DType::F32);
    let bf16_products = half.products_dtype() == DType::BF16;
    assert_eq!(bf16_products, bf16_weights::available());
    let cases = &cases[..2];
    let half = run_on(half, config(), cases, &tensors);
    let full = run_on(full, config(), cases, &tensors);
    for (case, (half, full)) in cases.iter().zip(half.iter().zip(&full)) {
        assert!(!half.1.is_empty(), "{}: says something", case.name);
        if !bf16_products {
            // Widened in registers, the arithmetic is f32's: the same utterances.
            assert_eq!(half.1, full.1, "{}: frames", case.name);
            assert_eq!(half.0.logits.len(), full.0.logits.len(), "{}", case.name);
        }
        // With bf16 products (every product's inputs rounded to bf16) random weights'
        // near-ties part the frames sooner or later: each step is compared while the
        // frames before it, and so its inputs, are the same on both sides (the step
        // after the last common frame included).
        let same = half
            .1
            .iter()
            .zip(&full.1)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(same >= 1, "{}: the first frame differs", case.name);
        let tolerance = if bf16_products {
            BF16_PRODUCTS_TOLERANCE
        } else {
            1e-5
        };
        for (step, (a, b)) in half
            .0
            .logits
            .iter()
            .zip(&full.0.logits)
            .enumerate()
            .take(same + 1)
        {
            let scale = if bf16_products {
                b.iter().fold(0f32, |m, v| m.max(v.abs()))
            } else {
                1.0
            };
            let diff = max_abs_diff(a, b) / scale;
            assert!(
                diff <= tolerance,
                "{}: logits of step {step} differ by {diff}",
                case.name
            );
        }
    }
}

#[test]
fn code_predictor_matches_the_reference() {
    let (cases, tensors) = reference();
    let executor =
        Qwen3TtsExecutor::from_dir(&checkpoint(), DType::F32, &Device::Cpu).expect("loads");
    let mut checked = 0;
    for case in &cases {
        let name = &case.name;
        let Some(hidden) = tensors.get(&format!("{name}/talker_hidden")) else {
            continue;
        };
        checked += 1;
        let want = tensors[&format!("{name}/predictor_logits")]
            .to_vec3::<f32>()
            .expect("logits");
        let code0: Vec<u32> = case.frames.iter().map(|f| f[0]).collect();
        let code0 = executor.talker().codec(&code0).expect("embed");
        // Every frame of the utterance predicted in one batch.
        let mut got: Vec<Vec<Vec<f32>>> = vec![Vec::new(); case.frames.len()];
        let codes = executor
            .predictor()
            .predict(hidden, &code0, |frame, _, logits| {
                got[frame].push(logits.to_vec());
                argmax(logits)
            })
            .expect("predict");
        for (k, frame) in case.frames.iter().enumerate() {
            assert_eq!(codes[k], frame[1..], "{name}: frame {k}");
            for (g, (row, want)) in got[k].iter().zip(&want[k]).enumerate() {
                let diff = max_abs_diff(row, want);
                assert!(
                    diff <= TOLERANCE,
                    "{name}: frame {k} codebook {} differs by {diff}",
                    g + 1
                );
            }
        }
    }
    assert_eq!(
        checked, 2,
        "the fixture keeps two utterances' predictor logits"
    );
}

fn codec() -> CodecDecoder {
    CodecDecoder::from_dir(&checkpoint().join("speech_tokenizer"), &Device::Cpu)
        .expect("codec loads")
}

fn codec_frames(tensors: &HashMap<String, Tensor>) -> Vec<Vec<u32>> {
    tensors["codec/codes"]
        .to_dtype(DType::U32)
        .and_then(|t| t.to_vec2::<u32>())
        .expect("codes")
}

fn assert_audio(got: &[f32], want: &Tensor, label: &str) {
    let want = want.to_vec1::<f32>().expect("waveform");
    assert_eq!(got.len(), want.len(), "{label}: samples");
    let diff = max_abs_diff(got, &want);
    assert!(diff <= TOLERANCE, "{label}: waveform differs by {diff}");
}

#[test]
fn codec_decoder_matches_the_reference() {
    let (_, tensors) = reference();
    let codec = codec();
    let frames = codec_frames(&tensors);
    assert_eq!(codec.samples_per_frame(), 1920);
    assert_eq!(codec.sample_rate(), 24_000);
    let wav = codec.forward(&frames).expect("decodes");
    assert_audio(&wav, &tensors["codec/wav"], "one pass");
    // The reference's own decode (chunks of 300) is one pass for a short utterance.
    assert_eq!(codec.decode(&frames).expect("decodes"), wav);
    for (chunk, context) in [(10, 25), (7, 3)] {
        let chunked = codec
            .decode_chunked(&frames, chunk, context)
            .expect("decodes");
        assert_audio(
            &chunked,
            &tensors[&format!("codec/wav_chunked_{chunk}_{context}")],
            &format!("chunks of {chunk}, left context {context}"),
        );
    }
}

#[test]
fn codec_encoder_matches_the_reference() {
    let (_, tensors) = reference();
    let encoder = CodecEncoder::from_dir(&checkpoint().join("speech_tokenizer"), &Device::Cpu)
        .expect("encoder loads");
    assert_eq!(encoder.sample_rate(), 24_000);
    // One second: 25 steps in the encoder's transformer, more than its config's sliding
    // window of 16, which the reference does not apply.
    let audio = tensors["speaker/audio"].to_vec1::<f32>().expect("audio");
    let latent = encoder.latent(&audio).expect("encodes");
    let want = rows(&tensors, "encoder/latent");
    let got = latent.to_vec2::<f32>().expect("latent");
    assert_eq!(got.len(), want.len(), "frames");
    let diff = max_abs_diff(&got.concat(), &want.concat());
    assert!(diff <= TOLERANCE, "the quantizer's input differs by {diff}");
    let codes = encoder.encode(&audio).expect("encodes");
    let want = sample_codes(&tensors);
    assert_eq!(want.len(), 13, "a frame per started 1920 samples");
    assert_eq!(codes, want, "the reference's codes");
}

#[test]
fn streamed_decode_equals_the_chunked_decode() {
    let (_, tensors) = reference();
    let codec = std::sync::Arc::new(codec());
    let frames = codec_frames(&tensors);
    for (chunk, context) in [(10, 25), (7, 3), (300, 25)] {
        let mut stream = CodecStream::with_left_context(codec.clone(), chunk, context);
        let mut wav = Vec::new();
        let mut pieces = 0;
        for frame in &frames {
            if let Some(piece) = stream.push(frame.clone()).expect("decodes") {
                assert_eq!(piece.len(), chunk * 1920, "a whole chunk at once");
                wav.extend(piece);
                pieces += 1;
            }
        }
        wav.extend(stream.finish().expect("decodes"));
        assert_eq!(
            pieces,
            frames.len() / chunk,
            "audio came out as frames arrived"
        );
        assert_eq!(
            wav,
            codec
                .decode_chunked(&frames, chunk, context)
                .expect("decodes"),
            "chunks of {chunk}, left context {context}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_to_audio_streams_the_reference_utterance() {
    let (cases, _) = reference();
    let tts = Qwen3Tts::from_dir(&checkpoint(), &Device::Cpu, config()).expect("loads");
    for case in &cases {
        let text = case.text.as_str();
        assert_eq!(
            tts.text_ids(text).expect("tokenizes"),
            case.text_ids,
            "{}: tokens",
            case.name
        );
    }
    // The first case needs nothing but its text: greedy, without the checkpoint's
    // repetition penalty as the reference ran it, it says the reference's frames.
    let case = &cases[0];
    let options = SpeakOptions {
        greedy: true,
        repetition_penalty: Some(case.repetition_penalty),
        ..SpeakOptions::default()
    };
    let mut pieces = Vec::new();
    let stats = tts
        .speak(&case.text, &options, |piece| pieces.push(piece))
        .await
        .expect("speaks");
    assert_eq!(stats.frames, case.frames.len());
    assert!(stats.ended, "the model ended the utterance");
    let want = codec()
        .decode_chunked(&case.frames, STREAM_CHUNK_FRAMES, LEFT_CONTEXT_FRAMES)
        .expect("decodes");
    assert!(pieces.len() > 1, "audio streamed in pieces");
    assert_eq!(pieces.concat(), want);
    assert_eq!(stats.samples, case.frames.len() * 1920);

    // Preset speakers, instructions and designed voices from their text, as the
    // reference's CustomVoice and VoiceDesign prompts.
    for case in cases
        .iter()
        .filter(|c| c.speaker.is_some() || c.instruct.is_some())
    {
        let options = SpeakOptions {
            greedy: true,
            language: (case.language != "auto").then(|| case.language.clone()),
            repetition_penalty: Some(case.repetition_penalty),
            speaker: case.speaker.clone(),
            instruction: case.instruct.clone(),
            max_frames: Some(case.max_new_tokens),
            whole_text: Some(case.non_streaming),
            ..SpeakOptions::default()
        };
        let mut audio = Vec::new();
        let stats = tts
            .speak(&case.text, &options, |piece| audio.extend(piece))
            .await
            .expect("speaks");
        assert_eq!(stats.frames, case.frames.len(), "{}", case.name);
        let want = codec()
            .decode_chunked(&case.frames, STREAM_CHUNK_FRAMES, LEFT_CONTEXT_FRAMES)
            .expect("decodes");
        assert_eq!(
            audio, want,
            "{}: the reference's frames, decoded",
            case.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_sampling_repeats_and_concurrent_utterances_batch() {
    let (cases, _) = reference();
    let tts = std::sync::Arc::new(
        Qwen3Tts::from_dir(&checkpoint(), &Device::Cpu, config()).expect("loads"),
    );
    let options = SpeakOptions {
        seed: Some(7),
        max_frames: Some(30),
        ..SpeakOptions::default()
    };
    let say = |tts: std::sync::Arc<Qwen3Tts>, text: String, options: SpeakOptions| async move {
        let mut audio = Vec::new();
        tts.speak(&text, &options, |p| audio.extend(p))
            .await
            .expect("speaks");
        audio
    };
    let alone = say(tts.clone(), cases[0].text.clone(), options.clone()).await;
    // Three at once, batched by the engine: the seeded one is the same as alone.
    let other = SpeakOptions {
        seed: Some(8),
        ..options.clone()
    };
    let (a, b, c) = tokio::join!(
        say(tts.clone(), cases[0].text.clone(), options.clone()),
        say(tts.clone(), cases[1].text.clone(), other.clone()),
        say(tts.clone(), cases[0].text.clone(), other),
    );
    assert_eq!(a, alone, "same seed, same audio, batched or not");
    assert_ne!(a, c, "another seed samples other audio");
    assert!(!b.is_empty());
}

#[test]
fn speaker_embedding_matches_the_reference() {
    let (_, tensors) = reference();
    let checkpoint = checkpoint();
    let text = std::fs::read_to_string(checkpoint.join("config.json")).expect("config");
    let config: Qwen3TtsConfig = serde_json::from_str(&text).expect("valid config");
    let weights =
        candle_core::safetensors::load(checkpoint.join("model.safetensors"), &Device::Cpu)
            .expect("weights");
    let vb = candle_nn::VarBuilder::from_tensors(weights, DType::F32, &Device::Cpu);
    let encoder = SpeakerEncoder::load(
        config
            .speaker_encoder_config
            .as_ref()
            .expect("a Base checkpoint"),
        vb.pp("speaker_encoder"),
    )
    .expect("encoder");
    let audio = tensors["speaker/audio"].to_vec1::<f32>().expect("audio");
    let mel = SpeakerMel::new(&Device::Cpu)
        .expect("mel")
        .compute(&audio)
        .expect("mel");
    let got = encoder
        .forward(&mel)
        .expect("embeds")
        .to_vec1::<f32>()
        .expect("vector");
    let want = tensors["speaker/embedding"]
        .to_vec1::<f32>()
        .expect("embedding");
    let diff = max_abs_diff(&got, &want);
    assert!(diff <= TOLERANCE, "speaker embedding differs by {diff}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_cloned_from_audio_says_the_reference_frames() {
    let (cases, tensors) = reference();
    let case = cases
        .iter()
        .find(|c| c.speaker_embedding && c.ref_text.is_none())
        .expect("an x-vector case");
    let tts = Qwen3Tts::from_dir(&checkpoint(), &Device::Cpu, config()).expect("loads");
    let audio = tensors["speaker/audio"].to_vec1::<f32>().expect("audio");
    let options = SpeakOptions {
        greedy: true,
        language: Some(case.language.clone()),
        repetition_penalty: Some(case.repetition_penalty),
        speaker_embedding: Some(tts.speaker_embedding(&audio).expect("embeds")),
        ..SpeakOptions::default()
    };
    let mut audio_out = Vec::new();
    let stats = tts
        .speak(&case.text, &options, |piece| audio_out.extend(piece))
        .await
        .expect("speaks");
    assert_eq!(stats.frames, case.frames.len());
    let want = codec()
        .decode_chunked(&case.frames, STREAM_CHUNK_FRAMES, LEFT_CONTEXT_FRAMES)
        .expect("decodes");
    assert_eq!(audio_out, want, "the reference's frames, decoded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_cloned_in_context_says_the_reference_utterance() {
    let (cases, tensors) = reference();
    let tts = Qwen3Tts::from_dir(&checkpoint(), &Device::Cpu, config()).expect("loads");
    let audio = tensors["speaker/audio"].to_vec1::<f32>().expect("audio");
    let codes = tts.sample_codes(&audio).expect("encodes");
    assert_eq!(codes, sample_codes(&tensors), "the sample's codes");
    let embedding = tts.speaker_embedding(&audio).expect("embeds");
    for case in cases.iter().filter(|c| c.ref_text.is_some()) {
        let options = SpeakOptions {
            greedy: true,
            language: (case.language != "auto").then(|| case.language.clone()),
            repetition_penalty: Some(case.repetition_penalty),
            max_frames: Some(case.max_new_tokens),
            speaker_embedding: Some(embedding.clone()),
            sample: Some(VoiceSample {
                transcript: case.ref_text.clone().expect("a transcript"),
                codes: codes.clone(),
            }),
            whole_text: Some(case.non_streaming),
            ..SpeakOptions::default()
        };
        let mut wav = Vec::new();
        let stats = tts
            .speak(&case.text, &options, |piece| wav.extend(piece))
            .await
            .expect("speaks");
        assert_eq!(stats.frames, case.frames.len(), "{}: frames", case.name);
        assert_eq!(stats.samples, case.frames.len() * 1920, "{}", case.name);
        if let Some(want) = tensors.get(&format!("{}/wav", case.name)) {
            // The reference decodes the sample's frames and the utterance's together
            // and cuts off the sample's share; here the sample's frames are the left
            // context of the first chunks, the same audio.
            assert_audio(&wav, want, &case.name);
        }
    }
    assert!(
        tensors.contains_key("icl/wav"),
        "the fixture keeps one waveform"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_context_cloning_refuses_what_it_cannot_use() {
    let tts = Qwen3Tts::from_dir(&checkpoint(), &Device::Cpu, config()).expect("loads");
    let (_, tensors) = reference();
    let sample = VoiceSample {
        transcript: "hello.".into(),
        codes: sample_codes(&tensors),
    };
    let say = |options: SpeakOptions| {
        let tts = &tts;
        async move {
            tts.speak("this is izwi.", &options, |_| {})
                .await
                .expect_err("refused")
                .to_string()
        }
    };
    let without_embedding = say(SpeakOptions {
        sample: Some(sample.clone()),
        ..SpeakOptions::default()
    })
    .await;
    assert!(
        without_embedding.contains("speaker embedding"),
        "{without_embedding}"
    );
    let hidden = tensors["speaker/embedding"].dim(0).expect("size");
    let silent = say(SpeakOptions {
        speaker_embedding: Some(vec![0.0; hidden]),
        sample: Some(VoiceSample {
            transcript: " . ".into(),
            ..sample.clone()
        }),
        ..SpeakOptions::default()
    })
    .await;
    assert!(silent.contains("transcript has no words"), "{silent}");
    let mut bad = sample.clone();
    bad.codes[0][3] = 10_000;
    let out_of_range = say(SpeakOptions {
        speaker_embedding: Some(vec![0.0; hidden]),
        sample: Some(bad),
        ..SpeakOptions::default()
    })
    .await;
    assert!(
        out_of_range.contains("outside the codebook"),
        "{out_of_range}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_voice_and_voice_design_checkpoints_say_the_whole_text_first() {
    // As the reference's generate_custom_voice and generate_voice_design do by default.
    let (cases, _) = reference();
    let dir = tempfile::tempdir().expect("a folder");
    for (kind, name) in [
        ("custom_voice", "speaker_whole"),
        ("voice_design", "design_whole"),
    ] {
        let case = cases.iter().find(|c| c.name == name).expect("the case");
        let tts = Qwen3Tts::from_dir(&qwen3_tts_variant(dir.path(), kind), &Device::Cpu, config())
            .expect("loads");
        let options = SpeakOptions {
            greedy: true,
            language: (case.language != "auto").then(|| case.language.clone()),
            repetition_penalty: Some(case.repetition_penalty),
            speaker: case.speaker.clone(),
            instruction: case.instruct.clone(),
            max_frames: Some(case.max_new_tokens),
            ..SpeakOptions::default()
        };
        let mut audio = Vec::new();
        let stats = tts
            .speak(&case.text, &options, |piece| audio.extend(piece))
            .await
            .expect("speaks");
        assert_eq!(stats.frames, case.frames.len(), "{kind}");
        let want = codec()
            .decode_chunked(&case.frames, STREAM_CHUNK_FRAMES, LEFT_CONTEXT_FRAMES)
            .expect("decodes");
        assert_eq!(audio, want, "{kind}: the reference's frames");
    }
}
