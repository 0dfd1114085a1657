//! A voice made by the speech request itself, in vLLM-Omni's fields for Qwen3-TTS
//! (what Izwi's remote backend sends for a voice of its own library): `task_type`
//! `Base` with `ref_audio` (the recording, base64, as a `data:` URL or bare) and
//! `ref_text` (its transcript) clones; `VoiceDesign` with `instructions` designs;
//! `CustomVoice` takes `voice` as a preset speaker when the library has no voice of that
//! name. The model is the request's `model` when it names an installed Qwen3-TTS model,
//! else (`tts-1` and the like) the one installed here of the variant the task needs.

use std::path::PathBuf;

use axum::body::Bytes;
use base64::Engine;
use izwi_runtime::{Family, Job, ModelStatus, Qwen3SpeakRequest, MAX_SPEAK_CHARS};

use crate::error::ApiError;
use crate::models::TTS_MODELS;
use crate::transcriptions::save_upload;
use crate::AppState;

/// The request's voice fields beside OpenAI's.
#[derive(Debug, Default)]
pub(crate) struct RequestVoice {
    pub task_type: Option<String>,
    pub ref_audio: Option<String>,
    pub ref_text: Option<String>,
}

/// A recording received with a request, removed when the request is over.
pub(crate) struct Upload(PathBuf);

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What a task asks of the model.
enum Task {
    Base,
    CustomVoice,
    VoiceDesign,
}

impl RequestVoice {
    /// Whether the request makes its own voice; when not, `voice` is the library's.
    pub(crate) fn makes_a_voice(&self, in_library: bool) -> bool {
        match self.task_type.as_deref() {
            Some("CustomVoice") => self.ref_audio.is_some() || !in_library,
            Some(_) => true,
            None => self.ref_audio.is_some(),
        }
    }

    fn task(&self) -> Result<Task, ApiError> {
        match self.task_type.as_deref() {
            None | Some("Base") if self.ref_audio.is_some() => Ok(Task::Base),
            Some("Base") => Err(ApiError::param(
                "ref_audio",
                "task_type Base clones a recording: give it in `ref_audio`",
            )),
            Some("CustomVoice") => Ok(Task::CustomVoice),
            Some("VoiceDesign") => Ok(Task::VoiceDesign),
            Some(other) => Err(ApiError::param(
                "task_type",
                format!("{other:?} is not a task: Base, CustomVoice or VoiceDesign"),
            )),
            None => Err(ApiError::param(
                "task_type",
                "say what makes the voice (`task_type`)",
            )),
        }
    }

    /// Starts the speak job: `input` said in the voice this request makes.
    pub(crate) async fn speak(
        self,
        state: &AppState,
        model: &str,
        voice: &str,
        input: String,
        instructions: Option<String>,
    ) -> Result<(Job, Option<Upload>), ApiError> {
        let task = self.task()?;
        if self.ref_audio.is_some() && !matches!(task, Task::Base) {
            return Err(ApiError::param(
                "ref_audio",
                "only task_type Base clones a recording",
            ));
        }
        let model_id = qwen3_model(state, model, &task)?;
        let mut request = Qwen3SpeakRequest {
            voice: model_id,
            text: input,
            ..Qwen3SpeakRequest::default()
        };
        let mut upload = None;
        match task {
            Task::Base => {
                let audio = self.ref_audio.unwrap_or_default();
                let path = save_upload(
                    &state.runtime.uploads_dir(),
                    "ref_audio.wav",
                    recording(&audio)?,
                )
                .await?;
                request.reference_audio = Some(path.clone());
                upload = Some(Upload(path));
                let transcript = self.ref_text.filter(|t| !t.trim().is_empty());
                if transcript
                    .as_ref()
                    .is_some_and(|t| t.chars().count() > MAX_SPEAK_CHARS)
                {
                    return Err(ApiError::param(
                        "ref_text",
                        format!("`ref_text` is over {MAX_SPEAK_CHARS} characters"),
                    ));
                }
                request.reference_text = transcript;
                if instructions.is_some() {
                    return Err(ApiError::param(
                        "instructions",
                        "a cloned voice takes no instructions",
                    ));
                }
            }
            Task::CustomVoice => {
                request.speaker = Some(voice.to_string());
                request.instructions = instructions;
            }
            Task::VoiceDesign => {
                request.instructions = Some(instructions.ok_or_else(|| {
                    ApiError::param(
                        "instructions",
                        "task_type VoiceDesign makes the voice `instructions` describe: give them",
                    )
                })?);
            }
        }
        let job = state.runtime.speak_qwen3(request).await?;
        Ok((job, upload))
    }
}

/// The recording in `ref_audio`: base64, bare or as a `data:` URL. A URL to fetch is
/// refused: the server opens nothing a client names.
fn recording(ref_audio: &str) -> Result<Bytes, ApiError> {
    let encoded = match ref_audio.strip_prefix("data:") {
        Some(url) => url
            .split_once(";base64,")
            .map(|(_, data)| data)
            .ok_or_else(|| {
                ApiError::param("ref_audio", "a data: URL of the recording must be base64")
            })?,
        None if ref_audio.contains("://") => {
            return Err(ApiError::param(
                "ref_audio",
                "this server fetches no URLs: send the recording itself, base64 (a data: URL)",
            ))
        }
        None => ref_audio,
    };
    // Tools wrap base64 in lines: the line breaks are not part of it.
    let encoded: String = encoded.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map(Bytes::from)
        .map_err(|e| ApiError::param("ref_audio", format!("the recording is not base64: {e}")))
}

/// The Qwen3-TTS model `model` names, or for OpenAI's names the one installed here of
/// the variant the task needs.
fn qwen3_model(state: &AppState, model: &str, task: &Task) -> Result<String, ApiError> {
    let installed = state.runtime.models().into_iter().any(|m| {
        m.id == model && m.family == Family::Qwen3Tts && m.status == ModelStatus::Installed
    });
    if installed {
        return Ok(model.to_string());
    }
    if !TTS_MODELS.contains(&model) {
        return Err(ApiError::model_not_found(
            model,
            "an installed Qwen3-TTS model",
        ));
    }
    let (kind, name) = match task {
        Task::Base => ("base", "Base"),
        Task::CustomVoice => ("custom_voice", "CustomVoice"),
        Task::VoiceDesign => ("voice_design", "VoiceDesign"),
    };
    match state.runtime.qwen3_models(kind).as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ApiError::param(
            "model",
            format!("no Qwen3-TTS {name} model is installed on this server to make the voice with"),
        )),
        several => Err(ApiError::param(
            "model",
            format!(
                "several Qwen3-TTS {name} models are installed: name one in `model` ({})",
                several.join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_comes_as_a_data_url_or_bare_base64_never_a_url() {
        assert_eq!(
            &recording("data:audio/wav;base64,UklGRg==").unwrap()[..],
            b"RIFF"
        );
        assert_eq!(&recording("UklGRg==").unwrap()[..], b"RIFF");
        assert_eq!(&recording("UklG\nRg==\n").unwrap()[..], b"RIFF");
        assert!(recording("https://example.com/me.wav").is_err());
        assert!(recording("data:audio/wav,RIFF").is_err());
        assert!(recording("not base64!").is_err());
    }
}
