import { useCallback, useEffect, useState } from 'react'
import { boot } from './boot'
import { ConfirmHost } from './components/Dialog'
import { DropOverlay } from './components/DropOverlay'
import { ShortcutSheet } from './components/ShortcutSheet'
import { Sidebar } from './components/Sidebar'
import { Toaster } from './components/Toaster'
import { HistoryPage } from './features/history/HistoryPage'
import { ModelsPage } from './features/models/ModelsPage'
import { BatchPage } from './features/batch/BatchPage'
import { ChatPage } from './features/chat/ChatPage'
import { DictatePage } from './features/dictate/DictatePage'
import { SettingsPage } from './features/settings/SettingsPage'
import { SpeakPage } from './features/speak/SpeakPage'
import { TranscribePage } from './features/transcribe/TranscribePage'
import { VoicesPage } from './features/voices/VoicesPage'
import { pickFiles, pickFolder, queueFiles } from './features/transcribe/queueFiles'
import { navigate, useNav, VIEWS } from './lib/nav'
import { isModKey, isTyping } from './lib/platform'
import { runAction } from './lib/shortcuts'

export function App() {
  const { view } = useNav()
  const [sheet, setSheet] = useState(false)

  useEffect(() => {
    void boot()
  }, [])

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented) return
      if (isModKey(e) && !e.altKey) {
        const key = e.key.toLowerCase()
        const v = VIEWS.find((x) => x.key === key)
        if (v && !e.shiftKey) {
          e.preventDefault()
          // A field being typed in is left first: a transcript's correction saves on
          // blur, before its page goes.
          if (isTyping(e.target)) (e.target as HTMLElement).blur()
          navigate(v.id)
        } else if (key === 'o') {
          e.preventDefault()
          if (e.shiftKey) {
            if (!runAction('openFolder')) void pickFolder()
          } else if (!runAction('open')) {
            void pickFiles()
          }
        } else if (key === 'f') {
          e.preventDefault()
          runAction('find')
        } else if (key === 'e') {
          e.preventDefault()
          runAction('export')
        } else if (key === 'enter') {
          if (runAction('generate')) e.preventDefault()
        }
        return
      }
      if (e.key === '?' && !isTyping(e.target) && !e.ctrlKey && !e.metaKey) {
        e.preventDefault()
        setSheet((s) => !s)
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])

  const onDrop = useCallback((paths: string[]) => void queueFiles(paths), [])
  const showSheet = useCallback(() => setSheet(true), [])
  const hideSheet = useCallback(() => setSheet(false), [])

  return (
    <div className="app">
      <Sidebar view={view} onShowShortcuts={showSheet} />
      <main className="main">
        {view === 'transcribe' && <TranscribePage />}
        {view === 'models' && <ModelsPage />}
        {view === 'history' && <HistoryPage />}
        {view === 'speak' && <SpeakPage />}
        {view === 'batch' && <BatchPage />}
        {view === 'voices' && <VoicesPage />}
        {view === 'chat' && <ChatPage />}
        {view === 'dictate' && <DictatePage />}
        {view === 'settings' && <SettingsPage onShowShortcuts={showSheet} />}
      </main>
      <DropOverlay onDrop={onDrop} />
      {sheet && <ShortcutSheet onClose={hideSheet} />}
      <ConfirmHost />
      <Toaster />
    </div>
  )
}
