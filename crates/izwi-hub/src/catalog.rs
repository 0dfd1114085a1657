//! The models Izwi supports: where each lives on the Hugging Face hub (repository and a
//! pinned revision, so every user gets the same bytes), the files it needs, and what
//! a person choosing one wants to know (size, languages, license).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Whisper,
    Piper,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ModelTask {
    /// Speech to text.
    Transcribe,
    /// Text to speech.
    Speak,
}

#[derive(Debug, Clone, Serialize)]
pub struct CatalogEntry {
    /// What users type: `izwi models download whisper-base`.
    pub id: &'static str,
    pub name: &'static str,
    pub family: Family,
    pub task: ModelTask,
    pub repo: &'static str,
    /// A tag, a PR ref or a commit: never a moving branch.
    pub revision: &'static str,
    /// Paths inside the repository; they share one folder, which becomes the model's.
    pub files: &'static [&'static str],
    /// Approximate bytes on disk, for choosing; downloads check the hub's exact sizes.
    pub size_bytes: u64,
    /// ISO 639-1 codes (Whisper's multilingual models: the 99 it was trained on).
    pub languages: &'static [&'static str],
    pub license: &'static str,
    pub description: &'static str,
}

/// The 99 languages of Whisper's multilingual models, in its token order.
pub const WHISPER_LANGUAGES: &[&str] = &[
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it",
    "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur",
    "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn",
    "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si",
    "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo",
    "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln",
    "ha", "ba", "jw", "su",
];

const WHISPER_FILES: &[&str] = &[
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
];

const WHISPER_LICENSE: &str = "Apache-2.0";
const PIPER_LICENSE: &str = "MIT (the voice's MODEL_CARD names its dataset's terms)";

macro_rules! piper_voice {
    ($id:literal, $name:literal, $dir:literal, $file:literal, $lang:literal, $desc:literal) => {
        CatalogEntry {
            id: $id,
            name: $name,
            family: Family::Piper,
            task: ModelTask::Speak,
            repo: "rhasspy/piper-voices",
            revision: "v1.0.0",
            files: &[
                concat!($dir, "/", $file, ".onnx"),
                concat!($dir, "/", $file, ".onnx.json"),
            ],
            size_bytes: 63_500_000,
            languages: &[$lang],
            license: PIPER_LICENSE,
            description: $desc,
        }
    };
}

static CATALOG: &[CatalogEntry] = &[
    CatalogEntry {
        id: "whisper-tiny.en",
        name: "Whisper tiny (English)",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-tiny.en",
        revision: "refs/pr/15",
        files: WHISPER_FILES,
        size_bytes: 151_000_000,
        languages: &["en"],
        license: WHISPER_LICENSE,
        description: "Fastest; English only. Good for dictation and clear speech.",
    },
    CatalogEntry {
        id: "whisper-base",
        name: "Whisper base",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-base",
        revision: "refs/pr/22",
        files: WHISPER_FILES,
        size_bytes: 290_000_000,
        languages: WHISPER_LANGUAGES,
        license: WHISPER_LICENSE,
        description: "Fast, 99 languages; a good default on a laptop CPU.",
    },
    CatalogEntry {
        id: "whisper-base.en",
        name: "Whisper base (English)",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-base.en",
        revision: "refs/pr/13",
        files: WHISPER_FILES,
        size_bytes: 290_000_000,
        languages: &["en"],
        license: WHISPER_LICENSE,
        description: "Fast and more accurate than base on English.",
    },
    CatalogEntry {
        id: "whisper-small.en",
        name: "Whisper small (English)",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-small.en",
        revision: "refs/pr/10",
        files: WHISPER_FILES,
        size_bytes: 967_000_000,
        languages: &["en"],
        license: WHISPER_LICENSE,
        description: "Accurate English; needs a GPU or patience on a CPU.",
    },
    CatalogEntry {
        id: "whisper-medium.en",
        name: "Whisper medium (English)",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-medium.en",
        revision: "refs/pr/11",
        files: WHISPER_FILES,
        size_bytes: 3_060_000_000,
        languages: &["en"],
        license: WHISPER_LICENSE,
        description: "Very accurate English; best with a GPU.",
    },
    CatalogEntry {
        id: "whisper-large-v3-turbo",
        name: "Whisper large v3 turbo",
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: "openai/whisper-large-v3-turbo",
        revision: "41f01f3fe87f28c78e2fbf8b568835947dd65ed9",
        files: WHISPER_FILES,
        size_bytes: 1_620_000_000,
        languages: WHISPER_LANGUAGES,
        license: "MIT",
        description: "Most accurate, 99 languages, 128 mel bins; best with a GPU.",
    },
    piper_voice!(
        "piper-en_US-joe-medium",
        "Joe (US English)",
        "en/en_US/joe/medium",
        "en_US-joe-medium",
        "en",
        "A clear male US English voice."
    ),
    piper_voice!(
        "piper-en_US-lessac-medium",
        "Lessac (US English)",
        "en/en_US/lessac/medium",
        "en_US-lessac-medium",
        "en",
        "An expressive female US English voice."
    ),
    piper_voice!(
        "piper-en_US-amy-medium",
        "Amy (US English)",
        "en/en_US/amy/medium",
        "en_US-amy-medium",
        "en",
        "A female US English voice."
    ),
    piper_voice!(
        "piper-en_GB-alan-medium",
        "Alan (British English)",
        "en/en_GB/alan/medium",
        "en_GB-alan-medium",
        "en",
        "A male British English voice."
    ),
    piper_voice!(
        "piper-de_DE-thorsten-medium",
        "Thorsten (German)",
        "de/de_DE/thorsten/medium",
        "de_DE-thorsten-medium",
        "de",
        "A male German voice."
    ),
    piper_voice!(
        "piper-fr_FR-siwis-medium",
        "Siwis (French)",
        "fr/fr_FR/siwis/medium",
        "fr_FR-siwis-medium",
        "fr",
        "A female French voice."
    ),
    piper_voice!(
        "piper-es_ES-davefx-medium",
        "Davefx (Spanish)",
        "es/es_ES/davefx/medium",
        "es_ES-davefx-medium",
        "es",
        "A male Spanish voice."
    ),
];

/// Every model Izwi knows how to fetch.
pub fn catalog() -> &'static [CatalogEntry] {
    CATALOG
}

impl CatalogEntry {
    pub fn find(id: &str) -> Option<&'static CatalogEntry> {
        CATALOG.iter().find(|e| e.id == id)
    }

    /// The folder inside the repository that holds the files ("" for the root).
    pub fn folder(&self) -> &'static str {
        match self.files.first().and_then(|f| f.rsplit_once('/')) {
            Some((dir, _)) => dir,
            None => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_revisions_pinned() {
        let mut ids: Vec<_> = CATALOG.iter().map(|e| e.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CATALOG.len());
        for e in CATALOG {
            assert!(!["main", "master"].contains(&e.revision), "{} floats", e.id);
            assert!(!e.files.is_empty() && !e.languages.is_empty());
        }
        assert_eq!(WHISPER_LANGUAGES.len(), 99);
    }

    #[test]
    fn every_entry_keeps_its_files_in_one_folder() {
        for e in CATALOG {
            let folder = e.folder();
            for f in e.files {
                let parent = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                assert_eq!(parent, folder, "{}", e.id);
            }
        }
        let joe = CatalogEntry::find("piper-en_US-joe-medium").unwrap();
        assert_eq!(joe.folder(), "en/en_US/joe/medium");
        assert_eq!(CatalogEntry::find("whisper-base").unwrap().folder(), "");
    }
}
