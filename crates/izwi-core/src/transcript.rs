//! A transcript with timed segments, and its text and subtitle renderings.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Segment {
    /// Seconds from the start of the audio.
    pub start: f64,
    pub end: f64,
    pub text: String,
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

    /// SubRip subtitles.
    pub fn to_srt(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.cues().enumerate() {
            out.push_str(&format!(
                "{}\n{} --> {}\n{}\n\n",
                i + 1,
                timestamp(s.start, ','),
                timestamp(s.end, ','),
                s.text.trim()
            ));
        }
        out
    }

    /// WebVTT subtitles.
    pub fn to_vtt(&self) -> String {
        let mut out = String::from("WEBVTT\n\n");
        for s in self.cues() {
            out.push_str(&format!(
                "{} --> {}\n{}\n\n",
                timestamp(s.start, '.'),
                timestamp(s.end, '.'),
                s.text.trim()
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

    /// Segments worth a subtitle: with text, and with a positive duration.
    fn cues(&self) -> impl Iterator<Item = &Segment> {
        self.segments
            .iter()
            .filter(|s| !s.text.trim().is_empty() && s.end > s.start)
    }
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
                },
                Segment {
                    start: 2.5,
                    end: 2.5,
                    text: " dropped".into(),
                },
                Segment {
                    start: 3723.042,
                    end: 3725.5,
                    text: " Bye.".into(),
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
    }
}
