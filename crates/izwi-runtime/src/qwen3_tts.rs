//! Speech from a Qwen3-TTS checkpoint folder named as the voice (`izwi speak --voice
//! DIR`): the folder is loaded for the job, the text spoken on its engine, and the
//! audio appended to the WAV as the codec decodes it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use izwi_audio::WavFile;
use izwi_core::engine::EngineCoreConfig;
use izwi_core::models::qwen3_tts::{Qwen3Tts, SpeakOptions};
use izwi_store::{Job, JobKind, JobMetrics, NewJob};
use serde::Serialize;

use crate::runtime::Inner;
use crate::speak::{check_output_file, check_text, excerpt, metrics};
use crate::{Event, Runtime, RuntimeError, SpeakRequest};

/// Whether `voice` is the folder of a Qwen3-TTS checkpoint (its config.json says so).
pub(crate) fn checkpoint(voice: &str) -> Option<PathBuf> {
    let dir = Path::new(voice.trim());
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    (config.get("model_type")?.as_str()? == "qwen3_tts").then(|| dir.to_path_buf())
}

/// Text files and batches go sentence by sentence through a Piper voice; a Qwen3-TTS
/// checkpoint speaks one text so far.
pub(crate) fn refuse_beyond_text(voice: &str) -> Result<(), RuntimeError> {
    match checkpoint(voice) {
        Some(dir) => Err(RuntimeError::InvalidRequest(format!(
            "{} is a Qwen3-TTS checkpoint; it can only speak a --text so far, not files or \
             batches",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// What the job's row keeps of the request: not the text.
#[derive(Serialize)]
struct Params<'a> {
    voice: &'a str,
    chars: usize,
    output: Option<&'a Path>,
}

impl Runtime {
    /// Queues a speak job in the Qwen3-TTS checkpoint at `dir`.
    pub(crate) async fn speak_qwen3(
        &self,
        dir: PathBuf,
        request: &SpeakRequest,
    ) -> Result<Job, RuntimeError> {
        check_text(&request.text)?;
        if request.speed.is_some() {
            return Err(RuntimeError::InvalidRequest(
                "a Qwen3-TTS voice has no speed setting".into(),
            ));
        }
        if let Some(output) = &request.output {
            check_output_file(output)?;
        }
        let params = Params {
            voice: &request.voice,
            chars: request.text.chars().count(),
            output: request.output.as_deref(),
        };
        let job = self
            .inner
            .store
            .create_job(NewJob {
                kind: JobKind::Speak,
                model_id: Some(dir.display().to_string()),
                input: excerpt(&request.text),
                params: serde_json::to_value(&params)
                    .map_err(|e| RuntimeError::InvalidRequest(e.to_string()))?,
            })
            .await?;
        self.inner
            .events
            .emit(Event::JobQueued { job: job.clone() });
        let inner = self.inner.clone();
        let job_id = job.id;
        let (text, output) = (request.text.clone(), request.output.clone());
        self.inner.jobs.spawn(
            self.inner.store.clone(),
            self.inner.events.clone(),
            &job,
            move || async move {
                let output = match output {
                    Some(path) => path,
                    None => inner.store.audio_dir().join(format!("speech-{job_id}.wav")),
                };
                let metrics = run(&inner, &dir, &text, &output).await?;
                Ok((Some(output.display().to_string()), metrics))
            },
        );
        Ok(job)
    }
}

async fn run(
    inner: &Arc<Inner>,
    dir: &Path,
    text: &str,
    output: &Path,
) -> Result<JobMetrics, RuntimeError> {
    let started = Instant::now();
    let (dir_owned, device) = (dir.to_path_buf(), inner.models.device().clone());
    let tts = tokio::task::spawn_blocking(move || {
        Qwen3Tts::from_dir(&dir_owned, &device, EngineCoreConfig::default())
    })
    .await
    .map_err(|e| RuntimeError::Speech(format!("loading stopped: {e}")))?
    .map_err(|e| RuntimeError::Speech(e.to_string()))?;
    let audio_error = |source| RuntimeError::Audio {
        path: output.to_path_buf(),
        source,
    };
    let mut wav = WavFile::create(output, tts.sample_rate()).map_err(audio_error)?;
    // Pieces are at most a second of audio: written as they come.
    let mut failed = None;
    tts.speak(text, &SpeakOptions::default(), |piece| {
        if failed.is_none() {
            failed = wav.write(&piece).err();
        }
    })
    .await
    .map_err(|e| RuntimeError::Speech(e.to_string()))?;
    if let Some(source) = failed {
        return Err(audio_error(source));
    }
    let seconds = wav.samples() as f64 / f64::from(tts.sample_rate());
    wav.finish().map_err(audio_error)?;
    Ok(metrics(started, seconds))
}
