//! The voice library: voices the user can speak with.

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use crate::error::StoreError;
use crate::store::{check_relative, now_ms, Store};

/// Where a voice came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum VoiceSource {
    /// Shipped with a model.
    Preset,
    /// Made from a recording of a speaker.
    Cloned,
    /// Made from a description.
    Designed,
}

impl VoiceSource {
    /// The text stored in the database, the same as the serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            VoiceSource::Preset => "preset",
            VoiceSource::Cloned => "cloned",
            VoiceSource::Designed => "designed",
        }
    }

    fn from_db(text: &str) -> Result<VoiceSource, StoreError> {
        match text {
            "preset" => Ok(VoiceSource::Preset),
            "cloned" => Ok(VoiceSource::Cloned),
            "designed" => Ok(VoiceSource::Designed),
            other => Err(StoreError::Corrupt(format!(
                "unknown voice source {other:?}"
            ))),
        }
    }
}

/// How a voice speaks, stored as JSON. Missing fields read as their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct VoiceSettings {
    /// Speaking rate, 1 = the model's normal pace.
    pub speed: f32,
    pub noise_scale: Option<f32>,
    pub noise_w: Option<f32>,
    /// Pitch shift in semitones.
    pub pitch: f32,
    /// Speaker id within a multi-speaker model.
    pub speaker: Option<i64>,
    /// A preset speaker of a Qwen3-TTS CustomVoice checkpoint, by name, or an LFM2-Audio
    /// model's built-in voice, by id (`us-male`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speaker_name: Option<String>,
    /// Qwen3-TTS: the description a designed voice is made from (VoiceDesign), or how a
    /// preset speaker speaks (CustomVoice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl Default for VoiceSettings {
    fn default() -> Self {
        VoiceSettings {
            speed: 1.0,
            noise_scale: None,
            noise_w: None,
            pitch: 0.0,
            speaker: None,
            speaker_name: None,
            instructions: None,
        }
    }
}

impl VoiceSettings {
    /// Refuses values JSON cannot hold (NaN and infinities would come back as `null`
    /// and make the row unreadable) and a speed that is not positive.
    fn check(&self) -> Result<(), StoreError> {
        let finite = [
            Some(self.speed),
            self.noise_scale,
            self.noise_w,
            Some(self.pitch),
        ]
        .into_iter()
        .flatten()
        .all(f32::is_finite);
        if !finite || self.speed <= 0.0 {
            return Err(StoreError::InvalidInput(format!(
                "voice settings must be finite numbers with a positive speed: {self:?}"
            )));
        }
        Ok(())
    }
}

/// A voice as stored. Times are unix milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VoiceRecord {
    pub id: i64,
    pub name: String,
    pub source: VoiceSource,
    pub model_id: String,
    /// Relative to the data dir.
    pub reference_audio: Option<String>,
    /// What is said in the reference audio.
    pub reference_text: Option<String>,
    pub settings: VoiceSettings,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What [`Store::create_voice`] needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewVoice {
    pub name: String,
    pub source: VoiceSource,
    pub model_id: String,
    /// Relative to the data dir; see [`Store::relative`].
    pub reference_audio: Option<String>,
    pub reference_text: Option<String>,
    pub settings: VoiceSettings,
}

/// A `voices` row as SQLite returns it, before its text and JSON are checked.
#[derive(FromRow)]
struct VoiceRow {
    id: i64,
    name: String,
    source: String,
    model_id: String,
    reference_audio: Option<String>,
    reference_text: Option<String>,
    settings: String,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<VoiceRow> for VoiceRecord {
    type Error = StoreError;

    fn try_from(row: VoiceRow) -> Result<VoiceRecord, StoreError> {
        Ok(VoiceRecord {
            id: row.id,
            name: row.name,
            source: VoiceSource::from_db(&row.source)?,
            model_id: row.model_id,
            reference_audio: row.reference_audio,
            reference_text: row.reference_text,
            settings: serde_json::from_str(&row.settings)?,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

impl Store {
    /// Adds a voice. The name is stored trimmed and must not be blank.
    pub async fn create_voice(&self, new: NewVoice) -> Result<VoiceRecord, StoreError> {
        let name = voice_name(&new.name)?;
        if let Some(reference_audio) = &new.reference_audio {
            check_relative(reference_audio)?;
        }
        new.settings.check()?;
        let now = now_ms();
        let row: VoiceRow = sqlx::query_as(
            "INSERT INTO voices (name, source, model_id, reference_audio, reference_text, \
             settings, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(name)
        .bind(new.source.as_str())
        .bind(new.model_id)
        .bind(new.reference_audio)
        .bind(new.reference_text)
        .bind(serde_json::to_string(&new.settings)?)
        .bind(now)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        row.try_into()
    }

    /// The voice with this id, if any.
    pub async fn voice(&self, id: i64) -> Result<Option<VoiceRecord>, StoreError> {
        let row: Option<VoiceRow> = sqlx::query_as("SELECT * FROM voices WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(VoiceRecord::try_from).transpose()
    }

    /// All voices, by name (ignoring ASCII case).
    pub async fn list_voices(&self) -> Result<Vec<VoiceRecord>, StoreError> {
        let rows: Vec<VoiceRow> =
            sqlx::query_as("SELECT * FROM voices ORDER BY name COLLATE NOCASE, id")
                .fetch_all(&self.pool)
                .await?;
        rows.into_iter().map(VoiceRecord::try_from).collect()
    }

    /// Renames a voice. The name is stored trimmed and must not be blank.
    pub async fn rename_voice(&self, id: i64, name: &str) -> Result<(), StoreError> {
        let name = voice_name(name)?;
        let changed = sqlx::query("UPDATE voices SET name = ?, updated_at = ? WHERE id = ?")
            .bind(name)
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        found(changed, id)
    }

    /// Replaces a voice's settings.
    pub async fn update_voice_settings(
        &self,
        id: i64,
        settings: &VoiceSettings,
    ) -> Result<(), StoreError> {
        settings.check()?;
        let changed = sqlx::query("UPDATE voices SET settings = ?, updated_at = ? WHERE id = ?")
            .bind(serde_json::to_string(settings)?)
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        found(changed, id)
    }

    /// Deletes a voice. Its reference audio, if any, stays on disk.
    pub async fn delete_voice(&self, id: i64) -> Result<(), StoreError> {
        let deleted = sqlx::query("DELETE FROM voices WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        found(deleted, id)
    }
}

fn voice_name(name: &str) -> Result<&str, StoreError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(StoreError::InvalidInput("a voice needs a name".into()));
    }
    Ok(name)
}

fn found(rows: u64, id: i64) -> Result<(), StoreError> {
    if rows == 0 {
        return Err(StoreError::NotFound { what: "voice", id });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_round_trip_through_db_text_and_serde() {
        for source in [
            VoiceSource::Preset,
            VoiceSource::Cloned,
            VoiceSource::Designed,
        ] {
            assert_eq!(VoiceSource::from_db(source.as_str()).unwrap(), source);
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(json, format!("\"{}\"", source.as_str()));
        }
        assert!(matches!(
            VoiceSource::from_db("stolen"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn settings_default_and_fill_missing_fields() {
        let settings: VoiceSettings = serde_json::from_str(r#"{"pitch":2.0}"#).unwrap();
        assert_eq!(settings.speed, 1.0);
        assert_eq!(settings.pitch, 2.0);
        assert_eq!(settings.speaker, None);
    }

    #[test]
    fn settings_refuse_nan_and_non_positive_speed() {
        assert!(VoiceSettings::default().check().is_ok());
        let nan = VoiceSettings {
            noise_w: Some(f32::NAN),
            ..VoiceSettings::default()
        };
        assert!(nan.check().is_err());
        let still = VoiceSettings {
            speed: 0.0,
            ..VoiceSettings::default()
        };
        assert!(still.check().is_err());
    }

    #[test]
    fn names_are_trimmed_and_not_blank() {
        assert_eq!(voice_name("  Ada \n").unwrap(), "Ada");
        assert!(matches!(
            voice_name(" \t"),
            Err(StoreError::InvalidInput(_))
        ));
    }
}
