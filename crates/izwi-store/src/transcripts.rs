//! Transcripts, their timed segments, and full-text search over both.

use serde::{Deserialize, Serialize};
use sqlx::{FromRow, SqliteConnection};

use crate::error::StoreError;
use crate::store::{check_relative, now_ms, Store};

/// A transcript as stored. Times are unix milliseconds, `duration` is in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FromRow)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TranscriptRecord {
    pub id: i64,
    /// The job that made it; `None` for transcripts not made by a job.
    pub job_id: Option<i64>,
    pub title: String,
    /// The user's file, absolute, as given.
    pub source_path: String,
    /// A copy of the audio under the data dir, relative to it.
    pub audio_path: Option<String>,
    pub language: Option<String>,
    pub duration: f64,
    pub model_id: Option<String>,
    pub rtf: Option<f64>,
    pub created_at: i64,
}

/// One timed piece of a transcript. `idx` is chosen by the caller and unique within its
/// transcript; `start` and `end` are seconds into the audio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FromRow)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SegmentRecord {
    pub idx: i64,
    #[sqlx(rename = "start_secs")]
    pub start: f64,
    #[sqlx(rename = "end_secs")]
    pub end: f64,
    /// The text shown, exported and searched: the user's edit if there is one.
    pub text: String,
    /// What the model heard, when the user has edited `text`; `None` while unedited.
    #[sqlx(rename = "original_text")]
    #[serde(default)]
    pub original: Option<String>,
    /// Each word's time in what the model heard; empty without word timestamps.
    #[sqlx(json)]
    #[serde(default)]
    pub words: Vec<WordRecord>,
}

/// A word of a segment and when it is said (seconds into the audio).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WordRecord {
    /// With its leading space and punctuation, as in the segment's text.
    pub word: String,
    pub start: f64,
    pub end: f64,
    pub probability: f64,
}

/// What [`Store::create_transcript`] and [`Store::save_transcript`] need.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewTranscript {
    pub job_id: Option<i64>,
    pub title: String,
    pub source_path: String,
    /// Relative to the data dir; see [`Store::relative`].
    pub audio_path: Option<String>,
    pub language: Option<String>,
    pub duration: f64,
    pub model_id: Option<String>,
    pub rtf: Option<f64>,
}

/// One match of [`Store::search_transcripts`]: a segment, or a transcript's title (then
/// the segment fields are `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FromRow)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchHit {
    pub transcript_id: i64,
    pub job_id: Option<i64>,
    pub title: String,
    pub segment_idx: Option<i64>,
    pub start: Option<f64>,
    pub end: Option<f64>,
    /// The matching text with matched words in `[` `]`, cut to a few words around them.
    pub snippet: String,
}

impl Store {
    /// Records a transcript without segments; add them with [`Store::append_segments`].
    pub async fn create_transcript(&self, new: NewTranscript) -> Result<i64, StoreError> {
        let mut tx = self.write_tx().await?;
        let id = insert_transcript(&mut tx, &new).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Adds segments to a transcript, all or none.
    pub async fn append_segments(
        &self,
        transcript_id: i64,
        segments: &[SegmentRecord],
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM transcripts WHERE id = ?")
            .bind(transcript_id)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound {
                what: "transcript",
                id: transcript_id,
            });
        }
        insert_segments(&mut tx, transcript_id, segments).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records a transcript and its segments, all or none.
    pub async fn save_transcript(
        &self,
        new: NewTranscript,
        segments: &[SegmentRecord],
    ) -> Result<i64, StoreError> {
        let mut tx = self.write_tx().await?;
        let id = insert_transcript(&mut tx, &new).await?;
        insert_segments(&mut tx, id, segments).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// The transcript with this id, if any.
    pub async fn transcript(&self, id: i64) -> Result<Option<TranscriptRecord>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM transcripts WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The transcript a job made, if any.
    pub async fn transcript_for_job(
        &self,
        job_id: i64,
    ) -> Result<Option<TranscriptRecord>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM transcripts WHERE job_id = ?")
            .bind(job_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// A transcript's segments in time order (ties by `idx`); empty if it has none or
    /// does not exist.
    pub async fn segments(&self, transcript_id: i64) -> Result<Vec<SegmentRecord>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT idx, start_secs, end_secs, text, original_text, words FROM segments \
             WHERE transcript_id = ? ORDER BY start_secs, idx",
        )
        .bind(transcript_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Transcripts, newest first.
    pub async fn list_transcripts(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<TranscriptRecord>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT * FROM transcripts ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        )
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Segments and titles containing every word of `text`, best match first. The last
    /// word also matches as a prefix, for search as you type. Any text is accepted:
    /// words are matched literally, never as search operators; blank text finds nothing.
    pub async fn search_transcripts(
        &self,
        text: &str,
        limit: i64,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        Ok(sqlx::query_as(
            "SELECT transcript_id, job_id, title, segment_idx, start, \"end\", snippet FROM ( \
                 SELECT s.transcript_id, t.job_id, t.title, s.idx AS segment_idx, \
                        s.start_secs AS start, s.end_secs AS \"end\", \
                        snippet(segments_fts, 0, '[', ']', '…', 16) AS snippet, \
                        segments_fts.rank AS score \
                 FROM segments_fts \
                 JOIN segments s ON s.id = segments_fts.rowid \
                 JOIN transcripts t ON t.id = s.transcript_id \
                 WHERE segments_fts MATCH ?1 \
                 UNION ALL \
                 SELECT t.id, t.job_id, t.title, NULL, NULL, NULL, \
                        snippet(transcripts_fts, 0, '[', ']', '…', 16), \
                        transcripts_fts.rank \
                 FROM transcripts_fts \
                 JOIN transcripts t ON t.id = transcripts_fts.rowid \
                 WHERE transcripts_fts MATCH ?1 \
             ) ORDER BY score, transcript_id DESC, segment_idx LIMIT ?2",
        )
        .bind(query)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Replaces a segment's text with the user's correction, keeping what the model
    /// heard beside it (editing back to that text makes the segment unedited again).
    /// Search follows the edit. Returns the segment as it is now.
    pub async fn edit_segment(
        &self,
        transcript_id: i64,
        idx: i64,
        text: &str,
    ) -> Result<SegmentRecord, StoreError> {
        // SET expressions see the row as it was, so `original_text` is taken before
        // `text` changes.
        self.update_segment(
            "UPDATE segments SET \
                 original_text = CASE WHEN coalesce(original_text, text) = ?1 THEN NULL \
                                      ELSE coalesce(original_text, text) END, \
                 text = ?1 \
             WHERE transcript_id = ?2 AND idx = ?3 \
             RETURNING idx, start_secs, end_secs, text, original_text, words",
            Some(text),
            transcript_id,
            idx,
        )
        .await
    }

    /// Puts back what the model heard in place of the user's edit, if there is one.
    /// Returns the segment as it is now.
    pub async fn revert_segment(
        &self,
        transcript_id: i64,
        idx: i64,
    ) -> Result<SegmentRecord, StoreError> {
        self.update_segment(
            "UPDATE segments SET text = coalesce(original_text, text), original_text = NULL \
             WHERE transcript_id = ?2 AND idx = ?3 \
             RETURNING idx, start_secs, end_secs, text, original_text, words",
            None,
            transcript_id,
            idx,
        )
        .await
    }

    async fn update_segment(
        &self,
        sql: &'static str,
        text: Option<&str>,
        transcript_id: i64,
        idx: i64,
    ) -> Result<SegmentRecord, StoreError> {
        // The transcript is checked first, so a missing one is named as such.
        let mut tx = self.write_tx().await?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM transcripts WHERE id = ?")
            .bind(transcript_id)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound {
                what: "transcript",
                id: transcript_id,
            });
        }
        let segment: SegmentRecord = sqlx::query_as(sql)
            .bind(text)
            .bind(transcript_id)
            .bind(idx)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound {
                what: "segment",
                id: idx,
            })?;
        tx.commit().await?;
        Ok(segment)
    }

    /// Deletes a transcript and its segments. The audio file, if any, stays on disk.
    pub async fn delete_transcript(&self, id: i64) -> Result<(), StoreError> {
        let deleted = sqlx::query("DELETE FROM transcripts WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Err(StoreError::NotFound {
                what: "transcript",
                id,
            });
        }
        Ok(())
    }
}

async fn insert_transcript(
    conn: &mut SqliteConnection,
    new: &NewTranscript,
) -> Result<i64, StoreError> {
    if let Some(audio_path) = &new.audio_path {
        check_relative(audio_path)?;
    }
    // Checked here so a wrong id reads as "job 7 does not exist", not as a foreign key
    // failure.
    if let Some(job_id) = new.job_id {
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM jobs WHERE id = ?")
            .bind(job_id)
            .fetch_optional(&mut *conn)
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound {
                what: "job",
                id: job_id,
            });
        }
    }
    Ok(sqlx::query_scalar(
        "INSERT INTO transcripts \
         (job_id, title, source_path, audio_path, language, duration, model_id, rtf, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(new.job_id)
    .bind(&new.title)
    .bind(&new.source_path)
    .bind(&new.audio_path)
    .bind(&new.language)
    .bind(new.duration)
    .bind(&new.model_id)
    .bind(new.rtf)
    .bind(now_ms())
    .fetch_one(&mut *conn)
    .await?)
}

async fn insert_segments(
    conn: &mut SqliteConnection,
    transcript_id: i64,
    segments: &[SegmentRecord],
) -> Result<(), StoreError> {
    for segment in segments {
        sqlx::query(
            "INSERT INTO segments \
             (transcript_id, idx, start_secs, end_secs, text, original_text, words) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(transcript_id)
        .bind(segment.idx)
        .bind(segment.start)
        .bind(segment.end)
        .bind(&segment.text)
        .bind(&segment.original)
        .bind(sqlx::types::Json(&segment.words))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Builds an FTS5 MATCH expression from what the user typed: each whitespace-separated
/// word becomes a quoted string (so `AND`, `NEAR(`, `*`, `-`, `:` and `"` are plain text),
/// the words are ANDed, and the last is a prefix. Words without a letter or digit are
/// dropped: the tokenizer would reduce them to nothing. `None` when nothing is left.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return None;
    }
    Some(format!("{}*", words.join(" AND ")))
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn words_are_quoted_anded_and_last_is_prefix() {
        assert_eq!(fts_query("hello").unwrap(), r#""hello"*"#);
        assert_eq!(
            fts_query("  hello   big\tworld ").unwrap(),
            r#""hello" AND "big" AND "world"*"#
        );
    }

    #[test]
    fn operators_are_plain_words() {
        assert_eq!(
            fts_query("cats AND dogs").unwrap(),
            r#""cats" AND "AND" AND "dogs"*"#
        );
        assert_eq!(fts_query("NEAR(a b)").unwrap(), r#""NEAR(a" AND "b)"*"#);
        assert_eq!(fts_query("-x col:y").unwrap(), r#""-x" AND "col:y"*"#);
        assert_eq!(fts_query("pre* ^start").unwrap(), r#""pre*" AND "^start"*"#);
    }

    #[test]
    fn quotes_are_doubled() {
        assert_eq!(fts_query(r#"say "hi""#).unwrap(), r#""say" AND """hi"""*"#);
        assert_eq!(fts_query(r#"a"b"#).unwrap(), r#""a""b"*"#);
    }

    #[test]
    fn blank_or_symbol_only_text_is_no_query() {
        assert_eq!(fts_query(""), None);
        assert_eq!(fts_query(" \t\n"), None);
        assert_eq!(fts_query(r#"" * - ( ) AND"#).unwrap(), r#""AND"*"#);
        assert_eq!(fts_query(r#"" * - ( )"#), None);
    }

    #[test]
    fn non_ascii_words_are_kept() {
        assert_eq!(fts_query("café ñandú").unwrap(), r#""café" AND "ñandú"*"#);
    }
}
