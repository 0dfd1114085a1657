//! Speech in an LFM2-Audio voice: one of the model's four built-in voices, each TTS
//! turn one sentence (the model reads its whole text before its first frame, so a long
//! text as one turn would run into the step limit). The model is loaded once and kept
//! (models.rs): every job speaking with it shares its engine, where their turns are
//! batched. Frames are sampled as liquid-audio's TTS example samples them
//! (`AudioSampling::speech`), seeded when the request says.

use std::sync::Arc;

use izwi_core::models::lfm2_audio::{AudioSampling, Lfm2Audio, Lfm2Voice};

use crate::lfm2_audio_voices::{can_speak, voice_ids};
use crate::runtime::Inner;
use crate::voices::Lfm2Speech;
use crate::RuntimeError;

/// The most steps (text tokens and frames; a frame is 80 ms of audio) one sentence's
/// turn may take: about 80 s of speech, far beyond a sentence.
pub const LFM2_SPEAK_MAX_STEPS: usize = 1024;

/// An LFM2-Audio voice ready to speak: its loaded model (shared with every other job
/// on it) and which voice.
pub(crate) struct Lfm2Speaker {
    model: Arc<Lfm2Audio>,
    voice: Lfm2Voice,
}

/// The built-in voice `speech` names, and that its model can speak; checked before a
/// job is made.
pub(crate) fn check_lfm2_speech(
    inner: &Inner,
    speech: &Lfm2Speech,
) -> Result<Lfm2Voice, RuntimeError> {
    let Some(voice) = speech.voice else {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} is an LFM2-Audio model: name one of its voices ({}; `--speaker` on the \
             command line), or a voice of the library (`izwi voices`)",
            speech.model_id,
            voice_ids()
        )));
    };
    let dir = inner.hub.model_dir(&speech.model_id)?;
    if !can_speak(&dir) {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} cannot speak: its folder has neither the Mimi codec's file nor an \
             audio_detokenizer/ (it only transcribes)",
            speech.model_id
        )));
    }
    Ok(voice)
}

/// The built-in voice with id `id`, or why there is none.
pub(crate) fn lfm2_voice(id: &str) -> Result<Lfm2Voice, RuntimeError> {
    Lfm2Voice::from_id(id.trim()).ok_or_else(|| {
        RuntimeError::InvalidRequest(format!(
            "LFM2-Audio has no voice {id:?}: its voices are {}",
            voice_ids()
        ))
    })
}

impl Lfm2Speaker {
    /// Loads (or finds loaded) the voice's model.
    pub(crate) async fn load(inner: &Inner, speech: &Lfm2Speech) -> Result<Self, RuntimeError> {
        let voice = check_lfm2_speech(inner, speech)?;
        let model = inner.models.lfm2_audio(&speech.model_id).await?;
        Ok(Lfm2Speaker { model, voice })
    }

    pub(crate) fn sample_rate(&self) -> u32 {
        self.model.output_sample_rate()
    }

    /// Says `text` (one sentence) sampled with `seed` (None: unseeded), handing each
    /// piece of audio to `on_audio` as it is decoded. A turn the step limit ended
    /// before its audio did is an error that names the limit. Dropping the future
    /// aborts the turn on the engine (a cancelled job).
    pub(crate) async fn speak(
        &self,
        text: &str,
        seed: Option<u64>,
        on_audio: impl FnMut(Vec<f32>) + Send,
    ) -> Result<(), RuntimeError> {
        let sampling = AudioSampling {
            seed,
            ..AudioSampling::speech()
        };
        let turn = self
            .model
            .speak(text, self.voice, &sampling, LFM2_SPEAK_MAX_STEPS, on_audio)
            .await
            .map_err(|e| RuntimeError::Speech(e.to_string()))?;
        if !turn.ended {
            return Err(RuntimeError::Speech(format!(
                "LFM2-Audio reached its limit of {LFM2_SPEAK_MAX_STEPS} steps in one sentence \
                 ({} frames of audio) before its speech ended: {:?}",
                turn.frames,
                crate::speak::excerpt(text)
            )));
        }
        Ok(())
    }
}
