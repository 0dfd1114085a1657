//! Splits text into sentences, and sentences into clauses, the way a voice says them:
//! each sentence is synthesized on its own (so audio can stream sentence by sentence and
//! one long paragraph never becomes one huge forward pass), and clause punctuation is
//! kept because Piper voices were trained with it and pause on it.
//!
//! Sentences end at `.`, `!`, `?` or `…` (a run such as `?!` ends as its strongest
//! mark) followed by a space or the end, at a blank line,
//! and at a line break when the next line starts a new thought (a capital, a digit, a
//! bullet); a hard-wrapped line that continues in lower case joins the next one. A period
//! after a common abbreviation (`Dr.`, `e.g.`), an initial (`J. R. R.`) or before a
//! lower-case word does not end a sentence, and none inside a number (`3.14`) does.
//! Clauses end at `,`, `;` and `:` followed by a space. Numbers, dates and symbols are
//! left to espeak-ng, which reads them in the voice's language.
//!
//! Splitting takes time and memory in proportion to the text: [`Paragraphs`] reads a
//! text of any length a paragraph at a time (a paragraph longer than
//! [`MAX_PARAGRAPH_BYTES`] in parts that end at a line break), and each paragraph is
//! split in one pass.

use std::io::{self, BufRead};

/// A sentence is cut at the last clause or word boundary before this many characters,
/// bounding what one synthesis pass takes.
pub const MAX_SENTENCE_CHARS: usize = 400;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    pub clauses: Vec<Clause>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// The words, trimmed, without the terminator.
    pub text: String,
    /// `,` `;` `:` inside a sentence; `.` `!` `?` at its end; `None` when the sentence
    /// ended without punctuation (a line break, a cut long sentence).
    pub terminator: Option<char>,
}

impl Sentence {
    /// The sentence as written, terminators included.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for clause in &self.clauses {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&clause.text);
            out.extend(clause.terminator);
        }
        out
    }
}

/// Abbreviations whose period does not end a sentence (compared lower-case, without
/// the final period).
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "inc",
    "ltd", "co", "corp", "no", "nos", "fig", "figs", "approx", "dept", "est", "vol", "gen", "gov",
    "sen", "rep", "rev", "capt", "col", "lt", "sgt", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m", "ca", "cf", "al",
];

/// A paragraph is handed on in parts, each ending at a line break, once it is this
/// long, bounding the memory a text without blank lines takes.
pub const MAX_PARAGRAPH_BYTES: usize = 64 * 1024;

/// Splits `text` into sentences. Text with no letters or digits gives none.
pub fn split_sentences(text: &str) -> Vec<Sentence> {
    Paragraphs::new(text.as_bytes())
        // Reading a `str`'s bytes cannot fail: they are valid UTF-8 in memory.
        .flat_map(|paragraph| paragraph_sentences(&paragraph.unwrap_or_default()))
        .collect()
}

/// The blank-line separated paragraphs of a text read line by line, with runs of
/// spaces and tabs made one space and line breaks kept; a paragraph that reaches
/// [`MAX_PARAGRAPH_BYTES`] is ended at its next line break. Fails on text that is not
/// UTF-8.
pub struct Paragraphs<R> {
    lines: io::Lines<R>,
}

impl<R: BufRead> Paragraphs<R> {
    pub fn new(reader: R) -> Paragraphs<R> {
        Paragraphs {
            lines: reader.lines(),
        }
    }
}

impl<R: BufRead> Iterator for Paragraphs<R> {
    type Item = io::Result<String>;

    fn next(&mut self) -> Option<io::Result<String>> {
        let mut current = String::new();
        for line in self.lines.by_ref() {
            let line = match line {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            let mut words = line.split_whitespace().peekable();
            if words.peek().is_none() {
                if !current.is_empty() {
                    return Some(Ok(current));
                }
                continue;
            }
            if !current.is_empty() {
                current.push('\n');
            }
            for (i, word) in words.enumerate() {
                if i > 0 {
                    current.push(' ');
                }
                current.push_str(word);
            }
            if current.len() >= MAX_PARAGRAPH_BYTES {
                return Some(Ok(current));
            }
        }
        (!current.is_empty()).then_some(Ok(current))
    }
}

/// The sentences of one paragraph (as [`Paragraphs`] gives them).
pub fn paragraph_sentences(paragraph: &str) -> Vec<Sentence> {
    let mut sentences = Vec::new();
    let chars: Vec<char> = paragraph.chars().collect();
    let mut clauses = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let boundary = match c {
            '.' | '!' | '?' | '…' => {
                // A run such as "?!" or "..." ends together; its last mark counts.
                let mut end = i;
                while end + 1 < chars.len() && matches!(chars[end + 1], '.' | '!' | '?' | '…')
                {
                    end += 1;
                }
                let after = skip_closers(&chars, end + 1);
                if ends_sentence(&chars, start, i, after) {
                    // "?!" still asks; "!!" and "!..." exclaim.
                    let run = &chars[i..=end];
                    let mark = if run.contains(&'?') {
                        '?'
                    } else if run.contains(&'!') {
                        '!'
                    } else {
                        '.'
                    };
                    Some((mark, end + 1, after, true))
                } else {
                    i = end + 1;
                    continue;
                }
            }
            ',' | ';' | ':' if chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                Some((c, i + 1, i + 1, false))
            }
            '\n' => Some(('\n', i + 1, i + 1, line_break_ends_sentence(&chars, i))),
            _ => None,
        };
        let Some((mark, closers, next, sentence_end)) = boundary else {
            i += 1;
            continue;
        };
        // Closing quotes and brackets after the mark stay with the words.
        let words: String = chars[start..i]
            .iter()
            .chain(&chars[closers..next])
            .collect();
        let terminator = (mark != '\n').then_some(mark);
        push_clause(&mut clauses, &words, terminator);
        if sentence_end {
            push_sentence(&mut sentences, std::mem::take(&mut clauses));
        }
        start = next;
        i = next;
    }
    let rest: String = chars[start.min(chars.len())..].iter().collect();
    push_clause(&mut clauses, &rest, None);
    push_sentence(&mut sentences, clauses);
    sentences
}

/// Index after any closing quotes or brackets from `i`.
fn skip_closers(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && matches!(chars[i], '"' | '\'' | ')' | ']' | '”' | '’' | '»') {
        i += 1;
    }
    i
}

/// Whether the mark at `mark` (with what follows from `after`) ends the sentence begun
/// at `start`.
fn ends_sentence(chars: &[char], start: usize, mark: usize, after: usize) -> bool {
    if after < chars.len() && !chars[after].is_whitespace() {
        return false; // 3.14, e.g.x, example.com
    }
    if chars[mark] != '.' {
        return true;
    }
    // The word before the period.
    let word_start = chars[start..mark]
        .iter()
        .rposition(|c| c.is_whitespace() || *c == '(' || *c == '"')
        .map_or(start, |p| start + p + 1);
    let word: String = chars[word_start..mark]
        .iter()
        .collect::<String>()
        .to_lowercase();
    let is_initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    if ABBREVIATIONS.contains(&word.as_str()) || is_initial {
        // ... unless it is the end of the text.
        return next_word(chars, after).is_none();
    }
    // "the so-called sci. fi. genre": a lower-case word after a period continues.
    !next_word(chars, after).is_some_and(|w| w.starts_with(char::is_lowercase))
}

/// The word that starts after the whitespace at `from`: read up to its end only, so
/// looking ahead costs the length of one word, not of the rest of the text.
fn next_word(chars: &[char], from: usize) -> Option<String> {
    let rest = chars.get(from..)?;
    let start = rest.iter().position(|c| !c.is_whitespace())?;
    let word = rest[start..].iter().take_while(|c| !c.is_whitespace());
    Some(word.collect())
}

/// A single line break ends a sentence when the next line starts a new one (a capital,
/// a digit, a bullet or a quote); otherwise it is hard-wrapped prose and reads on.
fn line_break_ends_sentence(chars: &[char], newline: usize) -> bool {
    match chars.get(newline + 1) {
        Some(c) => !c.is_lowercase(),
        None => true,
    }
}

fn push_clause(clauses: &mut Vec<Clause>, words: &str, terminator: Option<char>) {
    let text = words.replace('\n', " ").trim().to_owned();
    if !text.chars().any(char::is_alphanumeric) {
        // Punctuation alone ("--", "...") says nothing; a terminator still belongs to
        // the clause before it.
        if let (Some(last), Some(t)) = (clauses.last_mut(), terminator) {
            if last.terminator.is_none() {
                last.terminator = Some(t);
            }
        }
        return;
    }
    // A clause longer than a sentence may be is cut at word boundaries.
    let mut rest = text.as_str();
    // (Only the first MAX_SENTENCE_CHARS of the rest are looked at each time round.)
    while byte_index(rest, MAX_SENTENCE_CHARS) < rest.len() {
        let cut = rest
            .char_indices()
            .take_while(|(i, _)| *i < byte_index(rest, MAX_SENTENCE_CHARS))
            .filter(|(_, c)| c.is_whitespace())
            .map(|(i, _)| i)
            .last()
            .unwrap_or_else(|| byte_index(rest, MAX_SENTENCE_CHARS));
        clauses.push(Clause {
            text: rest[..cut].trim().to_owned(),
            terminator: None,
        });
        rest = rest[cut..].trim_start();
    }
    clauses.push(Clause {
        text: rest.to_owned(),
        terminator,
    });
}

fn byte_index(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

/// Closes a sentence, cutting it into several when its clauses add up to more than
/// [`MAX_SENTENCE_CHARS`].
fn push_sentence(sentences: &mut Vec<Sentence>, clauses: Vec<Clause>) {
    let mut current: Vec<Clause> = Vec::new();
    let mut length = 0;
    for clause in clauses {
        let n = clause.text.chars().count() + 2;
        if !current.is_empty() && length + n > MAX_SENTENCE_CHARS {
            sentences.push(Sentence {
                clauses: std::mem::take(&mut current),
            });
            length = 0;
        }
        length += n;
        current.push(clause);
    }
    if !current.is_empty() {
        sentences.push(Sentence { clauses: current });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        split_sentences(text).iter().map(Sentence::text).collect()
    }

    #[test]
    fn sentences_end_at_their_marks() {
        assert_eq!(
            texts("Hello, world! How are you? Fine.  Thanks"),
            ["Hello, world!", "How are you?", "Fine.", "Thanks"]
        );
        let s = &split_sentences("Well; first: this, then that.")[0];
        let marks: Vec<_> = s.clauses.iter().map(|c| c.terminator).collect();
        assert_eq!(marks, [Some(';'), Some(':'), Some(','), Some('.')]);
        assert_eq!(s.clauses[0].text, "Well");
    }

    #[test]
    fn abbreviations_initials_and_numbers_do_not_end_sentences() {
        assert_eq!(
            texts("Dr. Smith paid $3.50 on Jan. 4, e.g. for J. R. R. Tolkien books. Done."),
            [
                "Dr. Smith paid $3.50 on Jan. 4, e.g. for J. R. R. Tolkien books.",
                "Done."
            ]
        );
        assert_eq!(
            texts("It costs 3.14 dollars... really?!"),
            ["It costs 3.14 dollars... really?"]
        );
        assert_eq!(
            texts("He said \"stop.\" Then left."),
            ["He said \"stop\".", "Then left."]
        );
        assert_eq!(texts("Ask Dr."), ["Ask Dr."]);
    }

    #[test]
    fn lines_and_paragraphs() {
        assert_eq!(
            texts("A heading\nThe first line\nwraps here.\n\nNew paragraph"),
            ["A heading", "The first line wraps here.", "New paragraph"]
        );
        assert!(split_sentences(" \n\n ... -- !! \n").is_empty());
        assert_eq!(texts("-- Hi. ... Bye"), ["-- Hi.", "Bye"]);
    }

    #[test]
    fn long_sentences_are_cut_at_words() {
        let long = "word ".repeat(300);
        let sentences = split_sentences(&long);
        assert!(sentences.len() >= 3, "{}", sentences.len());
        for s in &sentences {
            assert!(s.text().chars().count() <= MAX_SENTENCE_CHARS + 2);
            assert!(s.text().split(' ').all(|w| w == "word"), "{}", s.text());
        }
        let total: usize = sentences.iter().map(|s| s.text().split(' ').count()).sum();
        assert_eq!(total, 300);
        // Clauses are kept whole while they fit.
        let clauses = format!("{}, {}.", "a ".repeat(150).trim(), "b ".repeat(150).trim());
        assert_eq!(split_sentences(&clauses).len(), 2);
    }

    #[test]
    fn long_paragraphs_are_read_in_parts_at_line_breaks() {
        let line = "Some words here.\n".repeat(MAX_PARAGRAPH_BYTES / 8);
        let text = format!("{line}\n\nLast.");
        let parts: Vec<String> = Paragraphs::new(text.as_bytes())
            .map(Result::unwrap)
            .collect();
        assert!(parts.len() >= 3, "{}", parts.len());
        for part in &parts {
            assert!(part.len() < MAX_PARAGRAPH_BYTES + 20, "{}", part.len());
            assert!(!part.starts_with('\n') && !part.ends_with('\n'));
        }
        assert_eq!(parts.last().unwrap(), "Last.");
        // The parts say what the whole said.
        assert_eq!(split_sentences(&text).len(), MAX_PARAGRAPH_BYTES / 8 + 1);
        let bad: &[u8] = b"ok\n\xff\xfe\n";
        assert!(Paragraphs::new(bad).any(|p| p.is_err()));
    }
}
