//! Parity of our Voxtral Realtime with transformers' on a tiny random-weight checkpoint
//! (tests/fixtures/make_voxtral_realtime_tiny.py): the streaming log-mel, the streamed
//! encoder, the decoder's logits and greedy text on the engine, and several streams
//! batched at different offsets, through preemption, equal to each alone.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use common::max_abs_diff;
use izwi_core::engine::{EngineCore, EngineCoreConfig, EngineCoreRequest, FinishReason, RequestId};
use izwi_core::models::voxtral_realtime::mel::StreamingMel;
use izwi_core::models::voxtral_realtime::VoxtralRealtime;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/voxtral-realtime-tiny")
}

fn reference() -> HashMap<String, Tensor> {
    candle_core::safetensors::load(dir().join("reference.safetensors"), &Device::Cpu)
        .expect("reference loads")
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.flatten_all()
        .and_then(|t| t.to_vec1::<f32>())
        .expect("f32 tensor")
}

fn ids(t: &Tensor) -> Vec<u32> {
    t.to_dtype(DType::U32)
        .and_then(|t| t.to_vec1::<u32>())
        .expect("token ids")
}

fn model() -> VoxtralRealtime {
    VoxtralRealtime::from_dir(&dir(), None, DType::F32, &Device::Cpu).expect("model loads")
}

#[test]
fn prompt_and_padding_equal_the_processor_s() {
    let reference = reference();
    let model = model();
    assert_eq!(model.format().prompt(), ids(&reference["input_ids"]));
    let padded = model.format().pad_recording(&floats(&reference["audio"]));
    let frames = reference["input_features"].dim(1).expect("frames");
    assert_eq!(StreamingMel::available(padded.len(), true), frames);
}

#[test]
fn streaming_log_mel_equals_the_feature_extractor_s() {
    let reference = reference();
    let model = model();
    let padded = model.format().pad_recording(&floats(&reference["audio"]));
    let want = floats(&reference["input_features"].t().expect("t"));
    let mel = StreamingMel::new(128, 1.5, &Device::Cpu).expect("mel");
    let frames = StreamingMel::available(padded.len(), true);
    // In pieces, each as soon as its audio has arrived, then the end.
    let mut rows = Vec::new();
    let mut done = 0;
    for arrived in (1000..padded.len()).step_by(1700) {
        let ready = StreamingMel::available(arrived, false);
        rows.push(
            mel.frames(&padded[..arrived], 0, false, done, ready - done)
                .expect("frames"),
        );
        done = ready;
    }
    rows.push(
        mel.frames(&padded, 0, true, done, frames - done)
            .expect("frames"),
    );
    let ours = floats(&Tensor::cat(&rows, 0).expect("cat"));
    let diff = max_abs_diff(&ours, &want);
    assert!(diff < 1e-4, "log-mel differs by {diff}");
}

#[test]
fn streamed_encoder_equals_transformers_in_any_chunking() {
    let reference = reference();
    let model = model();
    let padded = model.format().pad_recording(&floats(&reference["audio"]));
    let want = floats(&reference["audio_embeds"]);
    let streamed = floats(&reference["streamed_embeds"]);
    assert!(max_abs_diff(&want, &streamed) < 1e-4);
    // One position (80 ms) at a time as the reference streamed it, a few at a time
    // (the window of 12 frames is crossed inside a chunk), and all at once.
    for chunk in [1, 3, 7, 1000] {
        let ours = floats(&model.encode_recording(&padded, chunk).expect("encodes"));
        let diff = max_abs_diff(&ours, &want);
        assert!(
            diff < 1e-4,
            "chunks of {chunk}: embeddings differ by {diff}"
        );
    }
}

fn engine(num_blocks: usize) -> EngineCore {
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(num_blocks),
        ..EngineCoreConfig::default()
    };
    EngineCore::new(config, Box::new(model())).expect("engine")
}

#[test]
fn greedy_transcription_on_the_engine_equals_transformers() {
    let reference = reference();
    let model = model();
    let generated = ids(&reference["generated"]);
    let prompt_len = ids(&reference["input_ids"]).len();
    let mut request = model
        .format()
        .recording_request(&floats(&reference["audio"]));
    request.params.return_logits = true;
    let mut core = engine(64);
    core.add_request(request).expect("accepted");
    let mut outputs = Vec::new();
    while core.has_unfinished() {
        outputs.extend(core.step().into_iter().filter_map(|o| o.finished));
    }
    let out = outputs.pop().expect("finished");
    assert_eq!(out.tokens, generated[prompt_len..]);
    let want = reference["logits"].to_vec2::<f32>().expect("rows");
    assert_eq!(out.logits.len(), want.len() + 1 - prompt_len);
    for (i, got) in out.logits.iter().enumerate() {
        let diff = max_abs_diff(got, &want[prompt_len - 1 + i]);
        assert!(
            diff < 1e-4,
            "logits at position {} differ by {diff}",
            prompt_len - 1 + i
        );
    }
    let text = model.format().tokenizer().decode(&out.tokens);
    let want_text: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    assert_eq!(text, want_text["text"].as_str().expect("text"));
    assert_eq!(core.kv_cache_stats().used_blocks(), 0);
}

#[test]
fn another_delay_changes_prompt_and_text_as_in_transformers() {
    let reference = reference();
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    let want = &json["delay_160ms"];
    let model = VoxtralRealtime::from_dir(&dir(), Some(160.0), DType::F32, &Device::Cpu)
        .expect("model loads with a delay of 160 ms");
    let format = model.format().clone();
    assert_eq!(format.delay_ms(), 160.0);
    assert_eq!(format.default_delay_ms(), 480.0);
    let generated: Vec<u32> = want["generated"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| t.as_u64().expect("token id") as u32)
        .collect();
    let prompt_len = want["prompt_len"].as_u64().expect("prompt length") as usize;
    assert_eq!(format.prompt(), &generated[..prompt_len]);
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(64),
        ..EngineCoreConfig::default()
    };
    let mut core = EngineCore::new(config, Box::new(model)).expect("engine");
    core.add_request(format.recording_request(&floats(&reference["audio"])))
        .expect("accepted");
    let mut outputs = Vec::new();
    while core.has_unfinished() {
        outputs.extend(core.step().into_iter().filter_map(|o| o.finished));
    }
    let out = outputs.pop().expect("finished");
    assert_eq!(out.tokens, generated[prompt_len..]);
    assert_eq!(
        format.tokenizer().decode(&out.tokens),
        want["text"].as_str().expect("text")
    );
    // The default delay's text differs, so the delay is what changed it.
    let default_prompt = ids(&reference["input_ids"]).len();
    assert_ne!(out.tokens, ids(&reference["generated"])[default_prompt..]);

    let error = VoxtralRealtime::from_dir(&dir(), Some(100.0), DType::F32, &Device::Cpu)
        .err()
        .expect("100 ms is not a whole number of positions");
    assert!(error.to_string().contains("100 ms"), "{error}");
}

/// Runs requests arriving at the given steps; returns each one's tokens by index.
fn run(core: &mut EngineCore, requests: Vec<(usize, EngineCoreRequest)>) -> Vec<Vec<u32>> {
    let mut ids = HashMap::new();
    let mut tokens = vec![Vec::new(); requests.len()];
    let mut pending: Vec<(usize, usize, EngineCoreRequest)> = requests
        .into_iter()
        .enumerate()
        .map(|(i, (step, r))| (step, i, r))
        .collect();
    let mut step = 0;
    while !pending.is_empty() || core.has_unfinished() {
        let (now, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(s, _, _)| *s <= step);
        pending = later;
        for (_, i, request) in now {
            ids.insert(core.add_request(request).expect("accepted"), i);
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            tokens[ids[&out.request_id]] = out.tokens;
        }
        step += 1;
    }
    tokens
}

#[test]
fn streams_batched_at_different_offsets_and_preempted_equal_each_alone() {
    let reference = reference();
    let model = model();
    let audio = floats(&reference["audio"]);
    let recordings = [
        audio.clone(),
        audio[..16_000].to_vec(),
        audio[8_000..].to_vec(),
        audio.clone(),
    ];
    let request = |samples: &[f32]| model.format().recording_request(samples);
    let alone: Vec<Vec<u32>> = recordings
        .iter()
        .map(|r| run(&mut engine(64), vec![(0, request(r))]).remove(0))
        .collect();
    assert_eq!(alone[0], ids(&reference["generated"])[9..]);
    let arrivals = [0, 2, 5, 11];
    let batch = |num_blocks| {
        let requests = recordings
            .iter()
            .zip(arrivals)
            .map(|(r, step)| (step, request(r)))
            .collect();
        let mut core = engine(num_blocks);
        let tokens = run(&mut core, requests);
        assert_eq!(core.kv_cache_stats().used_blocks(), 0);
        (tokens, core)
    };
    let (together, _) = batch(64);
    assert_eq!(together, alone, "batched with room for all");
    // 24 blocks of 4 hold two of the 44-position streams: the others wait or are
    // preempted and recomputed from their kept audio embeddings.
    let (squeezed, core) = batch(24);
    assert_eq!(squeezed, alone, "batched through preemption");
    assert!(
        core.metrics().snapshot().preemptions > 0,
        "the small cache preempted"
    );
}

/// A live stream: its chunks (sizes cycling through `chunks`), one batch of them before
/// each engine step from `start_step` on.
struct Live {
    id: RequestId,
    audio: Vec<f32>,
    sent: usize,
    chunks: Vec<usize>,
    start_step: usize,
    ended: bool,
}

#[test]
fn live_streams_fed_in_ragged_chunks_equal_the_whole_recording() {
    let reference = reference();
    let model = model();
    let format = model.format();
    let audio = floats(&reference["audio"]);
    let generated = ids(&reference["generated"])[9..].to_vec();
    let short = audio[..12_000].to_vec();
    let short_alone = run(&mut engine(64), vec![(0, format.recording_request(&short))]).remove(0);
    // 24 blocks of 4 cannot hold the two long streams (44 positions each, 11 blocks) and
    // the short one at once: some are preempted and recomputed.
    let mut core = engine(24);
    let mut streams: Vec<Live> = [
        (audio.clone(), vec![317, 4000, 2560, 40], 0),
        (short.clone(), vec![1280], 3),
        (audio.clone(), vec![5000, 7], 1),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (audio, chunks, start_step))| Live {
        id: RequestId::from(format!("live-{i}")),
        audio,
        sent: 0,
        chunks,
        start_step,
        ended: false,
    })
    .collect();
    let mut results: HashMap<RequestId, (Vec<u32>, FinishReason)> = HashMap::new();
    let mut step = 0;
    while results.len() < streams.len() {
        for live in streams
            .iter_mut()
            .filter(|l| l.start_step <= step && !l.ended)
        {
            if live.sent == 0 {
                let request = format.live_request(3.0).with_id(live.id.clone());
                core.add_request(request).expect("accepted");
                let silence = vec![0.0; format.leading_silence()];
                assert!(core
                    .append_audio(&live.id, &silence, false)
                    .expect("appended")
                    .is_none());
            }
            let size = live.chunks[step % live.chunks.len()];
            let end = (live.sent + size).min(live.audio.len());
            let mut chunk = live.audio[live.sent..end].to_vec();
            live.sent = end;
            live.ended = end == live.audio.len();
            if live.ended {
                chunk.extend(vec![0.0; format.trailing_silence(live.audio.len())]);
            }
            if let Some(out) = core
                .append_audio(&live.id, &chunk, live.ended)
                .expect("appended")
                .and_then(|o| o.finished)
            {
                results.insert(out.request_id.clone(), (out.tokens, out.finish_reason));
            }
        }
        for out in core.step().into_iter().filter_map(|o| o.finished) {
            results.insert(out.request_id.clone(), (out.tokens, out.finish_reason));
        }
        step += 1;
        assert!(step < 10_000, "the streams never finished");
    }
    for (i, want) in [&generated, &short_alone, &generated]
        .into_iter()
        .enumerate()
    {
        let (tokens, reason) = &results[&RequestId::from(format!("live-{i}"))];
        assert_eq!(tokens, want, "live stream {i}");
        assert_eq!(
            *reason,
            FinishReason::Stop,
            "live stream {i} ends with its audio"
        );
    }
    assert_eq!(core.kv_cache_stats().used_blocks(), 0);
    assert!(
        core.metrics().snapshot().preemptions > 0,
        "the small cache preempted"
    );
}

#[test]
fn a_live_stream_waits_for_its_audio_and_refuses_misuse() {
    let model = model();
    let format = model.format();
    let mut core = engine(64);
    let id = core
        .add_request(format.live_request(10.0))
        .expect("accepted");
    // No audio yet: nothing runs, and nothing is failed as stuck.
    assert!(core.awaits_input());
    assert!(core.step().is_empty());
    assert!(core.has_unfinished());
    let silence = vec![0.0; format.leading_silence() + 4000];
    core.append_audio(&id, &silence, false).expect("appended");
    assert!(!core.awaits_input());
    while !core.awaits_input() {
        assert!(core.step().iter().all(|o| o.finished.is_none()));
    }
    // Audio that is not a number, and a request that is not live, are refused.
    assert!(core.append_audio(&id, &[f32::NAN], false).is_err());
    let whole = core
        .add_request(format.recording_request(&[0.0; 1600]))
        .expect("accepted");
    assert!(core.append_audio(&whole, &[0.0], false).is_err());
    assert!(core
        .append_audio(&RequestId::from("nobody"), &[0.0], false)
        .is_err());
    // Audio that comes whole with a live request is refused.
    let both = format.live_request(1.0).with_audio(vec![0.0; 1600]);
    assert!(core.add_request(both).is_err());
    // Ending the audio lets the request finish; more after the end is refused.
    let tail = vec![0.0; format.trailing_silence(4000)];
    core.append_audio(&id, &tail, true).expect("appended");
    assert!(core.append_audio(&id, &[0.0], true).is_err());
    let mut finished = Vec::new();
    while core.has_unfinished() {
        finished.extend(core.step().into_iter().filter_map(|o| o.finished));
    }
    assert_eq!(finished.len(), 2);
    assert_eq!(core.kv_cache_stats().used_blocks(), 0);
}

#[tokio::test]
async fn the_threaded_engine_streams_text_as_live_audio_arrives() {
    let reference = reference();
    let model = model();
    let format_dir = dir();
    let format = izwi_core::models::voxtral_realtime::StreamingFormat::from_dir(&format_dir, None)
        .expect("format");
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(64),
        ..EngineCoreConfig::default()
    };
    let engine = izwi_core::engine::Engine::new(config, Box::new(model)).expect("engine");
    let (id, mut outputs) = engine
        .generate_streaming(format.live_request(5.0))
        .await
        .expect("accepted");
    let audio = floats(&reference["audio"]);
    let mut chunks = vec![vec![0.0; format.leading_silence()]];
    chunks.extend(audio.chunks(1600).map(<[f32]>::to_vec));
    let mut sent = 0;
    for chunk in chunks {
        sent += chunk.len();
        engine
            .append_audio(&id, chunk, false)
            .await
            .expect("appended");
    }
    // Before the audio ends, the text of every position whose audio has arrived comes:
    // the prompt's positions, then one token per position after them.
    let positions = StreamingMel::available(sent, false) / 8;
    let expected = positions + 1 - format.prompt().len();
    let mut streamed = Vec::new();
    while streamed.len() < expected {
        let out = tokio::time::timeout(std::time::Duration::from_secs(120), outputs.recv())
            .await
            .expect("text arrives before the audio ends")
            .expect("still running");
        assert!(out.finished.is_none(), "finished before the audio ended");
        streamed.extend(out.tokens);
    }
    engine
        .append_audio(&id, vec![0.0; format.trailing_silence(audio.len())], true)
        .await
        .expect("appended");
    let mut last = None;
    while let Some(out) = outputs.recv().await {
        streamed.extend(out.tokens.iter().copied());
        if out.finished.is_some() {
            last = out.finished;
        }
    }
    let last = last.expect("finished");
    assert_eq!(last.tokens, ids(&reference["generated"])[9..]);
    assert_eq!(streamed, last.tokens);
    assert!(expected < streamed.len(), "the rest came after the end");
}

#[tokio::test]
async fn the_transcriber_gives_the_reference_text_with_word_times() {
    use izwi_core::models::voxtral_realtime::{StreamingFormat, VoxtralTranscriber};
    let reference = reference();
    let format = std::sync::Arc::new(StreamingFormat::from_dir(&dir(), None).expect("format"));
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(64),
        ..EngineCoreConfig::default()
    };
    let engine = izwi_core::engine::Engine::new(config, Box::new(model())).expect("engine");
    let transcriber = VoxtralTranscriber::new(std::sync::Arc::new(engine), format.clone());
    let audio = floats(&reference["audio"]);
    let windows_seen = std::sync::Mutex::new(Vec::new());
    let transcript = transcriber
        .transcribe(&audio, std::slice::from_ref(&(0..audio.len())), |w| {
            windows_seen.lock().unwrap().push(w.index)
        })
        .await
        .expect("transcribed");
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("reference.json")).expect("reference.json"),
    )
    .expect("json");
    let text: String = transcript
        .segments
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(text, want["text"].as_str().expect("text"));
    assert_eq!(*windows_seen.lock().unwrap(), vec![0]);
    // Word times follow the token positions: in order, within the padded audio.
    let words: Vec<_> = transcript.segments.iter().flat_map(|s| &s.words).collect();
    assert!(!words.is_empty());
    for pair in words.windows(2) {
        assert!(pair[0].end <= pair[1].start + 1e-9, "{pair:?}");
    }
    // Two windows: the second's words are placed after its offset.
    let half = audio.len() / 2;
    let two = transcriber
        .transcribe(&audio, &[0..half, half..audio.len()], |_| {})
        .await
        .expect("transcribed");
    let second = two
        .segments
        .iter()
        .flat_map(|s| &s.words)
        .find(|w| w.start >= half as f64 / 16_000.0);
    assert!(second.is_some(), "no word placed in the second window");
}

#[tokio::test]
async fn a_live_transcription_past_its_length_ends_and_a_dropped_one_is_aborted() {
    use izwi_core::models::voxtral_realtime::{StreamingFormat, VoxtralTranscriber};
    let reference = reference();
    let format = std::sync::Arc::new(StreamingFormat::from_dir(&dir(), None).expect("format"));
    let config = EngineCoreConfig {
        block_size: 4,
        num_blocks: Some(64),
        ..EngineCoreConfig::default()
    };
    let engine = std::sync::Arc::new(
        izwi_core::engine::Engine::new(config, Box::new(model())).expect("engine"),
    );
    let transcriber = VoxtralTranscriber::new(engine.clone(), format);
    let audio = floats(&reference["audio"]);

    // Half a second allowed (and the margin for the last word, 1.4 s), four seconds
    // spoken: it ends at its length and the audio after that is dropped without an
    // error.
    let mut live = transcriber.start_live(0.5).await.expect("started");
    live.push(audio.clone()).await.expect("pushed");
    live.push(audio.clone()).await.expect("pushed");
    let mut last = None;
    while let Some(out) = live.next().await {
        if out.finished.is_some() {
            last = out.finished;
            break;
        }
    }
    let last = last.expect("finished");
    assert_eq!(last.finish_reason, FinishReason::Length);
    live.push(audio.clone())
        .await
        .expect("audio after the end is dropped");
    live.finish().await.expect("ending after the end is fine");

    // Dropped while waiting for audio: it is aborted at once, though the engine, with
    // every request waiting, hears no other command (the metrics are read without one).
    let aborted = engine.metrics().aborted_requests;
    let mut waiting = transcriber.start_live(5.0).await.expect("started");
    waiting
        .push(audio[..16_000].to_vec())
        .await
        .expect("pushed");
    // All the text that audio allows (then the engine sleeps, waiting for more).
    let sent = transcriber.format().leading_silence() + 16_000;
    let expected =
        StreamingMel::available(sent, false) / 8 + 1 - transcriber.format().prompt().len();
    let mut received = 0;
    while received < expected {
        received += waiting.next().await.expect("running").tokens.len();
    }
    drop(waiting);
    for _ in 0..600 {
        if engine.metrics().aborted_requests > aborted {
            let status = engine.status().await.expect("status");
            assert_eq!(status.running + status.waiting, 0);
            assert_eq!(status.kv_cache.used_blocks(), 0);
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the dropped transcription is still in the engine");
}

#[test]
fn words_read_from_a_words_first_token_are_the_whole_texts_words_from_there() {
    // Live dictation reads again only the tokens of the words not yet final: from any
    // word's first token, the words must be those the whole text gives from that word.
    use izwi_core::models::voxtral_realtime::{indexed_words_of, StreamingFormat};
    let format = StreamingFormat::from_dir(&dir(), None).expect("format");
    let tokens = ids(&reference()["generated"])[9..].to_vec();
    let logprobs: Vec<f32> = (0..tokens.len()).map(|i| -0.01 * i as f32).collect();
    let step = format.seconds_per_token();
    let (offset, until) = (1.5, 1.5 + tokens.len() as f64 * step);
    let whole = indexed_words_of(&format, &tokens, &logprobs, offset, until);
    assert!(whole.len() >= 3, "too few words to cut: {whole:?}");
    for (j, &(first, _)) in whole.iter().enumerate() {
        let tail: Vec<_> = indexed_words_of(
            &format,
            &tokens[first..],
            &logprobs[first..],
            offset + first as f64 * step,
            until,
        )
        .into_iter()
        .map(|(i, word)| (first + i, word))
        .collect();
        assert_eq!(tail.len(), whole.len() - j, "from word {j}");
        for ((i, got), (k, want)) in tail.iter().zip(&whole[j..]) {
            assert_eq!(i, k);
            assert_eq!(got.word, want.word);
            assert!((got.start - want.start).abs() < 1e-9 && (got.end - want.end).abs() < 1e-9);
            assert!((got.probability - want.probability).abs() < 1e-6);
        }
    }
}
