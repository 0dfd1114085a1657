//! The models Izwi supports: where each lives on the Hugging Face hub (repository and
//! a commit, so every user gets the same bytes), each file's size and sha256 (checked
//! before a file counts as installed, so a compromised or wrong server cannot install
//! other bytes), and what a person choosing one wants to know.
//!
//! Entries come back only with their pins: a model whose files cannot be pinned is
//! left out (it can still be imported from disk).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Whisper,
    Piper,
    /// Chat models of the Llama architecture (SmolLM2, Llama 3.x) in one GGUF file.
    Llama,
    /// Mistral's streaming speech recognition (Voxtral Realtime), a Hugging Face
    /// folder with its `tekken.json`.
    VoxtralRealtime,
    /// Alibaba's Qwen3-TTS (12 Hz Base, CustomVoice and VoiceDesign checkpoints), a
    /// Hugging Face folder with its `speech_tokenizer/` codec.
    Qwen3Tts,
    /// Liquid AI's LFM2-Audio (and LFM2.5-Audio, with its `audio_detokenizer/`): one
    /// model that hears and speaks, a Hugging Face folder with its Mimi codec file.
    Lfm2Audio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ModelTask {
    /// Speech to text.
    Transcribe,
    /// Text to speech.
    Speak,
    /// Text in, text out: the model that answers in voice chat.
    Chat,
}

/// One file of a catalog model, pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogFile {
    /// The path inside the repository.
    pub path: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// What users type: `izwi models download whisper-base`.
    pub id: String,
    pub name: String,
    pub family: Family,
    pub task: ModelTask,
    pub repo: String,
    /// The 40-hex commit the files are fetched at: never a branch, tag or PR ref.
    pub commit: String,
    /// They share one folder, which becomes the model's.
    pub files: Vec<CatalogFile>,
    /// ISO 639-1 codes (Whisper's multilingual models: the 99 it was trained on).
    pub languages: Vec<String>,
    pub license: String,
    pub description: String,
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

const WHISPER_LICENSE: &str = "Apache-2.0";
const PIPER_LICENSE: &str = "MIT (the voice's MODEL_CARD names its dataset's terms)";
/// A commit of rhasspy/piper-voices whose files match the pins below.
const PIPER_COMMIT: &str = "c10ece1aade47bb51c153c893d14e5bf8e5b7117";

/// (size, sha256) of config.json, generation_config.json, model.safetensors and
/// tokenizer.json.
type WhisperPins = [(u64, &'static str); 4];

fn whisper(
    id: &str,
    name: &str,
    commit: &str,
    pins: WhisperPins,
    multilingual: bool,
    description: &str,
) -> CatalogEntry {
    let names = [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
    ];
    let languages = if multilingual {
        WHISPER_LANGUAGES
    } else {
        &["en"]
    };
    CatalogEntry {
        id: id.into(),
        name: name.into(),
        family: Family::Whisper,
        task: ModelTask::Transcribe,
        repo: format!("openai/{id}"),
        commit: commit.into(),
        files: names
            .iter()
            .zip(pins)
            .map(|(path, (size, sha256))| CatalogFile {
                path: path.to_string(),
                size,
                sha256: sha256.into(),
            })
            .collect(),
        languages: languages.iter().map(|l| l.to_string()).collect(),
        license: WHISPER_LICENSE.into(),
        description: description.into(),
    }
}

/// A voice in rhasspy/piper-voices: `<lang>/<locale>/<speaker>/medium/<locale>-<speaker>-medium`.
fn piper(
    speaker: &str,
    locale: &str,
    name: &str,
    onnx: (u64, &str),
    json: (u64, &str),
    description: &str,
) -> CatalogEntry {
    let (lang, _) = locale.split_once('_').unwrap_or((locale, ""));
    let stem = format!("{lang}/{locale}/{speaker}/medium/{locale}-{speaker}-medium");
    let file = |suffix: &str, (size, sha256): (u64, &str)| CatalogFile {
        path: format!("{stem}{suffix}"),
        size,
        sha256: sha256.into(),
    };
    CatalogEntry {
        id: format!("piper-{locale}-{speaker}-medium"),
        name: name.into(),
        family: Family::Piper,
        task: ModelTask::Speak,
        repo: "rhasspy/piper-voices".into(),
        commit: PIPER_COMMIT.into(),
        files: vec![file(".onnx", onnx), file(".onnx.json", json)],
        languages: vec![lang.to_string()],
        license: PIPER_LICENSE.into(),
        description: description.into(),
    }
}

/// Every model Izwi knows how to fetch.
pub fn catalog() -> Vec<CatalogEntry> {
    vec![
        whisper(
            "whisper-tiny.en",
            "Whisper tiny (English)",
            "87c7102498dcde7456f24cfd30239ca606ed9063",
            [
                (
                    1937,
                    "b5366317df280f79e6cc366f259f379674f81a8721d458acf2e00680ccb10b1d",
                ),
                (
                    1621,
                    "38744c19d5cede6ff4dab5079c6d6ddc02ca726960bbef208fb602ad5a030eab",
                ),
                (
                    151_060_136,
                    "db59695928ded6043adaef491a53ef4e12da9611184d77c53baa691a60b958ad",
                ),
                (
                    2_405_679,
                    "5eb60cec1e77aeeb6869a2bb5a8e01a84c3fe5d072d75369343021fe6f5310d0",
                ),
            ],
            false,
            "Fastest; English only. Good for dictation and clear speech.",
        ),
        whisper(
            "whisper-base",
            "Whisper base",
            "e37978b90ca9030d5170a5c07aadb050351a65bb",
            [
                (
                    1983,
                    "a153c53883a6799b6f056b4a8d1a515c9926d03994682ba88a7616618d7da0c1",
                ),
                (
                    3807,
                    "444b3f636d2fff89dd9ecf549e2a085b61f7ff0fa0246d4628bac6a3b8cc9ba4",
                ),
                (
                    290_403_936,
                    "07cadb9f25677c8d50df603e66a98fbd842cce45047139baeb16e6219a1e807b",
                ),
                (
                    2_480_466,
                    "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566",
                ),
            ],
            true,
            "Fast, 99 languages; a good default on a laptop CPU.",
        ),
        whisper(
            "whisper-base.en",
            "Whisper base (English)",
            "911407f4214e0e1d82085af863093ec0b66f9cd6",
            [
                (
                    1937,
                    "160c1df40a60d4ef5a6014d536fd845c33aabfd1f318458ac7f87cfe91ebbe76",
                ),
                (
                    1531,
                    "c5750f05d94777579e00ce26ef65e5d87c108439f90e3ac519df2587b9d5d41f",
                ),
                (
                    290_401_888,
                    "d4dd5542fd6a1d35639e21384238f3bfe6c557c849d392b5905d33ee29e71db5",
                ),
                (
                    2_405_679,
                    "5eb60cec1e77aeeb6869a2bb5a8e01a84c3fe5d072d75369343021fe6f5310d0",
                ),
            ],
            false,
            "Fast and more accurate than base on English.",
        ),
        piper(
            "joe",
            "en_US",
            "Joe (US English)",
            (
                63_201_294,
                "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
            ),
            (
                4794,
                "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
            ),
            "A clear male US English voice.",
        ),
        piper(
            "lessac",
            "en_US",
            "Lessac (US English)",
            (
                63_201_294,
                "5efe09e69902187827af646e1a6e9d269dee769f9877d17b16b1b46eeaaf019f",
            ),
            (
                4885,
                "efe19c417bed055f2d69908248c6ba650fa135bc868b0e6abb3da181dab690a0",
            ),
            "An expressive female US English voice.",
        ),
        piper(
            "amy",
            "en_US",
            "Amy (US English)",
            (
                63_201_294,
                "b3a6e47b57b8c7fbe6a0ce2518161a50f59a9cdd8a50835c02cb02bdd6206c18",
            ),
            (
                4882,
                "95a23eb4d42909d38df73bb9ac7f45f597dbfcde2d1bf9526fdeaf5466977d77",
            ),
            "A female US English voice.",
        ),
        piper(
            "alan",
            "en_GB",
            "Alan (British English)",
            (
                63_201_294,
                "0a309668932205e762801f1efc2736cd4b0120329622adf62be09e56339d3330",
            ),
            (
                4888,
                "c0f0d124e5895c00e7c03b35dcc8287f319a6998a365b182deb5c8e752ee8c1e",
            ),
            "A male British English voice.",
        ),
        piper(
            "thorsten",
            "de_DE",
            "Thorsten (German)",
            (
                63_201_294,
                "7e64762d8e5118bb578f2eea6207e1a35a8e0c30595010b666f983fc87bb7819",
            ),
            (
                4819,
                "974adee790533adb273a1ac88f49027d2a1b8f0f2cf4905954a4791e79264e85",
            ),
            "A male German voice.",
        ),
        piper(
            "siwis",
            "fr_FR",
            "Siwis (French)",
            (
                63_201_294,
                "641d1ab097da2b81128c076810edb052b385decc8be3381814802a64a73baf99",
            ),
            (
                4875,
                "39479916c2db192b5ac9764daddd0c744d83e023ad890c6976c0633ae4df8959",
            ),
            "A female French voice.",
        ),
        piper(
            "davefx",
            "es_ES",
            "Davefx (Spanish)",
            (
                63_201_294,
                "6658b03b1a6c316ee4c265a9896abc1393353c2d9e1bca7d66c2c442e222a917",
            ),
            (
                4817,
                "0e0dda87c732f6f38771ff274a6380d9252f327dca77aa2963d5fbdf9ec54842",
            ),
            "A male Spanish voice.",
        ),
    ]
}

impl CatalogEntry {
    /// The folder inside the repository that holds the files ("" for the root).
    pub fn folder(&self) -> &str {
        match self.files.first().and_then(|f| f.path.rsplit_once('/')) {
            Some((dir, _)) => dir,
            None => "",
        }
    }

    /// Bytes of all its files.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The file that holds its weights (what identifies a copy of it).
    pub fn weights(&self) -> Option<&CatalogFile> {
        self.files
            .iter()
            .find(|f| f.path.ends_with(".safetensors") || f.path.ends_with(".onnx"))
    }

    /// A catalog entry is only usable with every file pinned, each a plain relative
    /// path inside the repository (nothing that could lead out of the cache's folder).
    pub fn is_pinned(&self) -> bool {
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let plain = |path: &str| {
            !path.is_empty()
                && !path.starts_with('/')
                && !path.contains('\\')
                && path.split('/').all(|part| !matches!(part, "" | "." | ".."))
        };
        let repo_parts: Vec<_> = self.repo.split('/').collect();
        hex(&self.commit, 40)
            && repo_parts.len() == 2
            && repo_parts.iter().all(|p| plain(p))
            && !self.files.is_empty()
            && self
                .files
                .iter()
                .all(|f| f.size > 0 && hex(&f.sha256, 64) && plain(&f.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_pinned_to_a_commit_and_each_files_sha256_and_size() {
        let catalog = catalog();
        let mut ids: Vec<_> = catalog.iter().map(|e| e.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), catalog.len());
        for e in &catalog {
            assert!(e.is_pinned(), "{} is not pinned: {e:?}", e.id);
            assert!(!e.languages.is_empty(), "{}", e.id);
            assert!(e.weights().is_some(), "{}", e.id);
        }
        assert_eq!(WHISPER_LANGUAGES.len(), 99);
        let mut bad = catalog[0].clone();
        bad.commit = "refs/pr/15".into();
        assert!(!bad.is_pinned());
        let mut bad = catalog[0].clone();
        bad.files[0].path = "../../elsewhere".into();
        assert!(!bad.is_pinned());
        let mut bad = catalog[0].clone();
        bad.files[0].sha256 = String::new();
        assert!(!bad.is_pinned());
    }

    #[test]
    fn every_entry_keeps_its_files_in_one_folder() {
        for e in catalog() {
            let folder = e.folder();
            for f in &e.files {
                let parent = f.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                assert_eq!(parent, folder, "{}", e.id);
            }
        }
        let catalog = catalog();
        let find = |id: &str| catalog.iter().find(|e| e.id == id).unwrap();
        assert_eq!(
            find("piper-en_US-joe-medium").folder(),
            "en/en_US/joe/medium"
        );
        assert_eq!(
            find("piper-en_US-joe-medium").files[0].path,
            "en/en_US/joe/medium/en_US-joe-medium.onnx"
        );
        assert_eq!(find("whisper-base").folder(), "");
        assert_eq!(find("whisper-base").repo, "openai/whisper-base");
    }
}
