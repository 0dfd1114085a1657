//! The voice library: voices in the store, each a model plus how it speaks (speed,
//! noise, pitch, speaker) under a name the user chose. Every installed Piper voice
//! model has at least one: a preset row is made for it the first time the library is
//! listed after it was installed, and the last row of an installed model cannot be
//! deleted (removing the model removes its voices). Qwen3-TTS voices are cloned from a
//! recording, designed from a description (qwen3_voices.rs), or a CustomVoice
//! checkpoint's preset speakers, each made a preset row the same way, as are the four
//! built-in voices of an LFM2-Audio model that can speak (lfm2_audio_voices.rs).

use std::path::{Path, PathBuf};

use izwi_core::models::lfm2_audio::Lfm2Voice;
use izwi_hub::{Family, ModelInfo, ModelStatus};
use izwi_store::{NewVoice, VoiceRecord, VoiceSettings, VoiceSource};
use serde::{Deserialize, Serialize};

use crate::runtime::Inner;
use crate::{Runtime, RuntimeError};

/// A voice as the shells list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VoiceInfo {
    pub id: i64,
    pub name: String,
    pub source: VoiceSource,
    pub model_id: String,
    /// Of the model, e.g. `en_US`.
    pub language: Option<String>,
    /// The model's files are on disk.
    pub installed: bool,
    pub settings: VoiceSettings,
    /// A cloned voice's recording, relative to the data folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_audio: Option<String>,
    /// What is said in that recording, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_text: Option<String>,
}

/// What a request's `voice` names, resolved.
pub(crate) enum VoiceChoice {
    /// A model of the hub (catalog or import), with settings.
    Model {
        model_id: String,
        settings: VoiceSettings,
    },
    /// A Piper `.onnx` file (or a folder with one) given by path.
    File {
        path: PathBuf,
        settings: VoiceSettings,
    },
    /// A Qwen3-TTS model (an import or a checkpoint folder), with what the voice adds.
    Qwen3(Qwen3Voice),
    /// An LFM2-Audio model (an import or a checkpoint folder), in one of its voices.
    Lfm2(Lfm2Speech),
}

/// An LFM2-Audio voice: its model, and which of the model's built-in voices.
#[derive(Debug, Clone)]
pub(crate) struct Lfm2Speech {
    /// The hub's id: `local/NAME`, or a checkpoint folder's path.
    pub model_id: String,
    /// None when only the model was named.
    pub voice: Option<Lfm2Voice>,
}

/// A Qwen3-TTS voice: its model, and what it adds to each request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Qwen3Voice {
    /// The hub's id: `local/NAME`, or a checkpoint folder's path.
    pub model_id: String,
    /// A cloned voice's recording (absolute).
    pub reference_audio: Option<PathBuf>,
    pub reference_text: Option<String>,
    /// A CustomVoice preset speaker.
    pub speaker: Option<String>,
    /// A designed voice's description, or how a preset speaks.
    pub instructions: Option<String>,
}

impl VoiceChoice {
    /// Piper's settings (a Qwen3-TTS or LFM2-Audio voice has none of them: the
    /// defaults).
    pub fn settings(&self) -> VoiceSettings {
        match self {
            VoiceChoice::Model { settings, .. } | VoiceChoice::File { settings, .. } => {
                settings.clone()
            }
            VoiceChoice::Qwen3(_) | VoiceChoice::Lfm2(_) => VoiceSettings::default(),
        }
    }

    /// The model's id (or the file's path), as a job's row keeps it.
    pub fn model_id(&self) -> String {
        match self {
            VoiceChoice::Model { model_id, .. } => model_id.clone(),
            VoiceChoice::File { path, .. } => path.display().to_string(),
            VoiceChoice::Qwen3(voice) => voice.model_id.clone(),
            VoiceChoice::Lfm2(speech) => speech.model_id.clone(),
        }
    }
}

impl Inner {
    /// Adds a preset row for every installed Piper model that has none (and for each
    /// preset speaker or built-in voice of a Qwen3-TTS or LFM2-Audio model), then lists
    /// the library, oldest first.
    /// A preset row for each `(speaker id, name)` of `model` that has none; a name
    /// another voice has is followed by the model's. `rows` are the library's voices,
    /// and gain the rows made, so later models' names are checked against them too.
    pub(crate) async fn add_speaker_presets(
        &self,
        model: &ModelInfo,
        speakers: impl Iterator<Item = (String, String)>,
        rows: &mut Vec<VoiceRecord>,
    ) -> Result<(), RuntimeError> {
        for (speaker, mut name) in speakers {
            let has_row = rows.iter().any(|r| {
                r.model_id == model.id && r.settings.speaker_name.as_deref() == Some(&speaker)
            });
            if has_row {
                continue;
            }
            if rows.iter().any(|r| r.name.eq_ignore_ascii_case(&name)) {
                name = format!("{name} ({})", model.name);
            }
            let row = self
                .store
                .create_voice(NewVoice {
                    name,
                    source: VoiceSource::Preset,
                    model_id: model.id.clone(),
                    reference_audio: None,
                    reference_text: None,
                    settings: VoiceSettings {
                        speaker_name: Some(speaker),
                        ..VoiceSettings::default()
                    },
                })
                .await?;
            rows.push(row);
        }
        Ok(())
    }

    pub(crate) async fn list_voices(&self) -> Result<Vec<VoiceInfo>, RuntimeError> {
        let models: Vec<_> = self
            .hub
            .list()
            .into_iter()
            .filter(|m| {
                matches!(
                    m.family,
                    Family::Piper | Family::Qwen3Tts | Family::Lfm2Audio
                )
            })
            .collect();
        let mut rows = self.store.list_voices().await?;
        for model in &models {
            if model.family == Family::Qwen3Tts {
                self.add_preset_speakers(model, &mut rows).await?;
                continue;
            }
            if model.family == Family::Lfm2Audio {
                self.add_lfm2_voices(model, &mut rows).await?;
                continue;
            }
            let has_row = rows.iter().any(|r| r.model_id == model.id);
            if model.status == ModelStatus::Installed && !has_row {
                self.store
                    .create_voice(NewVoice {
                        name: model.name.clone(),
                        source: VoiceSource::Preset,
                        model_id: model.id.clone(),
                        reference_audio: None,
                        reference_text: None,
                        settings: VoiceSettings::default(),
                    })
                    .await?;
            }
        }
        let rows = self.store.list_voices().await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let model = models.iter().find(|m| m.id == row.model_id);
                VoiceInfo {
                    language: model.and_then(|m| m.languages.first().cloned()),
                    installed: model.is_some_and(|m| m.status == ModelStatus::Installed),
                    id: row.id,
                    name: row.name,
                    source: row.source,
                    model_id: row.model_id,
                    settings: row.settings,
                    reference_audio: row.reference_audio,
                    reference_text: row.reference_text,
                }
            })
            .collect())
    }

    /// Refuses a name the user gives a voice that `--voice NAME` could not pick out: a
    /// number (taken for a voice's id) or another voice's name, case aside (`voice`:
    /// the voice being renamed, which may keep its own).
    pub(crate) async fn check_voice_name(
        &self,
        name: &str,
        voice: Option<i64>,
    ) -> Result<(), RuntimeError> {
        let name = name.trim();
        if name.parse::<i64>().is_ok() {
            return Err(RuntimeError::InvalidRequest(format!(
                "a voice cannot be named {name}: a number picks a voice by its id"
            )));
        }
        let lower = name.to_lowercase();
        let taken =
            self.list_voices().await?.into_iter().find(|v| {
                Some(v.id) != voice && !name.is_empty() && v.name.to_lowercase() == lower
            });
        if let Some(other) = taken {
            return Err(RuntimeError::InvalidRequest(format!(
                "there is a voice named {:?} already (id {}); choose another name",
                other.name, other.id
            )));
        }
        Ok(())
    }

    pub(crate) async fn voice_info(&self, id: i64) -> Result<VoiceInfo, RuntimeError> {
        self.list_voices()
            .await?
            .into_iter()
            .find(|v| v.id == id)
            .ok_or(RuntimeError::NoSuchVoice(id))
    }

    pub(crate) async fn add_voice(
        &self,
        model_id: &str,
        name: &str,
        settings: VoiceSettings,
    ) -> Result<VoiceInfo, RuntimeError> {
        let model = self.hub.info(model_id)?;
        if model.family != Family::Piper {
            return Err(RuntimeError::WrongModel {
                id: model_id.to_string(),
                family: format!("{:?}", model.family).to_lowercase(),
                task: "speak",
            });
        }
        // A voice on a model that is not there would fail only when it speaks.
        if model.status != ModelStatus::Installed {
            return Err(izwi_hub::HubError::NotInstalled(model.id).into());
        }
        check_settings(&settings)?;
        // The model's own voice is made first (by the listing the name check reads),
        // so a variant sits beside it rather than taking its place.
        self.check_voice_name(name, None).await?;
        let row = self
            .store
            .create_voice(NewVoice {
                name: name.to_string(),
                source: VoiceSource::Preset,
                model_id: model_id.to_string(),
                reference_audio: None,
                reference_text: None,
                settings,
            })
            .await?;
        self.voice_info(row.id).await
    }

    pub(crate) async fn delete_voice(&self, id: i64) -> Result<(), RuntimeError> {
        let row = self.voice_row(id).await?;
        let model = self
            .hub
            .info(&row.model_id)
            .ok()
            .filter(|m| m.status == ModelStatus::Installed);
        let rows = self.store.list_voices().await?;
        let siblings = rows.iter().filter(|r| r.model_id == row.model_id).count();
        match model.map(|m| m.family) {
            Some(Family::Qwen3Tts | Family::Lfm2Audio) if row.source == VoiceSource::Preset => {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{:?} is a preset speaker of model {}; remove the model to remove it",
                    row.name, row.model_id
                )));
            }
            Some(Family::Piper) if siblings == 1 => {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{:?} is the only voice of model {}; remove the model to remove it",
                    row.name, row.model_id
                )));
            }
            _ => {}
        }
        self.store.delete_voice(id).await?;
        // A clone's copy of its recording goes with the last voice made from it.
        if let Some(audio) = &row.reference_audio {
            let shared = rows
                .iter()
                .any(|r| r.id != row.id && r.reference_audio.as_ref() == Some(audio));
            if !shared {
                let path = self.store.data_dir().join(audio);
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove a voice's recording");
                }
            }
        }
        Ok(())
    }

    pub(crate) async fn voice_row(&self, id: i64) -> Result<VoiceRecord, RuntimeError> {
        self.store
            .voice(id)
            .await?
            .ok_or(RuntimeError::NoSuchVoice(id))
    }

    /// Resolves what a user typed for a voice: a library id, a library name
    /// (case-insensitive), a model id, or the path of a Piper `.onnx` (or its folder).
    pub(crate) async fn choose_voice(&self, spec: &str) -> Result<VoiceChoice, RuntimeError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(RuntimeError::InvalidRequest(
                "no voice given: name one from the voice library, a voice model, or a .onnx file"
                    .into(),
            ));
        }
        let library = self.list_voices().await?;
        let row = match spec.parse::<i64>() {
            Ok(id) => library.iter().find(|v| v.id == id),
            Err(_) => library
                .iter()
                .find(|v| v.name.eq_ignore_ascii_case(spec))
                .or_else(|| library.iter().find(|v| v.model_id == spec)),
        };
        if let Some(voice) = row {
            let family = self.hub.info(&voice.model_id).map(|m| m.family);
            if family.as_ref().is_ok_and(|f| *f == Family::Qwen3Tts) {
                return Ok(VoiceChoice::Qwen3(self.qwen3_voice(voice)));
            }
            if family.is_ok_and(|f| f == Family::Lfm2Audio) {
                return Ok(VoiceChoice::Lfm2(Lfm2Speech {
                    model_id: voice.model_id.clone(),
                    voice: voice
                        .settings
                        .speaker_name
                        .as_deref()
                        .and_then(Lfm2Voice::from_id),
                }));
            }
            return Ok(VoiceChoice::Model {
                model_id: voice.model_id.clone(),
                settings: voice.settings.clone(),
            });
        }
        if let Ok(model) = self.hub.info(spec) {
            if model.family == Family::Qwen3Tts {
                return Ok(VoiceChoice::Qwen3(Qwen3Voice {
                    model_id: model.id,
                    ..Qwen3Voice::default()
                }));
            }
            if model.family == Family::Lfm2Audio {
                return Ok(VoiceChoice::Lfm2(Lfm2Speech {
                    model_id: model.id,
                    voice: None,
                }));
            }
            return Ok(VoiceChoice::Model {
                model_id: model.id,
                settings: VoiceSettings::default(),
            });
        }
        let path = Path::new(spec);
        if crate::qwen3_tts::checkpoint(spec).is_some() {
            // A checkpoint folder the hub cannot use: it says why.
            self.hub.info(spec)?;
        }
        if path.exists() {
            return Ok(VoiceChoice::File {
                path: path.to_path_buf(),
                settings: VoiceSettings::default(),
            });
        }
        Err(no_voice(spec))
    }
}

fn no_voice(spec: &str) -> RuntimeError {
    RuntimeError::InvalidRequest(format!(
        "no voice {spec:?}: `izwi voices` lists the library; a voice model's id or a Piper \
         .onnx file also works"
    ))
}

/// The ranges a voice's settings must be in: speed (the model is trained near 1), pitch
/// in semitones (within an octave), Piper's noise scales. Shells show them as they are.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct VoiceLimits {
    pub speed: [f32; 2],
    pub pitch: [f32; 2],
    pub noise: [f32; 2],
}

pub const VOICE_LIMITS: VoiceLimits = VoiceLimits {
    speed: [0.25, 4.0],
    pitch: [-12.0, 12.0],
    noise: [0.0, 2.0],
};

/// Refuses settings outside [`VOICE_LIMITS`].
pub(crate) fn check_settings(settings: &VoiceSettings) -> Result<(), RuntimeError> {
    let within = |[lo, hi]: [f32; 2], v: f32| (lo..=hi).contains(&v);
    let l = VOICE_LIMITS;
    if !within(l.speed, settings.speed) {
        return Err(RuntimeError::InvalidRequest(format!(
            "speed must be {} to {}, not {}",
            l.speed[0], l.speed[1], settings.speed
        )));
    }
    if !within(l.pitch, settings.pitch) {
        return Err(RuntimeError::InvalidRequest(format!(
            "pitch must be {} to {} semitones, not {}",
            l.pitch[0], l.pitch[1], settings.pitch
        )));
    }
    for (name, value) in [
        ("noise scale", settings.noise_scale),
        ("noise w", settings.noise_w),
    ] {
        if let Some(v) = value {
            if !within(l.noise, v) {
                return Err(RuntimeError::InvalidRequest(format!(
                    "{name} must be {} to {}, not {v}",
                    l.noise[0], l.noise[1]
                )));
            }
        }
    }
    Ok(())
}

impl Runtime {
    /// The voice library; every installed Piper voice model has at least one voice.
    pub async fn list_voices(&self) -> Result<Vec<VoiceInfo>, RuntimeError> {
        self.inner.list_voices().await
    }

    /// Adds a voice on a Piper model (installed or not yet) under `name`.
    pub async fn add_voice(
        &self,
        model_id: &str,
        name: &str,
        settings: VoiceSettings,
    ) -> Result<VoiceInfo, RuntimeError> {
        self.inner.add_voice(model_id, name, settings).await
    }

    pub async fn rename_voice(&self, id: i64, name: &str) -> Result<(), RuntimeError> {
        self.inner.voice_row(id).await?;
        self.inner.check_voice_name(name, Some(id)).await?;
        Ok(self.inner.store.rename_voice(id, name).await?)
    }

    /// Sets a voice's Piper settings (speed, noise, pitch, speaker id). What makes a
    /// Qwen3-TTS voice itself (its preset speaker, its description) is kept: the
    /// settings form does not show it, so it never sends it.
    pub async fn update_voice_settings(
        &self,
        id: i64,
        mut settings: VoiceSettings,
    ) -> Result<(), RuntimeError> {
        check_settings(&settings)?;
        let row = self.inner.voice_row(id).await?;
        settings.speaker_name = row.settings.speaker_name;
        settings.instructions = row.settings.instructions;
        Ok(self
            .inner
            .store
            .update_voice_settings(id, &settings)
            .await?)
    }

    /// Deletes a voice; the last voice of an installed model stays (remove the model).
    pub async fn delete_voice(&self, id: i64) -> Result<(), RuntimeError> {
        self.inner.delete_voice(id).await
    }
}
