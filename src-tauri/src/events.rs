//! Events to the webview: every `izwi_runtime::Event` is emitted as the typed
//! tauri-specta event `RuntimeEvent` (`events.runtimeEvent.listen(e => e.payload)`),
//! but for speech audio, which goes as binary over the page's speech audio channel
//! (crate::speech_audio); the files a second launch was opened with as `FilesOpened`,
//! and what a chat is doing as `ChatEvent`. The API server, when it runs, follows the
//! runtime's events too (its streamed answers).

use std::sync::Arc;

use izwi_runtime::{Event, EventSink, MessageMetrics};
use izwi_server::ServerEvents;
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};
use tauri_specta::Event as _;

use crate::speech_audio::{SpeechAudioFrame, SpeechAudioStream};

/// The payload is the runtime's event itself, tagged by `type`; never `speech_audio`,
/// whose samples reach the page as a `SpeechAudioFrame`.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(transparent)]
pub struct RuntimeEvent(pub Event);

/// Files a second launch of Izwi was opened with (it hands them over and exits), to be
/// queued as the files of the first launch are.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(transparent)]
pub struct FilesOpened(pub Vec<String>);

/// What a typed reply or a voice chat is doing, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// The chat model is being loaded or is reading the prompt.
    Thinking,
    /// Voice chat is listening on `input` and answers on `output`; `chat_id` is None
    /// until the first turn creates the chat.
    Listening {
        chat_id: Option<i64>,
        input: String,
        output: String,
    },
    /// The microphone's loudness (root mean square, 0 to 1), ten times a second.
    Level {
        rms: f32,
    },
    SpeechStarted,
    SpeechEnded,
    /// The user's words, recognised.
    Heard {
        text: String,
    },
    /// The next piece of the reply.
    ReplyText {
        text: String,
    },
    /// The user spoke over the reply, which stopped.
    BargeIn,
    /// What the user said held no words: no turn was taken.
    NothingHeard,
    /// A spoken turn is over and stored.
    TurnDone {
        chat_id: i64,
        user_text: String,
        reply_text: String,
        metrics: MessageMetrics,
    },
    /// Voice chat ended: stopped by the user, or by `error`.
    Stopped {
        error: Option<String>,
    },
}

/// Forwards the runtime's events to every webview of the app, and to the API's
/// requests that follow them.
pub struct WebviewEvents<R: Runtime> {
    app: AppHandle<R>,
    speech_audio: SpeechAudioStream,
    api: Arc<ServerEvents>,
}

impl<R: Runtime> WebviewEvents<R> {
    pub fn new(app: AppHandle<R>, speech_audio: SpeechAudioStream, api: Arc<ServerEvents>) -> Self {
        Self {
            app,
            speech_audio,
            api,
        }
    }
}

impl<R: Runtime> EventSink for WebviewEvents<R> {
    fn emit(&self, event: Event) {
        if self.api.is_followed() {
            self.api.emit(event.clone());
        }
        if let Event::SpeechAudio {
            job_id,
            index,
            total,
            sample_rate,
            gap_before,
            samples,
        } = &event
        {
            let frame =
                SpeechAudioFrame::new(*job_id, *index, *total, *sample_rate, *gap_before, samples);
            self.speech_audio.send(frame);
            return;
        }
        if let Err(e) = RuntimeEvent(event).emit(&self.app) {
            tracing::warn!(error = %e, "could not send an event to the webview");
        }
    }
}
