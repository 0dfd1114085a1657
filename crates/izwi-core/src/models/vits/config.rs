//! A Piper voice's `.onnx.json`: the phoneme alphabet, speakers, sample rate and default
//! synthesis settings. The network's shape is not in it; the modules read that from
//! the weights. Defaults for absent fields follow piper-tts 1.8's `PiperConfig`.

use std::collections::HashMap;

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VoiceConfig {
    pub audio: AudioConfig,
    /// The espeak-ng voice that phonemizes text for this voice (`en-us`, ...).
    pub espeak: Option<EspeakConfig>,
    #[serde(default)]
    pub inference: Scales,
    /// `espeak` (IPA from espeak-ng) or `text` (the characters themselves).
    #[serde(default = "espeak")]
    pub phoneme_type: String,
    /// Phoneme → ids; `_` is padding, `^` the start and `$` the end of a sentence.
    pub phoneme_id_map: HashMap<String, Vec<i64>>,
    pub num_symbols: usize,
    pub num_speakers: usize,
    #[serde(default)]
    pub speaker_id_map: HashMap<String, i64>,
    #[serde(default)]
    pub default_speaker_id: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AudioConfig {
    pub sample_rate: u32,
    pub quality: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EspeakConfig {
    pub voice: String,
}

/// The randomness and pace of synthesis (the `scales` input of piper's ONNX graph).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Scales {
    /// Spread of the noise drawn around the predicted acoustics (0 = none).
    #[serde(default = "noise_scale")]
    pub noise_scale: f32,
    /// Duration multiplier: above 1 speaks slower.
    #[serde(default = "length_scale")]
    pub length_scale: f32,
    /// Spread of the noise in the predicted phoneme durations (0 = none).
    #[serde(default = "noise_w")]
    pub noise_w: f32,
}

impl Default for Scales {
    fn default() -> Self {
        Self {
            noise_scale: noise_scale(),
            length_scale: length_scale(),
            noise_w: noise_w(),
        }
    }
}

impl Scales {
    /// No noise at all: the same ids always give the same audio, whatever the seed.
    pub fn deterministic(length_scale: f32) -> Self {
        Self {
            noise_scale: 0.0,
            length_scale,
            noise_w: 0.0,
        }
    }
}

fn espeak() -> String {
    "espeak".into()
}

fn noise_scale() -> f32 {
    0.667
}

fn length_scale() -> f32 {
    1.0
}

fn noise_w() -> f32 {
    0.8
}

impl VoiceConfig {
    pub fn from_json(text: &str) -> serde_json::Result<Self> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_piper_config_with_defaults() {
        let config = VoiceConfig::from_json(
            r#"{"audio": {"sample_rate": 22050}, "espeak": {"voice": "en-us"},
                "inference": {"noise_scale": 0.5},
                "phoneme_id_map": {"_": [0], "^": [1], "$": [2]},
                "num_symbols": 256, "num_speakers": 1}"#,
        )
        .unwrap();
        assert_eq!(config.audio.sample_rate, 22050);
        assert_eq!(config.espeak.unwrap().voice, "en-us");
        assert_eq!(
            config.inference,
            Scales {
                noise_scale: 0.5,
                length_scale: 1.0,
                noise_w: 0.8
            }
        );
        assert_eq!(config.phoneme_type, "espeak");
        assert_eq!(config.phoneme_id_map["^"], [1]);
        assert!(config.speaker_id_map.is_empty());
    }
}
