//! LFM2-Audio's spoken turns through `Lfm2Audio` (the model on its engine, as the
//! product runs it) on the tiny random checkpoint: the conversation turn is
//! liquid-audio's, step for step, and its audio is Mimi's decode of its frames; TTS in
//! a built-in voice; seeds; concurrent turns; history; a folder that cannot speak.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::Device;
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::lfm2_audio::mimi::MIMI_FILE;
use izwi_core::models::lfm2_audio::{
    AudioDetokenizer, AudioSampling, ChatLayout, Lfm2Audio, Lfm2Voice, Message, MimiDecoder,
    MimiShape, Part, ReplyPiece, SpokenTurn, CHAT_PROMPT,
};

mod common;

use common::lfm2_audio::{dir, expected_steps, reference};

fn model(dir: &Path) -> Lfm2Audio {
    Lfm2Audio::from_dir(dir, &Device::Cpu, EngineCoreConfig::default()).expect("model loads")
}

fn speech() -> Arc<[f32]> {
    reference()["audio"].to_vec1::<f32>().unwrap().into()
}

fn conversation(speech: Arc<[f32]>) -> Vec<Message> {
    vec![
        Message {
            role: "system".into(),
            parts: vec![Part::Text(CHAT_PROMPT.into())],
        },
        Message {
            role: "user".into(),
            parts: vec![Part::Audio(speech)],
        },
    ]
}

/// A turn's steps as the reference records them: a text token, or -1 and a frame.
fn steps(turn: &SpokenTurn) -> Vec<(i64, Vec<u32>)> {
    let mut steps = Vec::new();
    for part in &turn.parts {
        match part {
            Part::Tokens(ids) => steps.extend(ids.iter().map(|&t| (t as i64, Vec::new()))),
            Part::Frames(frames) => steps.extend(frames.iter().map(|f| (-1, f.clone()))),
            other => panic!("a turn made of {other:?}"),
        }
    }
    steps
}

/// A copy of the tiny checkpoint without its Mimi.
fn without_mimi() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != MIMI_FILE {
            std::fs::copy(&path, folder.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    folder
}

/// The frames a turn spoke (the end-of-audio frame left out).
fn spoken_frames(turn: &SpokenTurn) -> Vec<Vec<u32>> {
    steps(turn)
        .into_iter()
        .filter(|(t, f)| *t < 0 && f.iter().all(|&c| c < 2048))
        .map(|(_, f)| f)
        .collect()
}

/// Mimi's whole decode of the frames a turn spoke (the end-of-audio frame left out).
fn mimi_audio(turn: &SpokenTurn) -> Vec<f32> {
    let shape = MimiShape::of_dir(&dir()).expect("mimi.json");
    let mut mimi =
        MimiDecoder::load(&dir().join(MIMI_FILE), &shape, &Device::Cpu).expect("mimi loads");
    let frames = spoken_frames(turn);
    assert_eq!(frames.len(), turn.frames);
    mimi.decode(&frames).expect("decodes")
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

#[derive(Default)]
struct Heard {
    text: String,
    audio: Vec<f32>,
    pieces: usize,
}

impl Heard {
    fn take(&mut self, piece: ReplyPiece) {
        self.pieces += 1;
        match piece {
            ReplyPiece::Text(t) => self.text.push_str(&t),
            ReplyPiece::Audio(a) => self.audio.extend(a),
        }
    }
}

#[tokio::test]
async fn a_conversation_turn_is_liquid_audios_and_streams_its_audio() {
    let reference = reference();
    let expected = expected_steps(&reference, "chat");
    let model = model(&dir());
    assert!(model.can_speak());
    let mut heard = Heard::default();
    let turn = model
        .reply(
            &conversation(speech()),
            &AudioSampling::greedy(),
            expected.len(),
            |piece| heard.take(piece),
        )
        .await
        .expect("the turn runs");
    assert_eq!(steps(&turn), expected, "the turn, step for step");
    assert!(turn.frames > 0, "the turn spoke");
    assert!(heard.pieces > 2, "text and audio came in pieces");
    assert_eq!(turn.samples, turn.frames * 1920);
    let diff = max_abs_diff(&heard.audio, &mimi_audio(&turn));
    assert!(diff < 1e-4, "streamed audio differs from Mimi's by {diff}");
    let text_ids: Vec<u32> = steps(&turn)
        .into_iter()
        .filter(|(t, _)| *t >= 0)
        .map(|(t, _)| t as u32)
        .collect();
    let layout = ChatLayout::from_dir(&dir()).unwrap();
    let text = layout.decode(&text_ids).unwrap();
    assert_eq!(heard.text, text);
    assert_eq!(turn.text, text.trim());
}

#[tokio::test]
async fn a_voice_speaks_until_its_audio_ends() {
    let model = model(&dir());
    let mut heard = Vec::new();
    let turn = model
        .speak(
            "Hello there.",
            Lfm2Voice::UkFemale,
            &AudioSampling::greedy(),
            64,
            |audio| heard.extend(audio),
        )
        .await
        .expect("speaks");
    let steps = steps(&turn);
    if turn.ended {
        // Stopped by its end-of-audio frame, which closes the turn.
        assert_eq!(steps.last().map(|s| s.1.clone()), Some(vec![2048; 8]));
    } else {
        assert_eq!(steps.len(), 64, "the step limit");
    }
    assert_eq!(heard.len(), turn.samples);
    let diff = max_abs_diff(&heard, &mimi_audio(&turn));
    assert!(diff < 1e-4, "streamed audio differs from Mimi's by {diff}");

    // The voice is its system prompt: another voice is another prompt, so (greedy on
    // the same weights) a turn of its own.
    let other = model
        .speak(
            "Hello there.",
            Lfm2Voice::UsMale,
            &AudioSampling::greedy(),
            64,
            |_| {},
        )
        .await
        .expect("speaks");
    assert_ne!(self::steps(&other), steps);
}

#[tokio::test]
async fn a_seed_gives_the_same_speech_and_turns_at_once_are_the_turns_alone() {
    let model = model(&dir());
    let sampled = |seed| AudioSampling {
        seed: Some(seed),
        ..AudioSampling::speech()
    };
    let say = |seed| {
        let model = &model;
        async move {
            let mut audio = Vec::new();
            let turn = model
                .speak(
                    "Good morning.",
                    Lfm2Voice::UsMale,
                    &sampled(seed),
                    48,
                    |a| audio.extend(a),
                )
                .await
                .expect("speaks");
            (steps(&turn), audio)
        }
    };
    let alone_1 = say(1).await;
    let alone_2 = say(2).await;
    assert_ne!(alone_1.0, alone_2.0, "another seed, other frames");
    // Together on the engine, batched.
    let (together_1, together_2) = tokio::join!(say(1), say(2));
    assert_eq!(together_1, alone_1);
    assert_eq!(together_2, alone_2);
}

#[tokio::test]
async fn a_second_turn_hears_the_first() {
    let model = model(&dir());
    let mut messages = conversation(speech());
    let first = model
        .reply(&messages, &AudioSampling::greedy(), 24, |_| {})
        .await
        .expect("first turn");
    messages.push(Message {
        role: "assistant".into(),
        parts: first.parts.clone(),
    });
    messages.push(Message {
        role: "user".into(),
        parts: vec![Part::Audio(speech())],
    });
    let second = model
        .reply(&messages, &AudioSampling::greedy(), 24, |_| {})
        .await
        .expect("second turn");
    let without_history = model
        .reply(
            &conversation(speech()),
            &AudioSampling::greedy(),
            24,
            |_| {},
        )
        .await
        .expect("a first turn again");
    assert_eq!(
        steps(&without_history),
        steps(&first),
        "greedy is repeatable"
    );
    assert_ne!(
        steps(&second),
        steps(&first),
        "the same question after an answer is another prompt"
    );
}

#[tokio::test]
async fn a_turn_dropped_mid_way_leaves_the_engine_to_the_next() {
    let model = model(&dir());
    let whole = model
        .reply(
            &conversation(speech()),
            &AudioSampling::greedy(),
            24,
            |_| {},
        )
        .await
        .expect("a turn");
    let (heard, mut first) = tokio::sync::mpsc::unbounded_channel();
    let (messages, greedy) = (conversation(speech()), AudioSampling::greedy());
    let turn = model.reply(&messages, &greedy, 200, move |piece| {
        let _ = heard.send(piece);
    });
    // Cut off as soon as it has said something, as a barge-in does.
    tokio::select! {
        _ = turn => panic!("the turn ended before it was cut off"),
        piece = first.recv() => assert!(piece.is_some()),
    }
    let again = model
        .reply(
            &conversation(speech()),
            &AudioSampling::greedy(),
            24,
            |_| {},
        )
        .await
        .expect("the next turn runs");
    assert_eq!(steps(&again), steps(&whole));
}

#[tokio::test]
async fn a_folder_without_mimi_or_detokenizer_cannot_speak() {
    let folder = without_mimi();
    let model = model(folder.path());
    assert!(!model.can_speak());
    let err = model
        .speak(
            "Hello.",
            Lfm2Voice::UsMale,
            &AudioSampling::speech(),
            8,
            |_| {},
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot speak"), "{err}");
    // It still transcribes.
    model.transcribe(speech()).await.expect("transcribes");
}

/// LFM2.5-Audio's layout: the detokenizer's folder beside the weights, no Mimi. Its
/// speech is the detokenizer's decode of the turn's frames.
#[tokio::test]
async fn an_lfm2_5_folder_speaks_through_its_detokenizer() {
    let folder = without_mimi();
    let detokenizer = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lfm2-audio-detokenizer-tiny");
    let to = folder.path().join("audio_detokenizer");
    std::fs::create_dir(&to).unwrap();
    for name in ["config.json", "model.safetensors"] {
        std::fs::copy(detokenizer.join(name), to.join(name)).unwrap();
    }
    let model = model(folder.path());
    assert!(model.can_speak());
    let mut heard = Vec::new();
    let turn = model
        .speak(
            "Hello there.",
            Lfm2Voice::UsFemale,
            &AudioSampling::greedy(),
            40,
            |audio| heard.extend(audio),
        )
        .await
        .expect("speaks");
    let frames = spoken_frames(&turn);
    assert!(!frames.is_empty(), "the turn spoke");
    let whole = AudioDetokenizer::from_dir(&to, &Device::Cpu)
        .expect("loads")
        .decode(&frames)
        .expect("decodes");
    assert_eq!(turn.samples, heard.len());
    let diff = max_abs_diff(&heard, &whole);
    assert!(diff < 1e-5, "the streamed speech differs by {diff}");
}

/// A job holds a turn across awaits on any of the runtime's threads.
#[test]
fn turns_can_move_between_threads() {
    fn send<T: Send>(_: T) {}
    let model = model(&dir());
    let (messages, sampling) = (conversation(speech()), AudioSampling::greedy());
    send(model.speak("Hi.", Lfm2Voice::UsMale, &sampling, 1, |_| {}));
    send(model.reply(&messages, &sampling, 1, |_| {}));
}
