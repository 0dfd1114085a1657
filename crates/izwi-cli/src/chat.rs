//! `izwi chat`: a conversation with a GGUF chat model, kept in the history's chats.
//! Typed: one message per line from standard input, the reply streamed as it is
//! written; an empty line or the end of input ends it. Spoken from files: each
//! `--input` recording is a turn, answered in `--voice`, the reply's audio written to
//! `--output` (one turn) and kept in the data folder. `--speech-to-speech MODEL`: an
//! LFM2-Audio model hears the spoken turns and answers them aloud itself.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{ArgGroup, Args};
use izwi_runtime::{
    AudioSampling, CancellationToken, ChatParams, ChatSettings, LiveChatOptions, LiveEvent,
    Microphone, NoEvents, NoPlayback, Playback, Runtime, TurnEvent, VoiceChat, VoiceChatSetup,
    VoiceTurn, CHAT_PROMPT, DEFAULT_SYSTEM_PROMPT,
};

#[derive(Args)]
#[command(group(ArgGroup::new("answer").args(["voice", "speech_to_speech"])))]
pub struct ChatArgs {
    /// The chat model: an installed chat model's id (`izwi models list`), the path of
    /// a .gguf file (Llama architecture, e.g. SmolLM2-135M-Instruct.Q4_1.gguf), or the
    /// path of an LFM2 Hugging Face folder (config.json, safetensors, tokenizer).
    /// Default: the one chosen for chat in the app's settings.
    #[arg(long)]
    llm: Option<String>,
    /// What the model is told before the conversation.
    #[arg(long, default_value = DEFAULT_SYSTEM_PROMPT)]
    system: String,
    /// Go on with a stored chat (its id from `izwi chats`), with its system prompt.
    #[arg(long)]
    resume: Option<i64>,
    /// 0 always gives the likeliest reply; up to 2 for more variety. Default: 0 for
    /// chat models; LFM2-Audio's chat sampling (1.0, top-k 4) for speech-to-speech.
    #[arg(long)]
    temperature: Option<f32>,
    /// Seed for sampling when the temperature is above 0.
    #[arg(long)]
    seed: Option<u64>,
    /// The longest reply, in tokens. Default: 512; speech-to-speech counts text
    /// tokens and frames (80 ms of audio each), 1024 by default.
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Print each reply as one JSON object (text, tokens, timings) instead of text.
    #[arg(long)]
    json: bool,
    /// A recording of what the user says (any audio file); each one given is a spoken
    /// turn, answered aloud (in --voice, or by --speech-to-speech) instead of reading
    /// standard input.
    #[arg(long, requires = "answer")]
    input: Vec<PathBuf>,
    /// The Whisper model that hears the user: an id (`izwi models list`), `local/NAME`
    /// or a model folder. Default: the default transcription model.
    #[arg(long)]
    asr: Option<String>,
    /// The voice that speaks the replies: a library voice (`izwi voices`), a voice
    /// model's id or a Piper .onnx file.
    #[arg(long)]
    voice: Option<String>,
    /// The language the user speaks (ISO code, e.g. en); detected when not given.
    #[arg(long)]
    language: Option<String>,
    /// Where the spoken reply goes (a WAV), with one --input. A file already there is
    /// kept: the request is refused unless --force.
    #[arg(long, requires = "input")]
    output: Option<PathBuf>,
    /// Replace --output when a file is already there.
    #[arg(long, requires = "output")]
    force: bool,
    /// Talk through the microphone and hear the replies on the speaker, until Ctrl-C.
    #[arg(long, requires = "answer", conflicts_with = "input")]
    mic: bool,
    /// Speech-to-speech: an LFM2-Audio model (an installed id) hears each spoken turn
    /// and answers it aloud, in place of --asr, --llm and --voice.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["llm", "asr", "voice", "language"])]
    speech_to_speech: Option<String>,
    /// The microphone (an id from `izwi devices`); default: the one chosen in the
    /// app's settings, else the system's.
    #[arg(long, requires = "mic")]
    input_device: Option<String>,
    /// The speaker (an id from `izwi devices`); default: the one chosen in the app's
    /// settings, else the system's.
    #[arg(long, requires = "mic")]
    output_device: Option<String>,
    /// The pause, in milliseconds, that ends what you say.
    #[arg(long, default_value_t = 500)]
    end_silence_ms: u32,
    /// Let replies finish even when you speak over them (use it with speakers the
    /// microphone hears, or the reply interrupts itself).
    #[arg(long, requires = "mic")]
    no_barge_in: bool,
    /// End after this many spoken turns.
    #[arg(long, requires = "mic")]
    max_turns: Option<usize>,
}

pub fn run(data_dir: Option<PathBuf>, args: ChatArgs) -> Result<()> {
    if args.output.is_some() && args.input.len() != 1 {
        bail!("--output takes the reply of one --input; give one, or leave out --output");
    }
    let (tokio, runtime) = crate::open(data_dir, Arc::new(NoEvents))?;
    if let Some(output) = &args.output {
        runtime.check_output_file(output, args.force)?;
    }
    let settings = tokio.block_on(runtime.chat_settings());
    if let Some(id) = &args.speech_to_speech {
        if args.input.is_empty() && !args.mic {
            bail!("--speech-to-speech answers speech: give --input recordings or --mic");
        }
        let mut chat = tokio.block_on(runtime.open_speech_chat(id))?;
        if let Some(steps) = args.max_tokens {
            chat.max_steps = steps;
        }
        if let Some(temperature) = args.temperature {
            chat.sampling = if temperature == 0.0 {
                AudioSampling::greedy()
            } else {
                AudioSampling {
                    temperature,
                    ..AudioSampling::chat()
                }
            };
        }
        chat.sampling.seed = args.seed;
        let chat = VoiceChat::SpeechToSpeech(&chat);
        return tokio.block_on(async {
            match args.mic {
                true => live(&runtime, chat, id, CHAT_PROMPT, &args, &settings).await,
                false => spoken_turns(&runtime, chat, CHAT_PROMPT, &args).await,
            }
        });
    }
    let Some(llm) = args.llm.as_ref().or(settings.llm.as_ref()) else {
        bail!(
            "which chat model? Give --llm (an installed chat model's id, a .gguf file or \
             an LFM2 model folder; `izwi models import FILE.gguf` installs one)"
        );
    };
    let model = tokio.block_on(runtime.open_chat_model(llm))?;
    let params = ChatParams {
        max_tokens: args.max_tokens.unwrap_or(512),
        temperature: args.temperature.unwrap_or(0.0),
        seed: args.seed,
    };
    if !args.input.is_empty() || args.mic {
        return tokio.block_on(async {
            let setup = setup(&runtime, &args).await?;
            let chat = VoiceChat::Cascade {
                setup: &setup,
                model: &model,
                params: &params,
            };
            match args.mic {
                true => live(&runtime, chat, model.name(), &args.system, &args, &settings).await,
                false => spoken_turns(&runtime, chat, &args.system, &args).await,
            }
        });
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("{}: type a message, an empty line to end.", model.name());
    }
    let mut conversation = tokio.block_on(runtime.open_conversation(args.resume, &args.system))?;
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            eprint!("> ");
        }
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        let mut out = std::io::stdout().lock();
        let say = runtime.say(&model, &mut conversation, line, &params, |delta| {
            if !args.json {
                // A closed stdout ends the conversation at the next write below.
                let _ = out.write_all(delta.as_bytes()).and_then(|_| out.flush());
            }
        });
        let reply = tokio.block_on(say)?;
        if args.json {
            let json = serde_json::json!({
                "chat_id": conversation.chat_id(),
                "user_text": line,
                "reply_text": reply.text,
                "tokens": reply.tokens,
                "first_token_ms": reply.first_token_ms,
                "total_ms": reply.total_ms,
                "finished_turn": reply.finished_turn,
            });
            writeln!(out, "{json}")?;
        } else {
            writeln!(out)?;
        }
    }
    Ok(())
}

/// A new conversation, or the stored one `--resume` names.
async fn setup(runtime: &Runtime, args: &ChatArgs) -> Result<VoiceChatSetup> {
    Ok(VoiceChatSetup {
        asr: match &args.asr {
            Some(asr) => asr.clone(),
            None => runtime.default_transcribe_model().await?,
        },
        voice: args.voice.clone().unwrap_or_default(),
        language: args.language.clone(),
    })
}

/// A spoken conversation through the microphone and speaker, until Ctrl-C.
async fn live(
    runtime: &Runtime,
    chat: VoiceChat<'_>,
    name: &str,
    system: &str,
    args: &ChatArgs,
    settings: &ChatSettings,
) -> Result<()> {
    // The devices chosen in the app unless others are given.
    let microphone = Microphone::open(
        args.input_device
            .as_ref()
            .or(settings.input_device.as_ref())
            .map(String::as_str),
    )?;
    let playback = Playback::open(
        args.output_device
            .as_ref()
            .or(settings.output_device.as_ref())
            .map(String::as_str),
    )?;
    eprintln!(
        "{}: listening on {}, answering on {}. Speak; Ctrl-C ends.",
        name,
        microphone.name(),
        playback.name()
    );
    let stop = CancellationToken::new();
    let on_ctrl_c = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let options = LiveChatOptions {
        end_silence_ms: args.end_silence_ms,
        barge_in_ms: if args.no_barge_in {
            None
        } else {
            LiveChatOptions::default().barge_in_ms
        },
        max_turns: args.max_turns,
        talk: None,
    };
    let json = args.json;
    let show = move |event: LiveEvent<'_>| {
        let mut out = std::io::stdout().lock();
        let _ = if json {
            live_json(&event).map_or(Ok(()), |line| writeln!(out, "{line}"))
        } else {
            match event {
                LiveEvent::Turn(TurnEvent::Heard(text)) => writeln!(out, "> {text}"),
                LiveEvent::Turn(TurnEvent::ReplyText(delta)) => write!(out, "{delta}"),
                LiveEvent::BargeIn => write!(out, " [interrupted]"),
                LiveEvent::TurnDone(_) => writeln!(out),
                _ => Ok(()),
            }
        }
        .and_then(|()| out.flush());
    };
    runtime
        .live_chat(
            chat,
            runtime.open_conversation(args.resume, system).await?,
            microphone,
            &playback,
            &options,
            &stop,
            show,
        )
        .await?;
    Ok(())
}

/// A live chat's events as JSON lines (`event` names the kind), for scripts: the
/// reply's text deltas are left out, its sentences are there as they start to play.
fn live_json(event: &LiveEvent<'_>) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match event {
        LiveEvent::SpeechStarted => json!({"event": "speech_started"}),
        LiveEvent::SpeechEnded => json!({"event": "speech_ended"}),
        LiveEvent::BargeIn => json!({"event": "barge_in"}),
        LiveEvent::NothingHeard => json!({"event": "nothing_heard"}),
        LiveEvent::Turn(TurnEvent::Heard(text)) => json!({"event": "heard", "text": text}),
        LiveEvent::Turn(TurnEvent::ReplySpoken(text)) => {
            json!({"event": "reply_sentence", "text": text})
        }
        LiveEvent::Turn(TurnEvent::ReplyText(_)) | LiveEvent::Level(_) => return None,
        LiveEvent::TurnDone(turn) => {
            let mut line = turn_json(turn, None);
            line["event"] = json!("turn");
            line
        }
    })
}

fn turn_json(turn: &VoiceTurn, input: Option<&PathBuf>) -> serde_json::Value {
    let m = &turn.metrics;
    serde_json::json!({
        "chat_id": turn.chat_id,
        "input": input,
        "user_text": turn.user_text,
        "reply_text": turn.reply_text,
        "reply_tokens": turn.reply_tokens,
        "reply_frames": turn.reply_frames,
        "interrupted": m.interrupted,
        "asr_ms": m.asr_ms,
        "first_token_ms": m.first_token_ms,
        "first_sentence_ms": turn.first_sentence_ms,
        "first_audio_ms": m.first_audio_ms,
        "total_ms": m.total_ms,
        "reply_seconds": turn.reply_audio.len() as f64 / f64::from(turn.sample_rate),
        "reply_audio": turn.reply_audio_path,
        "user_audio": turn.user_audio_path,
    })
}

/// Each `--input` recording as a spoken turn of one conversation.
async fn spoken_turns(
    runtime: &Runtime,
    chat: VoiceChat<'_>,
    system: &str,
    args: &ChatArgs,
) -> Result<()> {
    if let VoiceChat::Cascade { setup, .. } = chat {
        runtime.prepare_voice_chat(setup).await?;
    }
    let mut conversation = runtime.open_conversation(args.resume, system).await?;
    for input in &args.input {
        let path = input.clone();
        let speech = tokio::task::spawn_blocking(move || izwi_runtime::load_for_asr(&path))
            .await?
            .map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))?;
        // The whole recording is there at once: the user has just stopped speaking.
        let ended = Instant::now();
        let show = |event: TurnEvent<'_>| {
            if args.json {
                return;
            }
            let mut out = std::io::stdout().lock();
            let _ = match event {
                TurnEvent::Heard(text) => writeln!(out, "> {text}"),
                TurnEvent::ReplyText(delta) => write!(out, "{delta}").and_then(|_| out.flush()),
                TurnEvent::ReplySpoken(_) => Ok(()),
            };
        };
        let (output, never) = (NoPlayback::default(), CancellationToken::new());
        let turn = match chat {
            VoiceChat::Cascade {
                setup,
                model,
                params,
            } => {
                runtime
                    .voice_turn(
                        setup,
                        model,
                        &mut conversation,
                        params,
                        speech,
                        ended,
                        &output,
                        &never,
                        show,
                    )
                    .await?
            }
            VoiceChat::SpeechToSpeech(speech_chat) => Some(
                runtime
                    .speech_turn(
                        speech_chat,
                        &mut conversation,
                        speech,
                        ended,
                        &output,
                        &never,
                        show,
                    )
                    .await?,
            ),
        };
        let Some(turn) = turn else {
            bail!("no words were heard in {}", input.display());
        };
        if let Some(output) = &args.output {
            let (audio, rate) = (&turn.reply_audio, turn.sample_rate);
            if args.force {
                izwi_audio::write_wav(output, audio, rate)
            } else {
                izwi_audio::write_new_wav(output, audio, rate)
            }
            .map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?;
        }
        let mut out = std::io::stdout().lock();
        if args.json {
            let mut json = turn_json(&turn, Some(input));
            json["output"] = serde_json::json!(args.output);
            writeln!(out, "{json}")?;
        } else {
            writeln!(out)?;
        }
    }
    Ok(())
}
