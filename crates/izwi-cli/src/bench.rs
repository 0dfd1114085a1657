//! `izwi bench ...`

mod chat;
mod lfm2;
mod lfm2_audio;
mod load;
mod piper;
mod process;
mod qwen3_tts;
mod voxtral;
mod whisper;

use std::path::PathBuf;

use anyhow::{ensure, Result};
use clap::Subcommand;
use izwi_core::bench::{
    batch_strategies, decode_throughput, DecodeBenchConfig, StrategyBenchConfig,
};
use izwi_core::models::llama::LlamaConfig;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Decode throughput of the engine at several batch sizes, beside the dense
    /// single-sequence path of the same model (random weights, CPU).
    Engine {
        /// Batch sizes to measure, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
        batch_sizes: Vec<usize>,
        /// Tokens each sequence decodes.
        #[arg(long, default_value_t = 64)]
        tokens: usize,
        /// Prompt length of each sequence.
        #[arg(long, default_value_t = 32)]
        prompt: usize,
        /// Use the tiny test model instead of the ~50M-parameter one.
        #[arg(long)]
        tiny: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Whisper transcription speed on real speech, whole process with the defaults,
    /// beside faster-whisper on the same weights.
    Whisper(whisper::WhisperBenchArgs),
    /// How soon a spoken question is answered aloud: Whisper, the chat model and the
    /// voice in one spoken turn, p50/p90 over several turns, stage by stage.
    Chat(chat::ChatBenchArgs),
    /// LFM2 decode throughput on the engine (random weights of LFM2-350M's shape)
    /// beside transformers decoding the same checkpoint in the same run.
    Lfm2(lfm2::Lfm2BenchArgs),
    /// LFM2-Audio speaking on the engine (audio frames/s at batch 1 and 4, time to the
    /// first audio) beside liquid-audio on the same random checkpoint of the 1.5B shape.
    #[command(name = "lfm2-audio")]
    Lfm2Audio(lfm2_audio::Lfm2AudioBenchArgs),
    /// Voxtral Realtime transcription throughput on the engine (seconds of audio per
    /// second, 1 and 4 streams) beside transformers on the same checkpoint.
    Voxtral(voxtral::VoxtralBenchArgs),
    /// Qwen3-TTS codec frames per second on the engine at several batch sizes and the
    /// time to the first audio, beside qwen-tts on the same random checkpoint (the
    /// 0.6B-Base shape) in the same run.
    #[command(name = "qwen3-tts")]
    Qwen3Tts(qwen3_tts::Qwen3TtsBenchArgs),
    /// Piper voice synthesis speed (real-time factor) of our VITS beside piper's own
    /// runtime (onnxruntime) on the same voice and phoneme ids.
    Piper(piper::PiperBenchArgs),
    /// Many clients transcribing a clip at once through `izwi serve`, per batch
    /// strategy: answers checked, latency p50/p99, throughput.
    Load(load::LoadBenchArgs),
    /// The batch strategies on a chat-like mixed load (random weights, CPU): streams
    /// decoding while long prompts arrive; gaps between the streams' tokens and the
    /// arrivals' first tokens.
    Strategies {
        /// Streams decoding when the prompts arrive.
        #[arg(long, default_value_t = 4)]
        streams: usize,
        /// Long prompts arriving together.
        #[arg(long, default_value_t = 4)]
        arrivals: usize,
        /// Tokens of each arriving prompt.
        #[arg(long, default_value_t = 1024)]
        prompt: usize,
        /// Use the tiny test model instead of the ~50M-parameter one.
        #[arg(long)]
        tiny: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(data_dir: Option<PathBuf>, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Load(args) => load::run(data_dir, args),
        BenchCommand::Strategies {
            streams,
            arrivals,
            prompt,
            tiny,
            json,
        } => {
            ensure!(
                streams > 0 && arrivals > 0 && prompt > 0,
                "--streams, --arrivals and --prompt must be at least 1"
            );
            let config = StrategyBenchConfig {
                model: if tiny {
                    LlamaConfig::tiny()
                } else {
                    LlamaConfig::bench()
                },
                streams,
                arrivals,
                arrival_prompt_len: prompt,
                stream_tokens: 48,
                seed: 0,
            };
            let rows = batch_strategies(&config)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(());
            }
            println!(
                "{streams} streams decoding while {arrivals} prompts of {prompt} tokens arrive (random weights, CPU)"
            );
            println!(
                "{:<18} {:>14} {:>14} {:>18} {:>18} {:>8}",
                "strategy",
                "gap p50 ms",
                "gap p99 ms",
                "first token p50",
                "first token max",
                "total s"
            );
            for r in &rows {
                println!(
                    "{:<18} {:>14.1} {:>14.1} {:>18.1} {:>18.1} {:>8.2}",
                    r.strategy,
                    r.stream_gap_p50_ms,
                    r.stream_gap_p99_ms,
                    r.arrival_first_token_p50_ms,
                    r.arrival_first_token_max_ms,
                    r.total_s
                );
            }
            Ok(())
        }
        BenchCommand::Whisper(args) => whisper::run(args),
        BenchCommand::Piper(args) => piper::run(args),
        BenchCommand::Lfm2(args) => lfm2::run(args),
        BenchCommand::Lfm2Audio(args) => lfm2_audio::run(args),
        BenchCommand::Voxtral(args) => voxtral::run(args),
        BenchCommand::Qwen3Tts(args) => qwen3_tts::run(args),
        BenchCommand::Chat(args) => chat::run(args),
        BenchCommand::Engine {
            batch_sizes,
            tokens,
            prompt,
            tiny,
            json,
        } => {
            ensure!(
                !batch_sizes.is_empty() && !batch_sizes.contains(&0),
                "batch sizes must be at least 1"
            );
            ensure!(
                tokens > 0 && prompt > 0,
                "--tokens and --prompt must be at least 1"
            );
            let config = DecodeBenchConfig {
                model: if tiny {
                    LlamaConfig::tiny()
                } else {
                    LlamaConfig::bench()
                },
                batch_sizes,
                prompt_len: prompt,
                new_tokens: tokens,
                seed: 0,
            };
            let report = decode_throughput(&config)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
                return Ok(());
            }
            println!(
                "decode throughput, llama-architecture model with {:.1}M parameters, f32, CPU, {} threads",
                report.parameters as f64 / 1e6,
                std::thread::available_parallelism().map_or(1, |n| n.get())
            );
            println!("prompt {prompt} tokens, {tokens} decoded tokens per sequence\n");
            println!(
                "{:<34} {:>10} {:>10} {:>12}",
                "", "tokens", "seconds", "tokens/s"
            );
            println!(
                "{:<34} {:>10} {:>10} {:>12.1}",
                "baseline: dense path, 1 sequence", tokens, "", report.dense_tokens_per_sec
            );
            for row in &report.rows {
                println!(
                    "{:<34} {:>10} {:>10.2} {:>12.1}   x{:.2} vs batch 1",
                    format!("engine, batch {}", row.batch_size),
                    row.decode_tokens,
                    row.seconds,
                    row.tokens_per_sec,
                    row.ratio_to_batch_1
                );
            }
            Ok(())
        }
    }
}

/// One row of a table of our figure beside a peer's: the label, ours, theirs and the
/// ratio, or dashes where the peer was not run. `widths`: ours' and theirs' columns.
fn print_beside(
    label: usize,
    ours: f64,
    theirs: Option<f64>,
    widths: (usize, usize),
    digits: usize,
) {
    let (w_ours, w_theirs) = widths;
    match theirs {
        Some(theirs) => println!(
            "{label:<8} {ours:>w_ours$.digits$} {theirs:>w_theirs$.digits$} {:>7.2}x",
            ours / theirs
        ),
        None => println!(
            "{label:<8} {ours:>w_ours$.digits$} {:>w_theirs$} {:>8}",
            "-", "-"
        ),
    }
}
