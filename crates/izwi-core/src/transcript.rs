//! A transcript with timed segments, and its text and subtitle renderings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Segment {
    /// Seconds from the start of the audio.
    pub start: f64,
    pub end: f64,
    pub text: String,
    /// Each word's time, when word timestamps were asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<Word>,
}

/// A spoken word and when it is said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Word {
    /// As it appears in the segment's text, with its leading space and punctuation.
    pub word: String,
    /// Seconds from the start of the audio.
    pub start: f64,
    pub end: f64,
    /// The model's mean probability of the word's tokens.
    pub probability: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Transcript {
    /// ISO code of the spoken (or detected) language, when the model knows languages.
    pub language: Option<String>,
    /// Length of the audio in seconds.
    pub duration: f64,
    pub segments: Vec<Segment>,
    /// Processing time over audio duration; below 1 is faster than real time.
    pub rtf: f64,
}

impl Transcript {
    /// The segments' text joined into one passage.
    pub fn text(&self) -> String {
        self.segments
            .iter()
            .map(|s| s.text.trim())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn to_txt(&self) -> String {
        let mut text = self.text();
        text.push('\n');
        text
    }

    /// SubRip subtitles; with word timestamps, each word underlined as it is said.
    pub fn to_srt(&self) -> String {
        let mut out = String::new();
        for (i, (start, end, text)) in self.cues().into_iter().enumerate() {
            out.push_str(&format!(
                "{}\n{} --> {}\n{text}\n\n",
                i + 1,
                timestamp(start, ','),
                timestamp(end, ','),
            ));
        }
        out
    }

    /// WebVTT subtitles; with word timestamps, each word underlined as it is said.
    pub fn to_vtt(&self) -> String {
        let mut out = String::from("WEBVTT\n\n");
        for (start, end, text) in self.cues() {
            out.push_str(&format!(
                "{} --> {}\n{text}\n\n",
                timestamp(start, '.'),
                timestamp(end, '.'),
            ));
        }
        out
    }

    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            transcript: &'a Transcript,
            text: String,
        }
        serde_json::to_string_pretty(&Json {
            transcript: self,
            text: self.text(),
        })
        .unwrap_or_default()
    }

    /// Subtitles: each segment with text and a positive duration. A segment with word
    /// times becomes one cue per word, the segment's text with that word underlined
    /// (`<u>`, which SRT and WebVTT players both render), and a plain cue over any
    /// pause between words, as OpenAI's `--highlight_words` writes them.
    fn cues(&self) -> Vec<(f64, f64, String)> {
        let mut cues = Vec::new();
        for s in self
            .segments
            .iter()
            .filter(|s| !s.text.trim().is_empty() && s.end > s.start)
        {
            if s.words.is_empty() {
                cues.push((s.start, s.end, s.text.trim().to_owned()));
                continue;
            }
            let plain: String = s.words.iter().map(|w| w.word.as_str()).collect();
            let mut last = s.words[0].start;
            for (i, word) in s.words.iter().enumerate() {
                if word.start > last {
                    cues.push((last, word.start, plain.trim().to_owned()));
                }
                let text: String = s
                    .words
                    .iter()
                    .enumerate()
                    .map(|(j, w)| {
                        if j == i {
                            underlined(&w.word)
                        } else {
                            w.word.clone()
                        }
                    })
                    .collect();
                cues.push((word.start, word.end, text.trim().to_owned()));
                last = word.end;
            }
        }
        cues
    }
}

/// `word` with its text (not its leading space) in `<u>…</u>`.
fn underlined(word: &str) -> String {
    let text = word.trim_start();
    format!("{}<u>{text}</u>", &word[..word.len() - text.len()])
}

/// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (VTT).
fn timestamp(seconds: f64, separator: char) -> String {
    let ms = (seconds.max(0.0) * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02}{separator}{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript() -> Transcript {
        Transcript {
            language: Some("en".into()),
            duration: 3725.5,
            segments: vec![
                Segment {
                    start: 0.0,
                    end: 2.5,
                    text: " Hello there.".into(),
                    words: Vec::new(),
                },
                Segment {
                    start: 2.5,
                    end: 2.5,
                    text: " dropped".into(),
                    words: Vec::new(),
                },
                Segment {
                    start: 3723.042,
                    end: 3725.5,
                    text: " Bye.".into(),
                    words: Vec::new(),
                },
            ],
            rtf: 0.1,
        }
    }

    #[test]
    fn renders_text_srt_and_vtt() {
        let t = transcript();
        assert_eq!(t.to_txt(), "Hello there. dropped Bye.\n");
        assert_eq!(
            t.to_srt(),
            "1\n00:00:00,000 --> 00:00:02,500\nHello there.\n\n2\n01:02:03,042 --> 01:02:05,500\nBye.\n\n"
        );
        assert!(t
            .to_vtt()
            .starts_with("WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nHello there.\n\n"));
        let json: serde_json::Value = serde_json::from_str(&t.to_json()).expect("valid JSON");
        assert_eq!(json["language"], "en");
        assert_eq!(json["segments"][2]["start"], 3723.042);
        assert_eq!(json["text"], "Hello there. dropped Bye.");
        assert!(json["segments"][0].get("words").is_none());
    }

    #[test]
    fn words_become_highlighted_cues_with_the_pauses_between_them() {
        let word = |w: &str, start, end| Word {
            word: w.into(),
            start,
            end,
            probability: 0.9,
        };
        let t = Transcript {
            language: Some("en".into()),
            duration: 3.0,
            segments: vec![Segment {
                start: 0.5,
                end: 2.0,
                text: " Ask not.".into(),
                words: vec![word(" Ask", 0.5, 0.9), word(" not.", 1.2, 2.0)],
            }],
            rtf: 0.1,
        };
        assert_eq!(
            t.to_srt(),
            "1\n00:00:00,500 --> 00:00:00,900\n<u>Ask</u> not.\n\n\
             2\n00:00:00,900 --> 00:00:01,200\nAsk not.\n\n\
             3\n00:00:01,200 --> 00:00:02,000\nAsk <u>not.</u>\n\n"
        );
        assert!(t
            .to_vtt()
            .ends_with("00:00:01.200 --> 00:00:02.000\nAsk <u>not.</u>\n\n"));
        let json: serde_json::Value = serde_json::from_str(&t.to_json()).expect("valid JSON");
        assert_eq!(json["segments"][0]["words"][1]["word"], " not.");
        assert_eq!(json["segments"][0]["words"][1]["start"], 1.2);
    }
}
