//! Chat: stored conversations (listed, searched, opened, deleted), typed messages with
//! the reply streamed as `ChatEvent`s, and voice chat through the microphone and
//! speaker, which runs natively in the runtime until stopped. One chat activity at a
//! time: a typed reply or a voice chat.

use std::sync::Arc;

use izwi_runtime::{
    input_devices, output_devices, AudioError, CancellationToken, ChatModel, ChatParams,
    ChatRecord, ChatSettings, DeviceInfo, LiveChatOptions, LiveEvent, MessageRecord, Microphone,
    ModelStatus, Playback, SpeechChat, TurnEvent, VoiceChat, VoiceChatSetup, CHAT_PROMPT,
    DEFAULT_SYSTEM_PROMPT,
};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, State};
use tauri_specta::Event as _;

use super::models::blocking;
use crate::error::{AppError, AppResult, ErrorKind};
use crate::events::ChatEvent;
use crate::state::{lock, AppState};

/// Where chat events go: the webview, or a test's list.
pub type ChatEvents = Arc<dyn Fn(ChatEvent) + Send + Sync>;

/// A microphone or speaker the user can pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct AudioDevice {
    /// What settings remember.
    pub id: String,
    pub name: String,
    pub is_default: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct AudioDevices {
    pub inputs: Vec<AudioDevice>,
    pub outputs: Vec<AudioDevice>,
}

/// A typed message's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct ChatSent {
    /// The chat it went into (new when none was given).
    pub chat_id: i64,
    /// The reply: whole, or what had come when it was stopped (then not stored).
    pub reply: String,
    pub stopped: bool,
}

fn device(info: DeviceInfo) -> AudioDevice {
    AudioDevice {
        id: info.id,
        name: info.name,
        is_default: info.is_default,
    }
}

impl AppState {
    /// Stored chats whose title or messages contain `query` (all when blank).
    pub async fn list_chats(&self, query: String) -> AppResult<Vec<ChatRecord>> {
        Ok(self.runtime.search_chats(&query).await?)
    }

    pub async fn get_chat_messages(&self, chat_id: i64) -> AppResult<Vec<MessageRecord>> {
        Ok(self.runtime.chat_messages(chat_id).await?)
    }

    /// Deletes a chat and its recordings (the UI asks first). Not the one in use.
    pub async fn delete_chat(&self, chat_id: i64) -> AppResult<()> {
        if self.chat_activity_in(chat_id) {
            return Err(AppError::invalid(
                "this chat is in use: stop the reply or voice chat first",
            ));
        }
        Ok(self.runtime.delete_chat(chat_id).await?)
    }

    /// The microphones and speakers there are now.
    pub async fn list_audio_devices(&self) -> AppResult<AudioDevices> {
        blocking(|| {
            let inputs = input_devices().map_err(|e| AppError::internal(e.to_string()))?;
            let outputs = output_devices().map_err(|e| AppError::internal(e.to_string()))?;
            Ok(AudioDevices {
                inputs: inputs.into_iter().map(device).collect(),
                outputs: outputs.into_iter().map(device).collect(),
            })
        })
        .await
    }

    pub async fn get_chat_settings(&self) -> AppResult<ChatSettings> {
        Ok(self.runtime.chat_settings().await)
    }

    /// Saves the chat settings. The page names installed models and library voices
    /// only, never files: a path would make the app load a file the user did not choose
    /// (the CLI may give paths; they are its user's own).
    pub async fn set_chat_settings(&self, settings: ChatSettings) -> AppResult<()> {
        let models = self.runtime.models();
        let installed = |id: &str| {
            models
                .iter()
                .any(|m| m.id == id && m.status == ModelStatus::Installed)
        };
        for (what, spec) in [
            ("chat model", &settings.llm),
            ("speech model", &settings.asr),
            ("speech-to-speech model", &settings.s2s),
        ] {
            if let Some(spec) = spec.as_deref().filter(|s| !installed(s)) {
                return Err(AppError::invalid(format!(
                    "the {what} {spec:?} is not an installed model"
                )));
            }
        }
        if let Some(voice) = &settings.voice {
            let voices = self.runtime.list_voices().await?;
            let known = voices
                .iter()
                .any(|v| v.name.eq_ignore_ascii_case(voice) || v.id.to_string() == *voice);
            if !known && !installed(voice) {
                return Err(AppError::invalid(format!(
                    "the voice {voice:?} is not in the voice library"
                )));
            }
        }
        Ok(self.runtime.set_chat_settings(&settings).await?)
    }

    /// Says `text` in chat `chat_id` (a new chat when None) with the chat model of the
    /// settings; the reply streams as [`ChatEvent::ReplyText`].
    pub async fn send_chat_message(
        &self,
        chat_id: Option<i64>,
        text: String,
        events: ChatEvents,
    ) -> AppResult<ChatSent> {
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(AppError::invalid("the message is empty"));
        }
        let llm = chosen_llm(&self.runtime.chat_settings().await)?;
        let mut conversation = self
            .runtime
            .open_conversation(chat_id, DEFAULT_SYSTEM_PROMPT)
            .await?;
        let stop = self.start_chat_activity(chat_id)?;
        let _done = ActivityGuard(self);
        events(ChatEvent::Thinking);
        let model = self.runtime.open_chat_model(&llm).await?;
        let mut reply = String::new();
        let params = ChatParams::default();
        let said = {
            let say = self
                .runtime
                .say(&model, &mut conversation, &text, &params, |delta| {
                    reply.push_str(delta);
                    events(ChatEvent::ReplyText {
                        text: delta.to_string(),
                    });
                });
            tokio::select! {
                said = say => Some(said),
                () = stop.cancelled() => None,
            }
        };
        let chat_id = conversation.chat_id().or(chat_id).ok_or_else(|| {
            AppError::new(ErrorKind::Cancelled, "stopped before the message was kept")
        })?;
        match said {
            Some(said) => Ok(ChatSent {
                chat_id,
                reply: said?.text,
                stopped: false,
            }),
            None => Ok(ChatSent {
                chat_id,
                reply,
                stopped: true,
            }),
        }
    }

    /// Starts voice chat in chat `chat_id` (a new chat when None) with the models and
    /// devices of the settings: hands-free, or with `push_to_talk` the user talks while
    /// [`AppState::set_talking`] holds true. It runs until [`AppState::stop_chat`]; what
    /// happens is sent as `ChatEvent`s, the last being [`ChatEvent::Stopped`].
    pub async fn start_voice_chat(
        &self,
        chat_id: Option<i64>,
        push_to_talk: bool,
        events: ChatEvents,
    ) -> AppResult<()> {
        let settings = self.runtime.chat_settings().await;
        // Loaded and opened here, so a model that cannot load or a missing or busy
        // device fails the start with its reason; before the activity is registered,
        // so such a failure leaves none behind.
        let answerer = match &settings.s2s {
            Some(s2s) => Answerer::SpeechToSpeech(self.runtime.open_speech_chat(s2s).await?),
            None => {
                let llm = chosen_llm(&settings)?;
                let voice = settings.voice.clone().ok_or_else(|| {
                    AppError::new(
                        ErrorKind::Model,
                        "choose the voice that answers (Voices has them; none installed: download one in Models)",
                    )
                })?;
                let asr = match settings.asr.clone() {
                    Some(asr) => asr,
                    None => self.runtime.default_transcribe_model().await?,
                };
                Answerer::Cascade {
                    setup: VoiceChatSetup {
                        asr,
                        voice,
                        language: None,
                    },
                    model: self.runtime.open_chat_model(&llm).await?,
                }
            }
        };
        let system = match answerer {
            Answerer::SpeechToSpeech(_) => CHAT_PROMPT,
            Answerer::Cascade { .. } => DEFAULT_SYSTEM_PROMPT,
        };
        let conversation = self.runtime.open_conversation(chat_id, system).await?;
        let device = |e: AudioError| AppError::new(ErrorKind::Audio, e.to_string());
        let microphone = Microphone::open(settings.input_device.as_deref()).map_err(device)?;
        let playback = Playback::open(settings.output_device.as_deref()).map_err(device)?;
        let stop = self.start_chat_activity(chat_id)?;
        let talk = push_to_talk.then(|| {
            let (key, talk) = tokio::sync::watch::channel(false);
            *lock(&self.talk_key) = Some(key);
            talk
        });
        let options = LiveChatOptions {
            end_silence_ms: settings.end_silence_ms,
            barge_in_ms: settings
                .barge_in
                .then_some(LiveChatOptions::default().barge_in_ms)
                .flatten(),
            max_turns: None,
            talk,
        };
        events(ChatEvent::Listening {
            chat_id: conversation.chat_id(),
            input: microphone.name().to_string(),
            output: playback.name().to_string(),
        });
        let runtime = self.runtime.clone();
        let activity = self.chat_activity.clone();
        let talk_key = self.talk_key.clone();
        let handle = tokio::runtime::Handle::current();
        // The conversation's future borrows the speaker and is not `Send`: it runs on a
        // blocking thread of its own, driven by the app's runtime.
        tokio::task::spawn_blocking(move || {
            let on_event = |event: LiveEvent<'_>| {
                if let Some(event) = chat_event(&event) {
                    events(event);
                }
            };
            let params = ChatParams::default();
            let chat = match &answerer {
                Answerer::Cascade { setup, model } => VoiceChat::Cascade {
                    setup,
                    model,
                    params: &params,
                },
                Answerer::SpeechToSpeech(speech_chat) => VoiceChat::SpeechToSpeech(speech_chat),
            };
            let result = handle.block_on(runtime.live_chat(
                chat,
                conversation,
                microphone,
                &playback,
                &options,
                &stop,
                on_event,
            ));
            *lock(&talk_key) = None;
            *lock(&activity) = None;
            events(ChatEvent::Stopped {
                error: result.err().map(|e| e.to_string()),
            });
        });
        Ok(())
    }

    /// Push-to-talk: the user holds the key (true) or lets go (false).
    pub fn set_talking(&self, talking: bool) -> AppResult<()> {
        match &*lock(&self.talk_key) {
            Some(key) => {
                key.send_replace(talking);
                Ok(())
            }
            None => Err(AppError::invalid("no push-to-talk voice chat is running")),
        }
    }

    /// Stops the typed reply or the voice chat under way; false when there is none.
    pub fn stop_chat(&self) -> bool {
        match &*lock(&self.chat_activity) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Registers a chat activity in `chat_id`; refused while another runs.
    fn start_chat_activity(&self, chat_id: Option<i64>) -> AppResult<CancellationToken> {
        let mut activity = lock(&self.chat_activity);
        if activity.is_some() {
            return Err(AppError::invalid(
                "a reply or voice chat is under way: stop it first",
            ));
        }
        let token = CancellationToken::new();
        *activity = Some((chat_id, token.clone()));
        Ok(token)
    }

    fn chat_activity_in(&self, chat_id: i64) -> bool {
        let activity = lock(&self.chat_activity);
        activity
            .as_ref()
            .is_some_and(|(id, _)| *id == Some(chat_id))
    }
}

/// What answers a voice chat, as the settings chose.
enum Answerer {
    Cascade {
        setup: VoiceChatSetup,
        model: ChatModel,
    },
    SpeechToSpeech(SpeechChat),
}

/// Ends a typed reply's activity however the command ends.
struct ActivityGuard<'a>(&'a AppState);

impl Drop for ActivityGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.0.chat_activity) = None;
    }
}

fn chosen_llm(settings: &ChatSettings) -> AppResult<String> {
    settings.llm.clone().ok_or_else(|| {
        AppError::new(
            ErrorKind::Model,
            "choose a chat model first (none installed: import a .gguf chat model in Models)",
        )
    })
}

/// What the page is told of a live chat's event.
fn chat_event(event: &LiveEvent<'_>) -> Option<ChatEvent> {
    Some(match event {
        LiveEvent::SpeechStarted => ChatEvent::SpeechStarted,
        LiveEvent::SpeechEnded => ChatEvent::SpeechEnded,
        LiveEvent::BargeIn => ChatEvent::BargeIn,
        LiveEvent::NothingHeard => ChatEvent::NothingHeard,
        LiveEvent::Level(rms) => ChatEvent::Level { rms: *rms },
        LiveEvent::Turn(TurnEvent::Heard(text)) => ChatEvent::Heard {
            text: text.to_string(),
        },
        LiveEvent::Turn(TurnEvent::ReplyText(text)) => ChatEvent::ReplyText {
            text: text.to_string(),
        },
        LiveEvent::Turn(TurnEvent::ReplySpoken(_)) => return None,
        LiveEvent::TurnDone(turn) => ChatEvent::TurnDone {
            chat_id: turn.chat_id,
            user_text: turn.user_text.clone(),
            reply_text: turn.reply_text.clone(),
            metrics: turn.metrics.clone(),
        },
    })
}

/// Sends chat events to the app's webviews.
fn to_webview(app: AppHandle) -> ChatEvents {
    Arc::new(move |event: ChatEvent| {
        if let Err(e) = event.emit(&app) {
            tracing::warn!(error = %e, "could not send a chat event to the webview");
        }
    })
}

#[tauri::command]
#[specta::specta]
pub async fn list_chats(state: State<'_, AppState>, query: String) -> AppResult<Vec<ChatRecord>> {
    state.list_chats(query).await
}

#[tauri::command]
#[specta::specta]
pub async fn get_chat_messages(
    state: State<'_, AppState>,
    chat_id: i64,
) -> AppResult<Vec<MessageRecord>> {
    state.get_chat_messages(chat_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn delete_chat(state: State<'_, AppState>, chat_id: i64) -> AppResult<()> {
    state.delete_chat(chat_id).await
}

#[tauri::command]
#[specta::specta]
pub async fn list_audio_devices(state: State<'_, AppState>) -> AppResult<AudioDevices> {
    state.list_audio_devices().await
}

#[tauri::command]
#[specta::specta]
pub async fn get_chat_settings(state: State<'_, AppState>) -> AppResult<ChatSettings> {
    state.get_chat_settings().await
}

#[tauri::command]
#[specta::specta]
pub async fn set_chat_settings(
    state: State<'_, AppState>,
    settings: ChatSettings,
) -> AppResult<()> {
    state.set_chat_settings(settings).await
}

#[tauri::command]
#[specta::specta]
pub async fn send_chat_message(
    app: AppHandle,
    state: State<'_, AppState>,
    chat_id: Option<i64>,
    text: String,
) -> AppResult<ChatSent> {
    state
        .send_chat_message(chat_id, text, to_webview(app))
        .await
}

#[tauri::command]
#[specta::specta]
pub async fn start_voice_chat(
    app: AppHandle,
    state: State<'_, AppState>,
    chat_id: Option<i64>,
    push_to_talk: bool,
) -> AppResult<()> {
    state
        .start_voice_chat(chat_id, push_to_talk, to_webview(app))
        .await
}

/// Push-to-talk: true while the user holds the talk key or button.
#[tauri::command]
#[specta::specta]
pub async fn set_talking(state: State<'_, AppState>, talking: bool) -> AppResult<()> {
    state.set_talking(talking)
}

/// Stops the reply being written or the voice chat; false when none was under way.
#[tauri::command]
#[specta::specta]
pub async fn stop_chat(state: State<'_, AppState>) -> AppResult<bool> {
    Ok(state.stop_chat())
}
