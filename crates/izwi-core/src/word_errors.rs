//! Word errors: how far a transcript is from a reference, counted in words. The
//! real-speech tests and `izwi bench` score text with this one definition.

/// The words of `text` as they are compared: lower case, letters, digits and
/// apostrophes; anything else (punctuation, hyphens, spaces) separates words.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Word-level edit distance: substitutions, insertions and deletions that turn
/// `reference` into `hypothesis`.
pub fn word_errors(reference: &[String], hypothesis: &[String]) -> usize {
    let mut row: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, h) in hypothesis.iter().enumerate() {
            let substitution = diagonal + usize::from(r != h);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[hypothesis.len()]
}

/// Word errors over the reference's word count (an empty reference counts as one word,
/// so any hypothesis word is an error).
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let reference = words(reference);
    word_errors(&reference, &words(hypothesis)) as f64 / reference.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_substitutions_insertions_and_deletions() {
        let w = |s: &str| words(s);
        assert_eq!(word_errors(&w("a b c"), &w("a b c")), 0);
        assert_eq!(word_errors(&w("a b c"), &w("a x c")), 1);
        assert_eq!(word_errors(&w("a b c"), &w("a c")), 1);
        assert_eq!(word_errors(&w("a b c"), &w("a b c d")), 1);
        assert_eq!(word_errors(&w("a b c"), &w("")), 3);
        assert_eq!(word_errors(&w(""), &w("a b")), 2);
    }

    #[test]
    fn ignores_case_and_punctuation() {
        let reference = "Ask not what your country can do for you.";
        assert_eq!(
            word_error_rate(reference, "ask not, what YOUR country can do for you"),
            0.0
        );
        let one_wrong = word_error_rate(reference, "ask not what our country can do for you");
        assert!((one_wrong - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(words("ill-disposed, don't"), ["ill", "disposed", "don't"]);
    }
}
