//! `izwi bench lfm2-audio`: LFM2-Audio speaking on the engine (TTS-style sequential
//! generation: audio frames per second at several batch sizes, and the time to the first
//! audio, Mimi included) beside liquid-audio on the same random checkpoint of
//! LFM2-Audio-1.5B's shape in the same run. tests/fixtures/bench_lfm2_audio_reference.py
//! makes the checkpoint (once; it is kept in the system's temporary folder) and times
//! liquid-audio. Both sides greedy, every utterance the same number of frames.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use izwi_core::engine::{EngineCore, EngineCoreConfig, FinishReason, GenerationParams};
use izwi_core::models::lfm2_audio::mimi::MIMI_FILE;
use izwi_core::models::lfm2_audio::{
    Generation, Lfm2AudioExecutor, Lfm2AudioRequests, MimiDecoder, MimiShape, Segment,
};
use izwi_core::Device;
use serde::Deserialize;

const INSTALL: &str = "python3.12 -m venv ~/.venvs/lfm2-audio && \
                       ~/.venvs/lfm2-audio/bin/pip install liquid-audio==1.3.0 torch torchaudio";

#[derive(Args)]
pub struct Lfm2AudioBenchArgs {
    /// A Python with liquid-audio 1.3.0: it makes the random checkpoint (when the
    /// folder has none yet) and times liquid-audio on it.
    #[arg(long, env = "IZWI_BENCH_PYTHON")]
    python: Option<PathBuf>,
    /// The checkpoint folder (with the bench's prompt, bench.json). Default: a random
    /// LFM2-Audio-1.5B in the system's temporary folder, made there on first use (3.4 GB
    /// on disk; each side holds it in f32, about 6 GB, while it runs).
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Batch sizes to measure on the engine, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    batch_sizes: Vec<usize>,
    /// Frames (80 ms each) every utterance says.
    #[arg(long, default_value_t = 48)]
    frames: usize,
}

#[derive(Deserialize)]
struct Reference {
    rows: Vec<ReferenceRow>,
    first_audio_s: f64,
    threads: usize,
}

#[derive(Deserialize)]
struct ReferenceRow {
    batch_size: usize,
    frames_per_sec: f64,
}

/// The folder's bench.json: the prompt (a TTS turn the checkpoint opens the audio
/// after) and, for a Mimi not of Kyutai's shape, its shape.
#[derive(Deserialize)]
struct BenchPrompt {
    text_ids: Vec<u32>,
    mimi: Option<MimiShape>,
}

pub fn run(args: Lfm2AudioBenchArgs) -> Result<()> {
    ensure!(
        !args.batch_sizes.is_empty() && !args.batch_sizes.contains(&0),
        "batch sizes must be at least 1"
    );
    ensure!(args.frames > 0, "--frames must be at least 1");
    let dir = args
        .checkpoint
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("izwi-bench-lfm2-audio-1.5b"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bench_lfm2_audio_reference.py");
    let peer = args.python.as_deref().filter(|python| {
        let installed = Command::new(python)
            .args(["-c", "import liquid_audio"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            eprintln!(
                "{} cannot import liquid_audio; install it with: {INSTALL}",
                python.display()
            );
        }
        installed
    });
    if peer.is_none() && args.python.is_none() {
        eprintln!(
            "liquid-audio is not measured: give --python PY (a Python with liquid-audio \
             1.3.0; install it with: {INSTALL})"
        );
    }
    let prompt_path = dir.join("bench.json");
    if !prompt_path.exists() {
        let Some(python) = peer else {
            bail!(
                "{} holds no bench checkpoint: give --python PY (liquid-audio 1.3.0) to make \
                 one, or --checkpoint DIR (an LFM2-Audio folder with a bench.json)",
                dir.display()
            );
        };
        eprintln!(
            "liquid-audio: making a random LFM2-Audio-1.5B in {}",
            dir.display()
        );
        let mut command = Command::new(python);
        command.arg(&script).arg("make").arg("--out").arg(&dir);
        let _: serde_json::Value = super::process::reference_json(command)?;
    }
    let prompt: BenchPrompt = serde_json::from_str(
        &std::fs::read_to_string(&prompt_path)
            .with_context(|| format!("reading {}", prompt_path.display()))?,
    )
    .with_context(|| format!("reading {}", prompt_path.display()))?;

    // One side after the other: each holds the model in f32.
    let reference = match peer {
        Some(python) => {
            eprintln!("liquid-audio: speaking");
            let mut command = Command::new(python);
            command
                .arg(&script)
                .arg("time")
                .arg("--out")
                .arg(&dir)
                .args(["--frames", &args.frames.to_string()]);
            Some(super::process::reference_json::<Reference>(command)?)
        }
        None => None,
    };

    eprintln!("izwi: speaking on the engine");
    let max_batch = args.batch_sizes.iter().copied().max().unwrap_or(1);
    let mut bench = Bench::load(&dir, &prompt, max_batch)?;
    // Warm-up, as on the reference side: a short utterance first.
    bench.frames_per_sec(1, args.frames.min(2))?;
    let mut rows = Vec::new();
    for &batch in &args.batch_sizes {
        rows.push((batch, bench.frames_per_sec(batch, args.frames)?));
    }
    let first_audio = bench.first_audio(args.frames.min(4))?;

    println!(
        "LFM2-Audio, {}, f32, CPU, {} threads{}; TTS prompt of {} tokens, greedy, {} frames \
         ({:.2} s of audio) per utterance, prompt included\n",
        if args.checkpoint.is_some() {
            dir.display().to_string()
        } else {
            "random weights of the 1.5B shape".to_string()
        },
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        reference
            .as_ref()
            .map_or(String::new(), |r| format!(" (torch: {})", r.threads)),
        prompt.text_ids.len(),
        args.frames,
        args.frames as f64 * 0.08
    );
    println!(
        "{:<8} {:>16} {:>22} {:>8}",
        "batch", "izwi frames/s", "liquid-audio frames/s", "ratio"
    );
    for (batch, ours) in &rows {
        let theirs = reference.as_ref().and_then(|r| {
            r.rows
                .iter()
                .find(|t| t.batch_size == *batch)
                .map(|t| t.frames_per_sec)
        });
        super::print_beside(*batch, *ours, theirs, (16, 22), 2);
    }
    if reference.is_some() && rows.iter().any(|(batch, _)| *batch > 1) {
        println!("(liquid-audio generates one sequence at a time: no batch above 1)");
    }
    match &reference {
        Some(r) => println!(
            "\nfirst audio (request to the first frame's audio out of Mimi): izwi {:.3} s, \
             liquid-audio {:.3} s; izwi takes {:.2}x liquid-audio's time",
            first_audio,
            r.first_audio_s,
            first_audio / r.first_audio_s
        ),
        None => println!(
            "\nfirst audio (request to the first frame's audio out of Mimi): izwi {first_audio:.3} s"
        ),
    }
    Ok(())
}

/// The engine side: one engine (the model loaded once) and the prompt every utterance
/// speaks. Prefix caching is off, so every utterance computes its prompt, as
/// liquid-audio does.
struct Bench<'a> {
    dir: &'a Path,
    prompt: &'a BenchPrompt,
    core: EngineCore,
    requests: Lfm2AudioRequests,
}

impl<'a> Bench<'a> {
    fn load(dir: &'a Path, prompt: &'a BenchPrompt, max_batch: usize) -> Result<Self> {
        ensure!(
            !prompt.text_ids.is_empty(),
            "bench.json has an empty prompt"
        );
        let executor = Lfm2AudioExecutor::from_dir(dir, &Device::Cpu)?;
        let requests = executor.requests();
        let config = EngineCoreConfig {
            max_batch_size: max_batch,
            kv_cache_bytes: 256 << 20,
            enable_prefix_caching: false,
            ..EngineCoreConfig::default()
        };
        let core = EngineCore::new(config, Box::new(executor))?;
        Ok(Self {
            dir,
            prompt,
            core,
            requests,
        })
    }

    /// Adds one utterance of `frames` frames: `<|audio_start|>`, then the frames.
    fn speak(&mut self, frames: usize) -> Result<Receiver<Vec<u32>>> {
        let params = GenerationParams {
            max_tokens: frames + 1,
            ..GenerationParams::default()
        };
        let (request, out) = self.requests.prepare(
            vec![Segment::Text(self.prompt.text_ids.clone())],
            Generation::Sequential,
            params,
            &GenerationParams::default(),
        )?;
        self.core.add_request(request)?;
        Ok(out)
    }

    /// Frames per second of `batch` utterances spoken together, prompts included.
    fn frames_per_sec(&mut self, batch: usize, frames: usize) -> Result<f64> {
        let started = Instant::now();
        let receivers = (0..batch)
            .map(|_| self.speak(frames))
            .collect::<Result<Vec<_>>>()?;
        while self.core.has_unfinished() {
            for out in self.core.step().into_iter().filter_map(|o| o.finished) {
                if let FinishReason::Failed(why) = out.finish_reason {
                    bail!("an utterance failed: {why}");
                }
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let said: usize = receivers.iter().map(|r| r.try_iter().count()).sum();
        ensure!(
            said == batch * frames,
            "{said} frames at batch {batch}, not {frames} each: the checkpoint's prompt \
             must open the audio at once and never close it (bench.json)"
        );
        Ok(said as f64 / seconds)
    }

    /// Seconds from the request to its first frame's audio out of Mimi (streamed
    /// frame by frame, as liquid-audio's demo does); the utterance is then finished.
    fn first_audio(&mut self, frames: usize) -> Result<f64> {
        let shape = self.prompt.mimi.clone().unwrap_or_else(MimiShape::kyutai);
        let mut mimi = MimiDecoder::load(&self.dir.join(MIMI_FILE), &shape, &Device::Cpu)?;
        let started = Instant::now();
        let out = self.speak(frames)?;
        let mut first = None;
        while self.core.has_unfinished() {
            self.core.step();
            if first.is_none() {
                if let Ok(frame) = out.try_recv() {
                    let audio = mimi.decode_next(std::slice::from_ref(&frame))?;
                    ensure!(!audio.is_empty(), "Mimi gave no audio for the first frame");
                    first = Some(started.elapsed().as_secs_f64());
                }
            }
        }
        first.context("the utterance gave no frame")
    }
}
