//! Chats with a model, and their messages.

use serde::{Deserialize, Serialize};
use sqlx::FromRow;

use crate::error::StoreError;
use crate::store::{check_relative, now_ms, Store};

/// A chat as stored. Times are unix milliseconds; `updated_at` moves with each message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FromRow)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChatRecord {
    pub id: i64,
    pub title: String,
    pub model_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
}

impl MessageRole {
    /// The text stored in the database, the same as the serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::System => "system",
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
        }
    }

    fn from_db(text: &str) -> Result<MessageRole, StoreError> {
        match text {
            "system" => Ok(MessageRole::System),
            "user" => Ok(MessageRole::User),
            "assistant" => Ok(MessageRole::Assistant),
            other => Err(StoreError::Corrupt(format!(
                "unknown message role {other:?}"
            ))),
        }
    }
}

/// How a message came about, in milliseconds. A spoken turn's clock starts at the end
/// of the user's speech; a typed reply's at the request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MessageMetrics {
    /// Until the user's words were recognised.
    pub asr_ms: Option<f64>,
    /// Until the reply's first token.
    pub first_token_ms: Option<f64>,
    /// Until the reply's first sample of audio was ready to play.
    pub first_audio_ms: Option<f64>,
    /// Until the reply was whole (or cut off).
    pub total_ms: Option<f64>,
    /// The user spoke over the reply: its text is what had been said by then.
    #[serde(default)]
    pub interrupted: bool,
    /// Text tokens the reply's model wrote (None: not recorded, as by older builds).
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Frames of speech the reply's model generated (speech-to-speech replies).
    #[serde(default)]
    pub frames: Option<u64>,
}

/// A message as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MessageRecord {
    pub id: i64,
    pub chat_id: i64,
    pub role: MessageRole,
    pub content: String,
    /// Spoken form of the message, relative to the data dir.
    pub audio_path: Option<String>,
    pub metrics: Option<MessageMetrics>,
    pub created_at: i64,
}

/// What [`Store::add_message`] needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage<'a> {
    pub role: MessageRole,
    pub content: &'a str,
    /// Relative to the data dir.
    pub audio_path: Option<&'a str>,
    pub metrics: Option<&'a MessageMetrics>,
}

impl<'a> NewMessage<'a> {
    /// A message of text alone.
    pub fn text(role: MessageRole, content: &'a str) -> Self {
        Self {
            role,
            content,
            audio_path: None,
            metrics: None,
        }
    }
}

/// A `messages` row as SQLite returns it, before its role is checked.
#[derive(FromRow)]
struct MessageRow {
    id: i64,
    chat_id: i64,
    role: String,
    content: String,
    audio_path: Option<String>,
    metrics: Option<String>,
    created_at: i64,
}

impl TryFrom<MessageRow> for MessageRecord {
    type Error = StoreError;

    fn try_from(row: MessageRow) -> Result<MessageRecord, StoreError> {
        Ok(MessageRecord {
            id: row.id,
            chat_id: row.chat_id,
            role: MessageRole::from_db(&row.role)?,
            content: row.content,
            audio_path: row.audio_path,
            metrics: row
                .metrics
                .map(|json| serde_json::from_str(&json))
                .transpose()?,
            created_at: row.created_at,
        })
    }
}

impl Store {
    /// Starts an empty chat.
    pub async fn create_chat(
        &self,
        title: &str,
        model_id: Option<&str>,
    ) -> Result<ChatRecord, StoreError> {
        let now = now_ms();
        Ok(sqlx::query_as(
            "INSERT INTO chats (title, model_id, created_at, updated_at) VALUES (?, ?, ?, ?) \
             RETURNING *",
        )
        .bind(title)
        .bind(model_id)
        .bind(now)
        .bind(now)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Adds a message to a chat and marks the chat as just updated, together.
    pub async fn add_message(
        &self,
        chat_id: i64,
        message: NewMessage<'_>,
    ) -> Result<MessageRecord, StoreError> {
        if let Some(audio_path) = message.audio_path {
            check_relative(audio_path)?;
        }
        let metrics = message.metrics.map(serde_json::to_string).transpose()?;
        let now = now_ms();
        let mut tx = self.write_tx().await?;
        let bumped = sqlx::query("UPDATE chats SET updated_at = ? WHERE id = ?")
            .bind(now)
            .bind(chat_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if bumped == 0 {
            return Err(StoreError::NotFound {
                what: "chat",
                id: chat_id,
            });
        }
        let row: MessageRow = sqlx::query_as(
            "INSERT INTO messages (chat_id, role, content, audio_path, metrics, created_at) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(chat_id)
        .bind(message.role.as_str())
        .bind(message.content)
        .bind(message.audio_path)
        .bind(metrics)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        row.try_into()
    }

    /// The chat with this id, if any.
    pub async fn chat(&self, id: i64) -> Result<Option<ChatRecord>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM chats WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// A chat's messages in the order they were added.
    pub async fn messages(&self, chat_id: i64) -> Result<Vec<MessageRecord>, StoreError> {
        let rows: Vec<MessageRow> =
            sqlx::query_as("SELECT * FROM messages WHERE chat_id = ? ORDER BY id")
                .bind(chat_id)
                .fetch_all(&self.pool)
                .await?;
        rows.into_iter().map(MessageRecord::try_from).collect()
    }

    /// All chats, most recently updated first.
    pub async fn list_chats(&self) -> Result<Vec<ChatRecord>, StoreError> {
        Ok(
            sqlx::query_as("SELECT * FROM chats ORDER BY updated_at DESC, id DESC")
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// The chats whose title or any message contains `text` (ignoring the case of
    /// ASCII letters; taken literally, never as a pattern), most recently updated first.
    /// Blank text finds them all.
    pub async fn search_chats(&self, text: &str) -> Result<Vec<ChatRecord>, StoreError> {
        let text = text.trim();
        if text.is_empty() {
            return self.list_chats().await;
        }
        Ok(sqlx::query_as(
            "SELECT * FROM chats WHERE instr(lower(title), lower(?1)) > 0 \
                 OR id IN (SELECT chat_id FROM messages WHERE instr(lower(content), lower(?1)) > 0) \
             ORDER BY updated_at DESC, id DESC",
        )
        .bind(text)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Deletes a chat and its messages. Their audio files, if any, stay on disk.
    pub async fn delete_chat(&self, id: i64) -> Result<(), StoreError> {
        let deleted = sqlx::query("DELETE FROM chats WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Err(StoreError::NotFound { what: "chat", id });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_db_text_and_serde() {
        for role in [
            MessageRole::System,
            MessageRole::User,
            MessageRole::Assistant,
        ] {
            assert_eq!(MessageRole::from_db(role.as_str()).unwrap(), role);
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{}\"", role.as_str()));
        }
        assert!(matches!(
            MessageRole::from_db("tool"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
