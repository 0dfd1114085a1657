// The Chat screen's state: stored conversations (searched, opened, deleted), the open
// chat's messages, the chat settings and audio devices, and the one chat activity the
// backend runs at a time: a typed reply or a voice chat (hands-free, or push-to-talk
// while the user holds a key or button), followed through `chatEvent`s.
// The turn under way is shown from the events; once the backend has stored it, the
// messages are read again and replace it.

import { events, type AudioDevices, type ChatEvent, type ChatRecord, type MessageRecord } from '../../bindings'
import { api } from '../../lib/api'
import { ApiError } from '../../lib/errors'
import { createStore, useStore } from '../../lib/store'
import { modelsStore, useModels, type ModelsState } from '../models/modelsStore'
import { useVoices, voicesStore, type VoicesState } from '../voices/voicesStore'
import { effectiveSettings, fullSettings, sameSettings, type FullChatSettings } from './choices'

/** What the activity is doing now, for the state line. */
export type Phase = 'idle' | 'starting' | 'listening' | 'hearing' | 'thinking' | 'writing' | 'speaking'

/** How voice chat knows the user speaks: a pause detected, or a key or button held. */
export type VoiceMode = 'hands-free' | 'push-to-talk'

/** The exchange under way, or one that ended before its reply was stored. */
export interface Turn {
  id: number
  /** What the user typed or was heard saying; null until known. */
  user: string | null
  reply: string
  /** The user spoke over the reply, which stopped. */
  bargeIn: boolean
  /** live: under way; saved: stored, the next read of the messages replaces it;
   *  stopped: stopped before its reply was stored (the user's words were). */
  state: 'live' | 'saved' | 'stopped'
}

export interface ChatState {
  chats: ChatRecord[]
  chatsLoaded: boolean
  chatsError: unknown
  query: string
  /** A search is waiting for its answer (or for the typing to pause). */
  searching: boolean
  /** The chat shown; null: a new chat, stored with its first message. */
  openId: number | null
  messages: MessageRecord[]
  messagesLoading: boolean
  messagesError: unknown
  /** As saved in the backend; null until read. */
  settings: FullChatSettings | null
  settingsError: unknown
  devices: AudioDevices | null
  devicesError: unknown
  activity: 'typed' | 'voice' | null
  phase: Phase
  turn: Turn | null
  /** The microphone and speaker voice chat uses, by name. */
  input: string | null
  output: string | null
  /** The microphone's loudness, 0 to 1 (root mean square). */
  level: number
  /** Remembered between sessions; fixed while a voice chat runs. */
  voiceMode: VoiceMode
  /** Push-to-talk: the talk key or button is held. */
  talking: boolean
  /** Why the last thing said was not taken as a turn; cleared when the user speaks again. */
  hint: string | null
  stopping: boolean
  /** The last thing that failed, with what was being done. */
  error: { title: string; error: unknown } | null
  draft: string
}

const initial: ChatState = {
  chats: [],
  chatsLoaded: false,
  chatsError: null,
  query: '',
  searching: false,
  openId: null,
  messages: [],
  messagesLoading: false,
  messagesError: null,
  settings: null,
  settingsError: null,
  devices: null,
  devicesError: null,
  activity: null,
  phase: 'idle',
  turn: null,
  input: null,
  output: null,
  level: 0,
  voiceMode: 'hands-free',
  talking: false,
  hint: null,
  stopping: false,
  error: null,
  draft: '',
}

const VOICE_MODE_KEY = 'izwi.chat.voiceMode'

function rememberedVoiceMode(): VoiceMode {
  try {
    return localStorage.getItem(VOICE_MODE_KEY) === 'push-to-talk' ? 'push-to-talk' : 'hands-free'
  } catch {
    return 'hands-free'
  }
}

export const chatStore = createStore<ChatState>({ ...initial, voiceMode: rememberedVoiceMode() })

/** The pause in typing a search waits for. */
export const SEARCH_DELAY_MS = 200

/** A shorter push-to-talk press is ignored by the backend (a slip of the finger, no turn). */
const MIN_TALK_MS = 250

let turns = 0
let chatsRun = 0
let messagesRun = 0
let searchTimer: ReturnType<typeof setTimeout> | null = null
let listening: Promise<void> | null = null
let unlisten: (() => void) | null = null
/** setTalking calls, one after the other: a release must never overtake its press. */
let talkCalls: Promise<void> = Promise.resolve()
let pressedAt = 0
/** The last release came too soon after its press: no turn follows its speech_ended. */
let slipped = false

export function resetChat(): void {
  unlisten?.()
  unlisten = null
  listening = null
  if (searchTimer) clearTimeout(searchTimer)
  searchTimer = null
  talkCalls = Promise.resolve()
  slipped = false
  chatStore.set({ ...initial, voiceMode: rememberedVoiceMode() })
}

/** Listens to chat events once; the commands that cause them wait for it. */
export function listenChatEvents(): Promise<void> {
  if (!listening) {
    listening = events.chatEvent
      .listen((e) => handleChatEvent(e.payload))
      .then((fn) => {
        unlisten = fn
      })
      .catch((e) => {
        listening = null
        throw e
      })
  }
  return listening
}

// ---------- conversations ----------

export async function loadChats(): Promise<void> {
  const run = ++chatsRun
  try {
    const chats = await api.listChats(chatStore.get().query.trim())
    if (run !== chatsRun) return
    chatStore.set((s) => ({ ...s, chats, chatsLoaded: true, chatsError: null, searching: false }))
  } catch (chatsError) {
    if (run !== chatsRun) return
    chatStore.set((s) => ({ ...s, chatsLoaded: true, chatsError, searching: false }))
  }
}

/** Searches titles and messages once typing pauses. */
export function setQuery(query: string): void {
  chatStore.set((s) => ({ ...s, query, searching: true }))
  if (searchTimer) clearTimeout(searchTimer)
  searchTimer = setTimeout(() => void loadChats(), SEARCH_DELAY_MS)
}

/** The turn once the messages read again hold what was stored of it. */
function afterReload(turn: Turn | null): Turn | null {
  if (!turn || turn.state === 'live') return turn
  // A stopped reply was not stored: it stays on screen, after the user's stored words.
  if (turn.state === 'stopped' && turn.reply.trim()) return { ...turn, user: null }
  return null
}

export async function loadMessages(chatId: number): Promise<void> {
  const run = ++messagesRun
  chatStore.set((s) => ({ ...s, messagesLoading: true }))
  try {
    const messages = await api.getChatMessages(chatId)
    if (run !== messagesRun) return
    chatStore.set((s) => ({
      ...s,
      messages,
      messagesLoading: false,
      messagesError: null,
      turn: afterReload(s.turn),
    }))
  } catch (messagesError) {
    if (run !== messagesRun) return
    chatStore.set((s) => ({ ...s, messagesLoading: false, messagesError }))
  }
}

/** Shows chat `id`, or a new chat (null). Not while a reply or voice chat runs: it belongs to the open chat. */
export function openChat(id: number | null): void {
  if (chatStore.get().activity) return
  messagesRun++
  chatStore.set((s) => ({
    ...s,
    openId: id,
    messages: [],
    messagesLoading: false,
    messagesError: null,
    turn: null,
    error: null,
  }))
  if (id != null) void loadMessages(id)
}

/** Deletes a chat and its recordings (the page asks first). Rejects with the command's error. */
export async function deleteChat(id: number): Promise<void> {
  await api.deleteChat(id)
  chatStore.set((s) => ({ ...s, chats: s.chats.filter((c) => c.id !== id) }))
  if (chatStore.get().openId === id) openChat(null)
}

/**
 * Both read again once a turn is stored in `chatId`, which was open as `from` (null: a new
 * chat, which now comes first in the list and stays open), unless another chat was opened since.
 */
function refresh(chatId: number, from: number | null): Promise<unknown> {
  const { openId } = chatStore.get()
  if (openId !== from && openId !== chatId) return loadChats()
  chatStore.set((s) => ({ ...s, openId: chatId }))
  return Promise.all([loadChats(), loadMessages(chatId)])
}

// ---------- settings and devices ----------

export async function loadChatSettings(): Promise<void> {
  try {
    const settings = fullSettings(await api.getChatSettings())
    chatStore.set((s) => ({ ...s, settings, settingsError: null }))
  } catch (settingsError) {
    chatStore.set((s) => ({ ...s, settingsError }))
  }
}

/** The settings the pickers show: the saved ones, with choices that are gone replaced. */
export function shownSettings(
  saved: FullChatSettings,
  models: ModelsState = modelsStore.get(),
  voices: VoicesState = voicesStore.get(),
): FullChatSettings {
  return effectiveSettings(
    saved,
    models.loaded && !models.loadError ? models.models : null,
    voices.loaded && !voices.loadError ? voices.voices : null,
  )
}

/** shownSettings, kept up to date as models and voices come and go; null until read. */
export function useShownSettings(): FullChatSettings | null {
  const saved = useChat((s) => s.settings)
  const models = useModels()
  const voices = useVoices()
  return saved ? shownSettings(saved, models, voices) : null
}

/** Saves the settings as shown with `patch` applied; on failure puts them back and rejects. */
export async function changeChatSettings(patch: Partial<FullChatSettings>): Promise<void> {
  const before = chatStore.get().settings
  if (!before) return
  const next = { ...shownSettings(before), ...patch }
  chatStore.set((s) => ({ ...s, settings: next }))
  try {
    await api.setChatSettings(next)
  } catch (e) {
    chatStore.set((s) => (s.settings === next ? { ...s, settings: before } : s))
    throw e
  }
}

/** The choices the pickers show are the ones the backend uses: saved first if they differ. */
async function saveShownSettings(): Promise<void> {
  const saved = chatStore.get().settings
  if (saved && !sameSettings(saved, shownSettings(saved))) await changeChatSettings({})
}

export async function loadDevices(): Promise<void> {
  try {
    const devices = await api.listAudioDevices()
    chatStore.set((s) => ({ ...s, devices, devicesError: null }))
  } catch (devicesError) {
    chatStore.set((s) => ({ ...s, devicesError }))
  }
}

// ---------- the activity ----------

export function setDraft(draft: string): void {
  chatStore.set((s) => ({ ...s, draft }))
}

export function dismissError(): void {
  chatStore.set((s) => ({ ...s, error: null }))
}

const idle = {
  activity: null,
  phase: 'idle',
  stopping: false,
  level: 0,
  input: null,
  output: null,
  talking: false,
  hint: null,
} as const

/** Sends a typed message; the reply streams in, then the stored messages are shown. */
export async function sendMessage(text: string): Promise<void> {
  const message = text.trim()
  const { activity, openId } = chatStore.get()
  if (!message || activity) return
  const id = ++turns
  chatStore.set((s) => ({
    ...s,
    activity: 'typed',
    phase: 'thinking',
    stopping: false,
    turn: { id, user: message, reply: '', bargeIn: false, state: 'live' },
    error: null,
    draft: '',
  }))
  try {
    await listenChatEvents()
    await saveShownSettings()
    const sent = await api.sendChatMessage(openId, message)
    chatStore.set((s) => ({
      ...s,
      ...idle,
      turn:
        s.turn?.id === id
          ? { ...s.turn, reply: sent.stopped ? sent.reply : s.turn.reply, state: sent.stopped ? 'stopped' : 'saved' }
          : s.turn,
    }))
    await refresh(sent.chat_id, openId)
  } catch (error) {
    // Stopped before the message was kept (a new chat): nothing was stored, nothing went wrong.
    const stopped = error instanceof ApiError && error.cancelled
    // The words typed come back to the box, to send again (once the cause is fixed).
    chatStore.set((s) => ({
      ...s,
      ...idle,
      turn: s.turn?.id === id ? null : s.turn,
      error: stopped ? null : { title: 'Could not send the message', error },
      draft: s.draft || message,
    }))
    // A new chat may have been stored before it failed.
    void loadChats()
    if (openId != null) void loadMessages(openId)
  }
}

/** Starts voice chat, in the voice mode chosen, in the open chat; what it does arrives as events. */
export async function startVoiceChat(): Promise<void> {
  const { activity, openId, voiceMode } = chatStore.get()
  if (activity) return
  chatStore.set((s) => ({ ...s, ...idle, activity: 'voice', phase: 'starting', error: null }))
  try {
    await listenChatEvents()
    await saveShownSettings()
    await api.startVoiceChat(openId, voiceMode === 'push-to-talk')
  } catch (error) {
    chatStore.set((s) => ({ ...s, ...idle, error: { title: 'Voice chat could not start', error } }))
  }
}

/** Chooses how the next voice chat hears the user, and remembers it. */
export function setVoiceMode(voiceMode: VoiceMode): void {
  if (chatStore.get().activity === 'voice') return
  chatStore.set((s) => ({ ...s, voiceMode }))
  try {
    localStorage.setItem(VOICE_MODE_KEY, voiceMode)
  } catch {
    /* private mode: nothing to remember */
  }
}

/** Push-to-talk: the talk key or button went down (true) or up. Each change is sent once. */
export function setTalking(down: boolean): void {
  const s = chatStore.get()
  if (down === s.talking) return
  const ready = s.activity === 'voice' && s.voiceMode === 'push-to-talk' && s.phase !== 'starting' && !s.stopping
  if (down && !ready) return
  if (down) pressedAt = Date.now()
  else slipped = Date.now() - pressedAt < MIN_TALK_MS
  chatStore.set((x) => ({ ...x, talking: down, hint: null }))
  talkCalls = talkCalls.then(async () => {
    try {
      await api.setTalking(down)
    } catch (error) {
      // A voice chat that has ended cannot be talked to: nothing to say about it.
      if (chatStore.get().activity !== 'voice') return
      chatStore.set((x) => ({ ...x, talking: false, error: { title: 'Push to talk failed', error } }))
    }
  })
}

/** Stops the reply being written or the voice chat. */
export async function stopChat(): Promise<void> {
  const { activity, stopping } = chatStore.get()
  if (!activity || stopping) return
  chatStore.set((s) => ({ ...s, stopping: true }))
  try {
    const wasRunning = await api.stopChat()
    // Nothing ran: a voice chat that ended without telling (a typed reply's command still answers).
    if (!wasRunning && chatStore.get().activity === 'voice') chatStore.set((s) => ({ ...s, ...idle }))
  } catch (error) {
    chatStore.set((s) => ({ ...s, stopping: false, error: { title: 'Could not stop', error } }))
  }
}

/** Why voice chat stopped, the runtime's words, as an error of the right kind. */
function stoppedError(message: string): { kind: string; message: string } {
  const device = /microphone|speaker|input device|output device|audio device/i.test(message)
  return { kind: device ? 'device' : 'model', message }
}

function withTurn(s: ChatState, change: (turn: Turn) => Partial<Turn>): ChatState {
  const turn =
    s.turn?.state === 'live' ? s.turn : { id: ++turns, user: null, reply: '', bargeIn: false, state: 'live' as const }
  return { ...s, turn: { ...turn, ...change(turn) } }
}

/** Voice chat's events also come when this window did not start it (it was reloaded): it is adopted, so it can be stopped. */
function voice(s: ChatState): ChatState {
  return s.activity ? s : { ...s, activity: 'voice' }
}

export function handleChatEvent(e: ChatEvent): void {
  switch (e.type) {
    case 'thinking':
      chatStore.set((s) => (s.activity ? { ...s, phase: 'thinking' } : s))
      break
    case 'listening': {
      // A voice chat adopted after a reload may be in another chat than the one open.
      const id = e.chat_id
      const moved = id != null && id !== chatStore.get().openId
      chatStore.set((s) => ({
        ...voice(s),
        phase: 'listening',
        input: e.input,
        output: e.output,
        ...(moved ? { openId: id, messages: [], turn: null } : {}),
      }))
      if (moved) void loadMessages(id)
      break
    }
    case 'level':
      chatStore.set((s) => ({ ...voice(s), level: e.rms }))
      break
    case 'speech_started':
      chatStore.set((s) => ({ ...voice(s), phase: 'hearing', hint: null }))
      break
    case 'speech_ended': {
      // A slip of the finger is not a turn: back to waiting for the next press.
      const slip = slipped
      slipped = false
      chatStore.set((s) => ({
        ...voice(s),
        phase: slip ? 'listening' : 'thinking',
        hint: slip ? 'Too short: hold while you speak.' : null,
      }))
      break
    }
    case 'heard':
      chatStore.set((s) => ({
        ...voice(s),
        phase: 'thinking',
        hint: null,
        turn: { id: ++turns, user: e.text, reply: '', bargeIn: false, state: 'live' },
      }))
      break
    case 'nothing_heard':
      // No turn: back to listening, unless the user already speaks again.
      chatStore.set((s) =>
        s.phase === 'hearing' ? voice(s) : { ...voice(s), phase: 'listening', hint: "Didn't catch that." },
      )
      break
    case 'reply_text':
      chatStore.set((s) =>
        s.activity
          ? {
              ...withTurn(s, (t) => ({ reply: t.reply + e.text })),
              phase: s.activity === 'voice' ? 'speaking' : 'writing',
            }
          : s,
      )
      break
    case 'barge_in':
      chatStore.set((s) => ({ ...withTurn(voice(s), () => ({ bargeIn: true })), phase: 'hearing' }))
      break
    case 'turn_done':
      chatStore.set((s) => ({
        ...voice(s),
        phase: s.phase === 'hearing' ? 'hearing' : 'listening',
        turn: s.turn?.state === 'live' ? { ...s.turn, state: 'saved' } : s.turn,
      }))
      void refresh(e.chat_id, chatStore.get().openId)
      break
    case 'stopped': {
      const { openId } = chatStore.get()
      chatStore.set((s) => ({
        ...s,
        ...idle,
        turn: s.turn?.state === 'live' ? { ...s.turn, state: 'stopped' } : s.turn,
        error: e.error ? { title: 'Voice chat stopped', error: stoppedError(e.error) } : s.error,
      }))
      if (openId != null) void loadMessages(openId)
      break
    }
  }
}

export function useChat(): ChatState
export function useChat<T>(select: (s: ChatState) => T): T
export function useChat<T>(select?: (s: ChatState) => T): ChatState | T {
  return useStore(chatStore, (s) => (select ? select(s) : s))
}
