// A voice from the library, with a button that plays a few seconds of it.

import type { VoiceInfo } from '../../bindings'
import { Icon } from '../../components/Icon'
import { describeError } from '../../lib/errors'
import { toast } from '../../lib/toast'
import { previewVoice, stopPreview, usableVoices, useVoices, voiceLanguage } from './voicesStore'

async function preview(voice: VoiceInfo): Promise<void> {
  try {
    await previewVoice(voice.id)
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not preview ${voice.name}: ${title}`, detail })
  }
}

export function PreviewButton({ voice }: { voice: VoiceInfo }) {
  const { previewing } = useVoices()
  const mine = previewing?.id === voice.id ? previewing.phase : null
  return (
    <button
      type="button"
      className="btn btn-sm"
      onClick={() => (mine ? stopPreview() : preview(voice))}
      disabled={!voice.installed}
      aria-label={mine ? `Stop the preview of ${voice.name}` : `Preview ${voice.name}`}
      data-tooltip={voice.installed ? 'Hear a few seconds of this voice' : 'Download the voice first'}
    >
      <Icon name={mine === 'making' ? 'spinner' : mine === 'playing' ? 'stop' : 'play'} size={11} />
      {mine === 'making' ? 'Preparing…' : mine === 'playing' ? 'Stop' : 'Preview'}
    </button>
  )
}

export function VoicePicker({
  value,
  onChange,
  disabled,
}: {
  value: VoiceInfo | null
  onChange: (id: number) => void
  disabled?: boolean
}) {
  const { voices } = useVoices()
  const usable = usableVoices(voices)
  return (
    <div className="field">
      <label className="field-label" htmlFor="voice-picker">
        Voice
      </label>
      <div className="voice-picker">
        <select
          id="voice-picker"
          className="select"
          value={value?.id ?? ''}
          onChange={(e) => onChange(Number(e.target.value))}
          disabled={disabled || !usable.length}
        >
          {usable.map((v) => (
            <option key={v.id} value={v.id}>
              {v.name} · {voiceLanguage(v.language)}
            </option>
          ))}
        </select>
        {value && <PreviewButton voice={value} />}
      </div>
    </div>
  )
}
