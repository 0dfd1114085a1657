//! liquid-audio's four built-in TTS voices, each chosen by its own system prompt.

/// A built-in voice of LFM2-Audio's TTS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lfm2Voice {
    UsMale,
    UsFemale,
    UkMale,
    UkFemale,
}

impl Lfm2Voice {
    pub const ALL: [Lfm2Voice; 4] = [
        Lfm2Voice::UsMale,
        Lfm2Voice::UsFemale,
        Lfm2Voice::UkMale,
        Lfm2Voice::UkFemale,
    ];

    /// The voice's id where a voice is named in settings and on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Lfm2Voice::UsMale => "us-male",
            Lfm2Voice::UsFemale => "us-female",
            Lfm2Voice::UkMale => "uk-male",
            Lfm2Voice::UkFemale => "uk-female",
        }
    }

    /// As the model card names it.
    pub fn label(self) -> &'static str {
        match self {
            Lfm2Voice::UsMale => "US male",
            Lfm2Voice::UsFemale => "US female",
            Lfm2Voice::UkMale => "UK male",
            Lfm2Voice::UkFemale => "UK female",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.id() == id)
    }

    /// The system prompt that selects the voice.
    pub fn prompt(self) -> String {
        format!("Perform TTS. Use the {} voice.", self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_the_model_cards() {
        assert_eq!(
            Lfm2Voice::UkMale.prompt(),
            "Perform TTS. Use the UK male voice."
        );
        assert_eq!(
            Lfm2Voice::UsFemale.prompt(),
            "Perform TTS. Use the US female voice."
        );
    }

    #[test]
    fn ids_round_trip() {
        for voice in Lfm2Voice::ALL {
            assert_eq!(Lfm2Voice::from_id(voice.id()), Some(voice));
        }
        assert_eq!(Lfm2Voice::from_id("us male"), None);
    }
}
