//! What the talker is given before it speaks: the text to say and who says it, laid out
//! as the reference lays it out: streaming text (the text enters one token per frame
//! while the talker speaks), or the whole text in the prompt (the reference's
//! non-streaming mode).

use candle_core::{Result, Tensor};

use super::code_predictor::CodePredictor;
use super::config::Qwen3TtsConfig;
use super::talker::Talker;

/// One utterance to speak.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechPrompt {
    /// The tokens of `<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n`.
    pub text_ids: Vec<u32>,
    /// A language of the checkpoint's `codec_language_id`, or None to let the model tell.
    pub language: Option<String>,
    /// A speaker embedding (x-vector) in the talker's hidden size, for cloning a voice
    /// (Base checkpoints).
    pub speaker_embedding: Option<Vec<f32>>,
    /// A preset speaker of the checkpoint's `spk_id` (CustomVoice checkpoints).
    pub speaker: Option<String>,
    /// The tokens of `<|im_start|>user\n{instruction}<|im_end|>\n`: how to speak
    /// (CustomVoice) or the voice to design (VoiceDesign).
    pub instruct_ids: Option<Vec<u32>>,
    /// A voice sample and its transcript to continue from (the reference's in-context
    /// cloning; Base checkpoints, with the sample's `speaker_embedding`).
    pub reference: Option<VoiceReference>,
    /// The whole text (and a sample's transcript) in the prompt, each token beside the
    /// codec's padding, before the first frame: the reference's non-streaming mode.
    /// Otherwise the text enters one token per frame while the talker speaks.
    pub whole_text: bool,
}

/// A voice sample for in-context cloning: the talker reads its transcript and hears its
/// codes, then says the text in the same voice.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceReference {
    /// The tokens of `<|im_start|>assistant\n{transcript}<|im_end|>\n`.
    pub text_ids: Vec<u32>,
    /// The sample's frames of codes from the speech tokenizer's encoder.
    pub codes: Vec<Vec<u32>>,
}

/// Tokens around the transcript in [`VoiceReference::text_ids`]: the role before it,
/// `<|im_end|>\n` after it.
const REFERENCE_TAIL_TOKENS: usize = 2;

/// Tokens around the text in `text_ids`: `<|im_start|>assistant\n` before it,
/// `<|im_end|>\n<|im_start|>assistant\n` after it.
const ROLE_TOKENS: usize = 3;
const TAIL_TOKENS: usize = 5;

/// A prompt checked against the checkpoint, with its codec control tokens chosen.
#[derive(Debug, Clone)]
pub(crate) struct PromptLayout {
    prompt: SpeechPrompt,
    /// Codec tokens of the prompt, the speaker embedding's place (if any) marked None.
    codec: Vec<Option<u32>>,
}

/// The talker's inputs for one request.
pub(crate) struct PromptEmbeddings {
    /// One row per prompt position: `[positions, hidden]`.
    pub prefill: Tensor,
    /// The text still to enter, one row per generated frame: `[n, hidden]`.
    pub trailing: Tensor,
    /// What enters once the text is used up: `[1, hidden]`.
    pub pad: Tensor,
}

impl PromptLayout {
    pub fn new(prompt: SpeechPrompt, config: &Qwen3TtsConfig) -> Result<Self> {
        let t = &config.talker_config;
        if prompt.text_ids.len() < ROLE_TOKENS + 1 + TAIL_TOKENS {
            candle_core::bail!("the prompt has no text to speak");
        }
        if let Some(&bad) = prompt
            .text_ids
            .iter()
            .find(|&&id| id as usize >= t.text_vocab_size)
        {
            candle_core::bail!("text token {bad} is outside the vocabulary");
        }
        if let Some(&bad) = prompt
            .instruct_ids
            .iter()
            .flatten()
            .find(|&&id| id as usize >= t.text_vocab_size)
        {
            candle_core::bail!("instruction token {bad} is outside the vocabulary");
        }
        if let Some(reference) = &prompt.reference {
            check_reference(reference, &prompt, config)?;
        }
        let preset = match &prompt.speaker {
            None => None,
            Some(name) => {
                if prompt.speaker_embedding.is_some() {
                    candle_core::bail!(
                        "a prompt takes a preset speaker or a cloned voice, not both"
                    );
                }
                let key = name.to_lowercase();
                let Some(&id) = t.spk_id.get(&key) else {
                    let mut known: Vec<&str> = t.spk_id.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    candle_core::bail!(
                        "speaker {name:?} is not one of this model's: {}",
                        if known.is_empty() {
                            "it has none".to_string()
                        } else {
                            known.join(", ")
                        }
                    );
                };
                // A dialect speaker speaks it when the language is Chinese or open.
                let dialect = t.spk_is_dialect.get(&key).and_then(|v| v.as_str());
                Some((id, dialect.map(str::to_owned)))
            }
        };
        if let Some(embedding) = &prompt.speaker_embedding {
            if embedding.len() != t.hidden_size {
                candle_core::bail!(
                    "the speaker embedding has {} numbers; this model takes {}",
                    embedding.len(),
                    t.hidden_size
                );
            }
        }
        let dialect = preset.as_ref().and_then(|(_, d)| d.clone()).filter(|_| {
            prompt
                .language
                .as_deref()
                .is_none_or(|l| l.eq_ignore_ascii_case("chinese"))
        });
        let language = dialect.or_else(|| prompt.language.clone());
        let mut codec = match &language {
            None => vec![
                t.codec_nothink_id,
                t.codec_think_bos_id,
                t.codec_think_eos_id,
            ],
            Some(language) => {
                let Some(&id) = t.codec_language_id.get(&language.to_lowercase()) else {
                    let mut known: Vec<&str> =
                        t.codec_language_id.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    candle_core::bail!(
                        "language {language:?} is not one of this model's: {}",
                        known.join(", ")
                    );
                };
                vec![
                    t.codec_think_id,
                    t.codec_think_bos_id,
                    id,
                    t.codec_think_eos_id,
                ]
            }
        }
        .into_iter()
        .map(Some)
        .collect::<Vec<_>>();
        if let Some((id, _)) = preset {
            codec.push(Some(id));
        } else if prompt.speaker_embedding.is_some() {
            codec.push(None);
        }
        codec.extend([Some(t.codec_pad_id), Some(t.codec_bos_id)]);
        Ok(Self { prompt, codec })
    }

    /// Positions of the prompt: the instruction, the role, the codec control tokens
    /// beside text padding, and the first text token with the codec's begin token; with
    /// a voice sample, its frames after the begin token. With the whole text, the text
    /// (a sample's transcript first) and its end token come before the begin token.
    pub fn len(&self) -> usize {
        let sample = self.prompt.reference.as_ref().map_or(0, |r| r.codes.len());
        let whole_text = if self.prompt.whole_text {
            self.text_len() + 1
        } else {
            0
        };
        self.instruct_len() + ROLE_TOKENS + self.codec.len() + sample + whole_text
    }

    /// Tokens of the text to say, after a sample's transcript when there is one.
    fn text_len(&self) -> usize {
        let transcript = self.prompt.reference.as_ref().map_or(0, |r| {
            r.text_ids.len() - ROLE_TOKENS - REFERENCE_TAIL_TOKENS
        });
        transcript + self.prompt.text_ids.len() - ROLE_TOKENS - TAIL_TOKENS
    }

    fn instruct_len(&self) -> usize {
        self.prompt.instruct_ids.as_ref().map_or(0, Vec::len)
    }

    pub fn embed(
        &self,
        config: &Qwen3TtsConfig,
        talker: &Talker,
        predictor: &CodePredictor,
    ) -> Result<PromptEmbeddings> {
        let ids = &self.prompt.text_ids;
        let specials = talker.text(&[
            config.tts_bos_token_id,
            config.tts_eos_token_id,
            config.tts_pad_token_id,
        ])?;
        let (bos, eos, pad) = (specials.get(0)?, specials.get(1)?, specials.get(2)?);
        let codec_rows = self
            .codec
            .iter()
            .map(|token| match token {
                Some(id) => talker.codec(&[*id])?.squeeze(0),
                None => {
                    let embedding = self.prompt.speaker_embedding.as_deref().unwrap_or_default();
                    Tensor::new(embedding, talker.device())?.to_dtype(talker.dtype())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let n = codec_rows.len();
        // Text side of the codec positions: padding, then the text's begin token.
        let mut rows: Vec<Tensor> = Vec::with_capacity(self.len());
        if let Some(instruct) = self
            .prompt
            .instruct_ids
            .as_deref()
            .filter(|i| !i.is_empty())
        {
            let instruct = talker.text(instruct)?;
            for i in 0..instruct.dim(0)? {
                rows.push(instruct.get(i)?);
            }
        }
        let role = talker.text(&ids[..ROLE_TOKENS])?;
        for i in 0..ROLE_TOKENS {
            rows.push(role.get(i)?);
        }
        for (i, codec_row) in codec_rows[..n - 1].iter().enumerate() {
            let text = if i + 2 < n { &pad } else { &bos };
            rows.push((text + codec_row)?);
        }
        let text = &ids[ROLE_TOKENS..ids.len() - TAIL_TOKENS];
        if self.prompt.whole_text {
            // Every token of the text (a sample's transcript first) and the end token,
            // beside the codec's padding; then the begin token (and the sample's
            // frames) beside text padding. Nothing is left to enter while speaking.
            let transcript = self.prompt.reference.as_ref().map_or(&[][..], |r| {
                &r.text_ids[ROLE_TOKENS..r.text_ids.len() - REFERENCE_TAIL_TOKENS]
            });
            let text = Tensor::cat(
                &[
                    talker.text(&[transcript, text].concat())?,
                    eos.unsqueeze(0)?,
                ],
                0,
            )?;
            let codec_pad = talker.codec(&[config.talker_config.codec_pad_id])?;
            let beside_text = text.broadcast_add(&codec_pad)?;
            let mut codec = vec![codec_rows[n - 1].unsqueeze(0)?];
            if let Some(reference) = &self.prompt.reference {
                codec.push(frame_embeddings(talker, predictor, &reference.codes)?);
            }
            let spoken = Tensor::cat(&codec, 0)?.broadcast_add(&pad)?;
            let prefix = Tensor::stack(&rows, 0)?;
            return Ok(PromptEmbeddings {
                prefill: Tensor::cat(&[prefix, beside_text, spoken], 0)?,
                trailing: pad.unsqueeze(0)?,
                pad: pad.unsqueeze(0)?,
            });
        }
        let Some(reference) = &self.prompt.reference else {
            let first = talker.text(&text[..1])?.squeeze(0)?;
            rows.push((first + &codec_rows[n - 1])?);
            let trailing = if text.len() == 1 {
                eos.unsqueeze(0)?
            } else {
                Tensor::cat(&[talker.text(&text[1..])?, eos.unsqueeze(0)?], 0)?
            };
            return Ok(PromptEmbeddings {
                prefill: Tensor::stack(&rows, 0)?,
                trailing,
                pad: pad.unsqueeze(0)?,
            });
        };
        // In-context cloning: the transcript and the text as one text, beside the
        // codec's begin token and the sample's frames; what text is left over enters
        // while the talker speaks, as ever.
        let transcript =
            &reference.text_ids[ROLE_TOKENS..reference.text_ids.len() - REFERENCE_TAIL_TOKENS];
        let text = Tensor::cat(
            &[
                talker.text(&[transcript, text].concat())?,
                eos.unsqueeze(0)?,
            ],
            0,
        )?;
        let codec = Tensor::cat(
            &[
                codec_rows[n - 1].unsqueeze(0)?,
                frame_embeddings(talker, predictor, &reference.codes)?,
            ],
            0,
        )?;
        let (text_len, codec_len) = (text.dim(0)?, codec.dim(0)?);
        let (beside, trailing) = if text_len > codec_len {
            (
                text.narrow(0, 0, codec_len)?,
                text.narrow(0, codec_len, text_len - codec_len)?,
            )
        } else {
            let padding = pad.unsqueeze(0)?.repeat((codec_len - text_len, 1))?;
            (Tensor::cat(&[text, padding], 0)?, pad.unsqueeze(0)?)
        };
        let prefix = Tensor::stack(&rows, 0)?;
        Ok(PromptEmbeddings {
            prefill: Tensor::cat(&[prefix, (beside + codec)?], 0)?,
            trailing,
            pad: pad.unsqueeze(0)?,
        })
    }
}

/// The talker's input for whole frames: the sum of their codes' embeddings, codebook 0
/// from the talker's table, the others from the code predictor's (`[frames, hidden]`).
pub(crate) fn frame_embeddings(
    talker: &Talker,
    predictor: &CodePredictor,
    frames: &[Vec<u32>],
) -> Result<Tensor> {
    let column = |g: usize| -> Vec<u32> { frames.iter().map(|f| f[g]).collect() };
    let mut x = talker.codec(&column(0))?;
    for g in 0..predictor.groups() {
        x = (x + predictor.embed(g, &column(g + 1))?)?;
    }
    Ok(x)
}

fn check_reference(
    reference: &VoiceReference,
    prompt: &SpeechPrompt,
    config: &Qwen3TtsConfig,
) -> Result<()> {
    let t = &config.talker_config;
    if prompt.speaker_embedding.is_none() {
        candle_core::bail!("in-context cloning needs the sample's speaker embedding too");
    }
    if reference.text_ids.len() <= ROLE_TOKENS + REFERENCE_TAIL_TOKENS {
        candle_core::bail!("the voice sample's transcript is empty");
    }
    if let Some(&bad) = reference
        .text_ids
        .iter()
        .find(|&&id| id as usize >= t.text_vocab_size)
    {
        candle_core::bail!("transcript token {bad} is outside the vocabulary");
    }
    if reference.codes.is_empty() {
        candle_core::bail!("the voice sample has no frames");
    }
    let books = t.num_code_groups;
    let size = t.code_predictor_config.vocab_size;
    for frame in &reference.codes {
        if frame.len() != books {
            candle_core::bail!(
                "a frame of the voice sample has {} codes; this model takes {books}",
                frame.len()
            );
        }
        if let Some(&bad) = frame.iter().find(|&&c| c as usize >= size) {
            candle_core::bail!("code {bad} of the voice sample is outside the codebook of {size}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Qwen3TtsConfig {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/qwen3-tts-tiny/config.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture config"))
            .expect("valid config")
    }

    fn prompt() -> SpeechPrompt {
        SpeechPrompt {
            text_ids: (10..20).collect(),
            language: None,
            speaker_embedding: None,
            speaker: None,
            instruct_ids: None,
            reference: None,
            whole_text: false,
        }
    }

    fn refused(prompt: SpeechPrompt) -> String {
        PromptLayout::new(prompt, &config())
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn the_prompt_grows_by_what_it_holds() {
        let c = config();
        let len = |p: SpeechPrompt| PromptLayout::new(p, &c).expect("valid").len();
        // Role (3), think/no-think tags (3), pad and begin (2).
        assert_eq!(len(prompt()), 8);
        let english = SpeechPrompt {
            language: Some("English".into()),
            ..prompt()
        };
        assert_eq!(len(english), 9, "a language adds its token");
        let cloned = SpeechPrompt {
            speaker_embedding: Some(vec![0.0; c.talker_config.hidden_size]),
            ..prompt()
        };
        assert_eq!(len(cloned), 9, "a speaker takes one position");
        let instructed = SpeechPrompt {
            speaker: Some("Vivian".into()),
            instruct_ids: Some(vec![1, 2, 3, 4]),
            ..prompt()
        };
        assert_eq!(len(instructed), 13);
        // A dialect speaker with the language left open speaks its dialect.
        let dialect = SpeechPrompt {
            speaker: Some("dylan".into()),
            ..prompt()
        };
        let layout = PromptLayout::new(dialect, &c).expect("valid");
        let beijing = c.talker_config.codec_language_id["beijing_dialect"];
        assert!(layout.codec.contains(&Some(beijing)));
        // A voice sample adds its frames after the codec's begin token.
        let in_context = SpeechPrompt {
            speaker_embedding: Some(vec![0.0; c.talker_config.hidden_size]),
            reference: Some(sample(3)),
            ..prompt()
        };
        assert_eq!(len(in_context.clone()), 12);
        // The whole text in the prompt: its tokens (2 of the 10) and the end token, and
        // a sample's transcript before them.
        let whole = SpeechPrompt {
            whole_text: true,
            ..prompt()
        };
        assert_eq!(len(whole), 8 + 2 + 1);
        let transcript = sample(3).text_ids.len() - ROLE_TOKENS - REFERENCE_TAIL_TOKENS;
        let whole_in_context = SpeechPrompt {
            whole_text: true,
            ..in_context
        };
        assert_eq!(len(whole_in_context), 12 + transcript + 2 + 1);
    }

    fn sample(frames: usize) -> VoiceReference {
        VoiceReference {
            text_ids: (10..17).collect(),
            codes: vec![vec![1; 16]; frames],
        }
    }

    #[test]
    fn bad_voice_samples_are_refused_with_the_reason() {
        let hidden = config().talker_config.hidden_size;
        let with = |reference: VoiceReference| SpeechPrompt {
            speaker_embedding: Some(vec![0.0; hidden]),
            reference: Some(reference),
            ..prompt()
        };
        assert!(refused(SpeechPrompt {
            reference: Some(sample(2)),
            ..prompt()
        })
        .contains("speaker embedding"));
        assert!(refused(with(VoiceReference {
            text_ids: vec![10; 5],
            ..sample(2)
        }))
        .contains("transcript is empty"));
        assert!(refused(with(sample(0))).contains("no frames"));
        assert!(refused(with(VoiceReference {
            codes: vec![vec![1; 15]],
            ..sample(1)
        }))
        .contains("15 codes"));
        assert!(refused(with(VoiceReference {
            codes: vec![vec![64; 16]],
            ..sample(1)
        }))
        .contains("outside the codebook of 64"));
    }

    #[test]
    fn bad_prompts_are_refused_with_the_reason() {
        let hidden = config().talker_config.hidden_size;
        assert!(refused(SpeechPrompt {
            text_ids: vec![1; 8],
            ..prompt()
        })
        .contains("no text"));
        assert!(refused(SpeechPrompt {
            language: Some("klingon".into()),
            ..prompt()
        })
        .contains("chinese, english, german"));
        assert!(refused(SpeechPrompt {
            speaker: Some("nobody".into()),
            ..prompt()
        })
        .contains("dylan, vivian"));
        assert!(refused(SpeechPrompt {
            speaker: Some("vivian".into()),
            speaker_embedding: Some(vec![0.0; hidden]),
            ..prompt()
        })
        .contains("not both"));
        assert!(refused(SpeechPrompt {
            speaker_embedding: Some(vec![0.0; 3]),
            ..prompt()
        })
        .contains("3 numbers"));
        assert!(refused(SpeechPrompt {
            text_ids: vec![10, 11, 12, 13, 99_999, 14, 15, 16, 17],
            ..prompt()
        })
        .contains("outside the vocabulary"));
    }
}
