// Chat: talk with a local chat model, typed or by voice, hands-free or push-to-talk
// (microphone → speech recognition → chat model → voice → speaker, interruptible), in
// stored conversations.

import { useEffect, useState } from 'react'
import { EmptyState } from '../../components/EmptyState'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { navigate } from '../../lib/nav'
import { useModels } from '../models/modelsStore'
import { useVoices } from '../voices/voicesStore'
import { ChatList } from './ChatList'
import { ChatModelPicker, VoiceChatSettings } from './ChatSettingsForm'
import { chatStore, loadChats, loadChatSettings, loadMessages, useChat, useShownSettings } from './chatStore'
import { installedChatModels, voiceChatBlocker } from './choices'
import { Composer } from './Composer'
import { MessageList } from './MessageList'

function FirstRun() {
  return (
    <EmptyState
      icon="chat"
      title="Import a chat model to start"
      actions={
        <button type="button" className="btn btn-primary" onClick={() => navigate('models')}>
          <Icon name="models" /> Open Models
        </button>
      }
    >
      <p>Import a chat model (.gguf, Llama architecture, e.g. SmolLM2-135M-Instruct) in Models.</p>
      <p>It runs on this computer: what you say and what it answers stay here.</p>
    </EmptyState>
  )
}

export function ChatPage() {
  const { models, loaded, loadError } = useModels()
  const voicesState = useVoices()
  const openId = useChat((s) => s.openId)
  const settingsError = useChat((s) => s.settingsError)
  const s2s = useShownSettings()?.s2s ?? null
  const [showSettings, setShowSettings] = useState(false)

  useEffect(() => {
    void loadChats()
    void loadChatSettings()
    // Coming back to the page: the open chat as it is stored now.
    const { openId: id } = chatStore.get()
    if (id != null) void loadMessages(id)
  }, [])

  const noModel = loaded && !loadError && installedChatModels(models).length === 0

  return (
    <div className="page page-chat">
      <header className="page-header">
        <h1 className="page-title">Chat</h1>
        <div className="options" role="group" aria-label="Chat options">
          <ChatModelPicker />
        </div>
        <div className="page-actions">
          <button
            type="button"
            className={`btn btn-sm${showSettings ? ' btn-active' : ''}`}
            aria-expanded={showSettings}
            aria-controls="voice-chat-settings"
            onClick={() => setShowSettings((v) => !v)}
          >
            <Icon name="sliders" size={13} /> Voice chat settings
          </button>
        </div>
      </header>
      {settingsError != null && (
        <ErrorNote
          error={settingsError}
          title="Could not read the chat settings"
          onRetry={() => void loadChatSettings()}
        />
      )}
      {showSettings && <VoiceChatSettings />}
      <div className="split">
        <ChatList />
        <div className="split-main chat-main">
          {noModel && openId == null ? (
            <FirstRun />
          ) : (
            <>
              <MessageList />
              {noModel ? (
                <p className="chat-hint chat-no-model">
                  Import a chat model (.gguf, Llama architecture, e.g. SmolLM2-135M-Instruct) in Models to go on with
                  this chat.{' '}
                  <button type="button" className="link" onClick={() => navigate('models')}>
                    Open Models
                  </button>
                </p>
              ) : (
                <Composer
                  blocker={loaded && voicesState.loaded ? voiceChatBlocker(models, voicesState.voices, s2s) : null}
                />
              )}
            </>
          )}
        </div>
      </div>
    </div>
  )
}
