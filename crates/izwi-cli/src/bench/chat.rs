//! `izwi bench chat`: how soon a spoken question is answered aloud. Questions are
//! synthesised by espeak-ng, each handed over whole as a spoken turn of one
//! conversation (the clock starts when the recording is handed over: the moment the
//! user stopped speaking); per turn we record the time to the transcript, the reply's
//! first token, its first complete sentence and its first sample of audio, and print
//! p50/p90 of each. Models are loaded and warmed by one turn first, not timed. Runs in
//! a scratch data folder: the benchmark leaves nothing in the user's history.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use izwi_core::bench::percentile;
use izwi_runtime::{
    CancellationToken, ChatParams, Conversation, NoEvents, NoPlayback, Runtime, RuntimeConfig,
    VoiceChatSetup, DEFAULT_SYSTEM_PROMPT,
};

/// Said first, to load and warm the models; not measured.
const WARM_UP: &str = "Hello, can you hear me?";

/// Ten short questions of the kind people ask a voice assistant.
const QUESTIONS: [&str; 10] = [
    "What is the capital of France?",
    "What color is the sky?",
    "How many days are in a week?",
    "What is the largest ocean on Earth?",
    "Who wrote Romeo and Juliet?",
    "What do bees make?",
    "What is the boiling point of water?",
    "How many legs does a spider have?",
    "What is the opposite of hot?",
    "Which planet is closest to the sun?",
];

#[derive(Args)]
pub struct ChatBenchArgs {
    /// The chat model (.gguf).
    #[arg(
        long,
        default_value = ".assets/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
    )]
    llm: String,
    /// The Whisper model: a catalog id or a model folder.
    #[arg(long, default_value = ".assets/models/whisper-tiny.en")]
    asr: String,
    /// A voice model's id or a Piper .onnx file.
    #[arg(
        long,
        default_value = ".assets/voices/en_US-joe-medium/en_US-joe-medium.onnx"
    )]
    voice: String,
    /// Silero VAD (silero_vad_16k_op15.onnx), as transcription uses it.
    #[arg(
        long,
        default_value = ".assets/models/silero-vad/silero_vad_16k_op15.onnx"
    )]
    vad: PathBuf,
    /// Turns measured (questions repeat after ten).
    #[arg(long, default_value_t = 10)]
    turns: usize,
    /// Print every turn as JSON, then the summary.
    #[arg(long)]
    json: bool,
}

/// How a stage's time is read from a turn's.
type Stage = fn(&TurnTimes) -> f64;

/// One turn's times, milliseconds from the end of the question.
#[derive(Debug, Clone)]
struct TurnTimes {
    question: String,
    heard: String,
    reply: String,
    asr_ms: f64,
    first_token_ms: f64,
    first_sentence_ms: f64,
    first_audio_ms: f64,
    total_ms: f64,
}

pub fn run(args: ChatBenchArgs) -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let tokio = tokio::runtime::Runtime::new()?;
    let runtime = tokio.block_on(Runtime::open(
        RuntimeConfig::new(scratch.path().join("data")),
        Arc::new(NoEvents),
    ))?;
    tokio.block_on(runtime.install_vad(&args.vad))?;
    let espeak = izwi_core::text::Espeak::find()?;
    let mut questions = Vec::new();
    // The warm-up question is not among the measured ones: an audio seen before would
    // find its encoding in the engine's cache.
    for (i, text) in [WARM_UP].iter().chain(&QUESTIONS).enumerate() {
        let path = scratch.path().join(format!("q{i}.wav"));
        let status = std::process::Command::new(espeak.program())
            .args(["-v", "en-us", "-w"])
            .arg(&path)
            .arg(text)
            .status()
            .context("running espeak-ng")?;
        if !status.success() {
            bail!("espeak-ng could not synthesise {text:?}");
        }
        questions.push((text.to_string(), izwi_runtime::load_for_asr(&path)?));
    }
    let setup = VoiceChatSetup {
        asr: args.asr.clone(),
        voice: args.voice.clone(),
        language: None,
    };
    let times = tokio.block_on(async {
        let model = runtime.open_chat_model(&args.llm).await?;
        runtime.prepare_voice_chat(&setup).await?;
        let params = ChatParams::default();
        let mut warm_up = Conversation::new(DEFAULT_SYSTEM_PROMPT);
        let mut measured = Conversation::new(DEFAULT_SYSTEM_PROMPT);
        let mut times = Vec::new();
        // Turn 0 warms up, in a conversation of its own so the measured one holds only
        // its questions; then `turns` measured.
        for turn in 0..=args.turns {
            let (question, speech) = match turn {
                0 => &questions[0],
                n => &questions[1 + (n - 1) % QUESTIONS.len()],
            };
            let conversation = match turn {
                0 => &mut warm_up,
                _ => &mut measured,
            };
            let ended = Instant::now();
            let spoken = runtime
                .voice_turn(
                    &setup,
                    &model,
                    conversation,
                    &params,
                    speech.clone(),
                    ended,
                    &NoPlayback::default(),
                    &CancellationToken::new(),
                    |_| {},
                )
                .await?
                .with_context(|| format!("no words were heard in {question:?}"))?;
            if turn == 0 {
                continue;
            }
            let m = &spoken.metrics;
            let t = TurnTimes {
                question: question.clone(),
                heard: spoken.user_text.clone(),
                reply: spoken.reply_text.clone(),
                asr_ms: m.asr_ms.unwrap_or(f64::NAN),
                first_token_ms: m.first_token_ms.unwrap_or(f64::NAN),
                first_sentence_ms: spoken.first_sentence_ms.unwrap_or(f64::NAN),
                first_audio_ms: m.first_audio_ms.unwrap_or(f64::NAN),
                total_ms: m.total_ms.unwrap_or(f64::NAN),
            };
            if args.json {
                let json = serde_json::json!({
                    "question": t.question,
                    "heard": t.heard,
                    "reply": t.reply,
                    "asr_ms": t.asr_ms,
                    "first_token_ms": t.first_token_ms,
                    "first_sentence_ms": t.first_sentence_ms,
                    "first_audio_ms": t.first_audio_ms,
                    "total_ms": t.total_ms,
                });
                println!("{json}");
            }
            times.push(t);
        }
        anyhow::Ok(times)
    })?;
    tokio.block_on(runtime.shutdown());

    let column = |f: Stage| -> (f64, f64) {
        let mut v: Vec<f64> = times.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (percentile(&v, 0.5), percentile(&v, 0.9))
    };
    println!(
        "spoken turns: {} ({} threads), asr {}, voice {}, chat model {}",
        times.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        args.asr,
        args.voice,
        args.llm
    );
    println!("milliseconds from the end of the question      p50      p90");
    let rows: [(&str, Stage); 5] = [
        ("words recognised (Whisper)", |t| t.asr_ms),
        ("reply's first token", |t| t.first_token_ms),
        ("reply's first piece written", |t| t.first_sentence_ms),
        ("first audio ready to play", |t| t.first_audio_ms),
        ("reply whole (text and audio)", |t| t.total_ms),
    ];
    for (name, f) in rows {
        let (p50, p90) = column(f);
        println!("{name:<44} {p50:>8.0} {p90:>8.0}");
    }
    Ok(())
}
