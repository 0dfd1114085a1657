//! Qwen3-TTS voices in the library: cloned from a recording (Base checkpoints), designed
//! from a description (VoiceDesign), and the preset speakers of a CustomVoice
//! checkpoint, read from its config.json. A clone's recording is copied into the data
//! folder (the user's file is only read), with its transcript: the one given, else
//! Whisper's when a Whisper model is installed.

use std::path::{Path, PathBuf};

use izwi_core::models::whisper::TranscribeOptions;
use izwi_hub::{Family, ModelInfo, ModelStatus};
use izwi_store::{NewVoice, VoiceRecord, VoiceSettings, VoiceSource};
use serde::{Deserialize, Serialize};

use crate::qwen3_tts::MAX_REFERENCE_SECONDS;
use crate::runtime::Inner;
use crate::voices::{Qwen3Voice, VoiceInfo};
use crate::{Runtime, RuntimeError};

/// Where clones' recordings are kept, inside the data folder.
const VOICES_DIR: &str = "voices";

/// What [`Runtime::clone_voice`] needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CloneVoiceRequest {
    pub name: String,
    /// A Qwen3-TTS Base model: `local/NAME`, or a checkpoint folder.
    pub model_id: String,
    /// The recording to clone (any format Izwi decodes, at most
    /// [`MAX_REFERENCE_SECONDS`]); it is copied, never changed.
    pub audio: PathBuf,
    /// What is said in it; Whisper's transcript when None and a Whisper model is
    /// installed.
    #[serde(default)]
    pub text: Option<String>,
}

/// Where a clone's transcript came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptSource {
    /// The request gave it.
    Given,
    /// Whisper heard it in the recording.
    Whisper { model_id: String },
    /// There is none, for this reason.
    Missing { reason: String },
}

/// A cloned voice, and where its transcript came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ClonedVoice {
    pub voice: VoiceInfo,
    pub transcript: TranscriptSource,
}

/// What a Qwen3-TTS config.json says of its variant.
struct Variant {
    /// `base`, `custom_voice` or `voice_design`.
    kind: String,
    /// CustomVoice speakers, as the config names them, sorted.
    speakers: Vec<String>,
    /// It has a speaker encoder (`speaker_encoder_config`), which cloning needs.
    speaker_encoder: bool,
}

fn read_variant(dir: &Path) -> Result<Variant, RuntimeError> {
    let path = dir.join("config.json");
    let unreadable = |why: String| RuntimeError::Load {
        id: dir.display().to_string(),
        reason: format!("{}: {why}", path.display()),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
    let kind = config
        .get("tts_model_type")
        .and_then(|t| t.as_str())
        .unwrap_or("base")
        .to_string();
    let mut speakers: Vec<String> = config
        .get("talker_config")
        .and_then(|t| t.get("spk_id"))
        .and_then(|s| s.as_object())
        .map(|s| s.keys().cloned().collect())
        .unwrap_or_default();
    speakers.sort();
    Ok(Variant {
        kind,
        speakers,
        speaker_encoder: config.get("speaker_encoder_config").is_some(),
    })
}

/// Whether a transcript has a word in it (not only punctuation or space).
pub(crate) fn has_words(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

/// A preset's name as listed: the config's speaker name, capitalized (`vivian` →
/// `Vivian`, `uncle_fu` → `Uncle_fu`).
fn display_name(speaker: &str) -> String {
    let mut chars = speaker.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

impl Inner {
    /// Adds a preset row for each speaker of an installed CustomVoice model that has
    /// none; a name another voice has is followed by the model's.
    pub(crate) async fn add_preset_speakers(
        &self,
        model: &ModelInfo,
        rows: &mut Vec<VoiceRecord>,
    ) -> Result<(), RuntimeError> {
        if model.status != ModelStatus::Installed {
            return Ok(());
        }
        let Ok(dir) = self.hub.model_dir(&model.id) else {
            return Ok(());
        };
        let Ok(variant) = read_variant(&dir) else {
            return Ok(());
        };
        if variant.kind != "custom_voice" {
            return Ok(());
        }
        let speakers = variant
            .speakers
            .iter()
            .map(|speaker| (speaker.clone(), display_name(speaker)));
        self.add_speaker_presets(model, speakers, rows).await
    }

    /// What a library voice of a Qwen3-TTS model speaks with.
    pub(crate) fn qwen3_voice(&self, voice: &VoiceInfo) -> Qwen3Voice {
        Qwen3Voice {
            model_id: voice.model_id.clone(),
            reference_audio: voice
                .reference_audio
                .as_ref()
                .map(|a| self.store.data_dir().join(a)),
            reference_text: voice.reference_text.clone(),
            speaker: voice.settings.speaker_name.clone(),
            instructions: voice.settings.instructions.clone(),
        }
    }

    /// The installed Qwen3-TTS model `id` (its info and folder), of variant `kind`.
    pub(crate) fn qwen3_model(
        &self,
        id: &str,
        kind: &str,
    ) -> Result<(ModelInfo, PathBuf), RuntimeError> {
        let model = self.hub.info(id)?;
        if model.family != Family::Qwen3Tts {
            return Err(RuntimeError::WrongModel {
                id: id.to_string(),
                family: format!("{:?}", model.family).to_lowercase(),
                task: if kind == "base" {
                    "clone voices"
                } else {
                    "design voices"
                },
            });
        }
        let dir = self.hub.model_dir(&model.id)?;
        let variant = read_variant(&dir)?;
        if variant.kind != kind {
            let what = if kind == "base" {
                "only a Base checkpoint clones voices"
            } else {
                "only a VoiceDesign checkpoint designs voices"
            };
            return Err(RuntimeError::InvalidRequest(format!(
                "{} is a {} checkpoint: {what}",
                model.id, variant.kind
            )));
        }
        if kind == "base" && !variant.speaker_encoder {
            return Err(RuntimeError::InvalidRequest(format!(
                "{} has no speaker encoder (its config.json has no speaker_encoder_config): \
                 it cannot clone voices",
                model.id
            )));
        }
        Ok((model, dir))
    }

    async fn clone_voice(&self, request: CloneVoiceRequest) -> Result<ClonedVoice, RuntimeError> {
        let (model, _) = self.qwen3_model(&request.model_id, "base")?;
        self.check_voice_name(&request.name, None).await?;
        if !request.audio.is_file() {
            return Err(RuntimeError::InvalidRequest(format!(
                "no recording at {}",
                request.audio.display()
            )));
        }
        let given = request
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        // In-context cloning reads the transcript word for word.
        if given.is_some_and(|t| !has_words(t)) {
            return Err(RuntimeError::InvalidRequest(
                "the transcript has no words: give what is said in the recording".into(),
            ));
        }
        let audio = request.audio.clone();
        let samples = tokio::task::spawn_blocking(move || recording(&audio))
            .await
            .map_err(|e| RuntimeError::InvalidRequest(format!("reading stopped: {e}")))??;
        let copy = self.copy_recording(&request.audio)?;
        let relative = self.store.relative(&copy)?;
        let (text, transcript) = match given {
            Some(text) => (Some(text.to_string()), TranscriptSource::Given),
            None => match self.hear(samples).await {
                (Some(heard), _) if !has_words(&heard) => (
                    None,
                    TranscriptSource::Missing {
                        reason: "Whisper heard no words in the recording".into(),
                    },
                ),
                heard => heard,
            },
        };
        let created = self
            .store
            .create_voice(NewVoice {
                name: request.name.clone(),
                source: VoiceSource::Cloned,
                model_id: model.id,
                reference_audio: Some(relative),
                reference_text: text,
                settings: VoiceSettings::default(),
            })
            .await;
        let row = match created {
            Ok(row) => row,
            Err(e) => {
                let _ = std::fs::remove_file(&copy);
                return Err(e.into());
            }
        };
        Ok(ClonedVoice {
            voice: self.voice_info(row.id).await?,
            transcript,
        })
    }

    /// Copies a recording into the data folder under a new name; the original is only
    /// read.
    fn copy_recording(&self, from: &Path) -> Result<PathBuf, RuntimeError> {
        let dir = self.store.data_dir().join(VOICES_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| RuntimeError::Io {
            path: dir.clone(),
            source,
        })?;
        let extension = from
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()))
            .unwrap_or_else(|| "audio".into());
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        for n in 0.. {
            let to = dir.join(format!("clone-{stamp}-{n}.{extension}"));
            let mut input = std::fs::File::open(from).map_err(|source| RuntimeError::Io {
                path: from.to_path_buf(),
                source,
            })?;
            let mut output = match std::fs::File::create_new(&to) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(RuntimeError::Io { path: to, source }),
            };
            let copied = std::io::copy(&mut input, &mut output).and_then(|_| output.sync_all());
            if let Err(source) = copied {
                let _ = std::fs::remove_file(&to);
                return Err(RuntimeError::Io { path: to, source });
            }
            return Ok(to);
        }
        unreachable!("some name is free")
    }

    /// Whisper's transcript of a recording (16 kHz mono), with the installed model the
    /// library would transcribe with; or why there is none.
    pub(crate) async fn hear(&self, samples: Vec<f32>) -> (Option<String>, TranscriptSource) {
        let Some(model_id) = self.installed_whisper().await else {
            return (
                None,
                TranscriptSource::Missing {
                    reason: "no Whisper model is installed to transcribe the recording".into(),
                },
            );
        };
        let options = TranscribeOptions::default();
        match crate::hear_back::transcribe_samples(self, &model_id, samples, &options).await {
            Ok(text) if text.chars().any(char::is_alphanumeric) => {
                (Some(text), TranscriptSource::Whisper { model_id })
            }
            Ok(_) => (
                None,
                TranscriptSource::Missing {
                    reason: format!("{model_id} heard no words in the recording"),
                },
            ),
            Err(e) => (
                None,
                TranscriptSource::Missing {
                    reason: format!("{model_id} could not transcribe the recording: {e}"),
                },
            ),
        }
    }

    async fn design_voice(
        &self,
        name: &str,
        model_id: &str,
        description: &str,
    ) -> Result<VoiceInfo, RuntimeError> {
        let (model, _) = self.qwen3_model(model_id, "voice_design")?;
        self.check_voice_name(name, None).await?;
        let description = description.trim();
        if !description.chars().any(char::is_alphanumeric) {
            return Err(RuntimeError::InvalidRequest(
                "a designed voice needs a description of the voice".into(),
            ));
        }
        let row = self
            .store
            .create_voice(NewVoice {
                name: name.to_string(),
                source: VoiceSource::Designed,
                model_id: model.id,
                reference_audio: None,
                reference_text: None,
                settings: VoiceSettings {
                    instructions: Some(description.to_string()),
                    ..VoiceSettings::default()
                },
            })
            .await?;
        self.voice_info(row.id).await
    }
}

/// A recording as 16 kHz mono samples (what Whisper hears), refused when it cannot be
/// read, is silent of samples, or is longer than a clone takes.
pub(crate) fn recording(path: &Path) -> Result<Vec<f32>, RuntimeError> {
    let audio_error = |source| RuntimeError::Audio {
        path: path.to_path_buf(),
        source,
    };
    let audio = izwi_audio::decode_file(path).map_err(audio_error)?;
    let mono = audio.to_mono();
    let seconds = mono.len() as f64 / f64::from(audio.sample_rate.max(1));
    if mono.is_empty() {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} holds no audio",
            path.display()
        )));
    }
    if seconds > MAX_REFERENCE_SECONDS {
        return Err(RuntimeError::InvalidRequest(format!(
            "{} is {seconds:.0} s long; a clone takes at most {MAX_REFERENCE_SECONDS:.0} s",
            path.display()
        )));
    }
    izwi_audio::resample(&mono, audio.sample_rate, izwi_audio::ASR_SAMPLE_RATE).map_err(audio_error)
}

impl Runtime {
    /// The installed Qwen3-TTS models of a variant (`base`, `custom_voice`,
    /// `voice_design`, as their config.json says), by id.
    pub fn qwen3_models(&self, kind: &str) -> Vec<String> {
        let hub = &self.inner.hub;
        hub.list()
            .into_iter()
            .filter(|m| m.family == Family::Qwen3Tts && m.status == ModelStatus::Installed)
            .filter(|m| {
                hub.model_dir(&m.id)
                    .ok()
                    .and_then(|dir| read_variant(&dir).ok())
                    .is_some_and(|v| v.kind == kind)
            })
            .map(|m| m.id)
            .collect()
    }

    /// Clones a voice with a Qwen3-TTS Base model from a recording (copied into the
    /// data folder) and its transcript (the one given, else Whisper's if a Whisper
    /// model is installed, else none: the result says which).
    pub async fn clone_voice(
        &self,
        request: CloneVoiceRequest,
    ) -> Result<ClonedVoice, RuntimeError> {
        self.inner.clone_voice(request).await
    }

    /// Designs a voice with a Qwen3-TTS VoiceDesign model from a description.
    pub async fn design_voice(
        &self,
        name: &str,
        model_id: &str,
        description: &str,
    ) -> Result<VoiceInfo, RuntimeError> {
        self.inner.design_voice(name, model_id, description).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_named_from_the_config() {
        assert_eq!(display_name("vivian"), "Vivian");
        assert_eq!(display_name("uncle_fu"), "Uncle_fu");
        assert_eq!(display_name(""), "");
    }

    #[test]
    fn the_variant_and_speakers_come_from_config_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"tts_model_type": "custom_voice", "talker_config": {"spk_id": {"ryan": 3, "aiden": 4}}}"#,
        )
        .unwrap();
        let variant = read_variant(dir.path()).unwrap();
        assert_eq!(variant.kind, "custom_voice");
        assert_eq!(variant.speakers, ["aiden", "ryan"]);
        std::fs::write(dir.path().join("config.json"), "{").unwrap();
        assert!(read_variant(dir.path()).is_err());
    }
}
