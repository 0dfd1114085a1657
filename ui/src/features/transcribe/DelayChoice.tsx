// How far a streaming model's text runs behind the audio: shorter shows words sooner,
// longer lets the model hear more before it writes. Shown only for such a model.

import { DELAYS_MS, setChoices, useChoices } from './options'

export function DelayChoice({ disabled = false }: { disabled?: boolean }) {
  const c = useChoices()
  if (!c.streaming) return null
  return (
    <label
      className="field"
      data-tooltip="How far the text runs behind the speech: shorter shows words sooner, longer is more accurate"
    >
      <span className="field-label">Delay</span>
      <select
        className="select"
        value={c.delayMs ?? ''}
        onChange={(e) => setChoices({ delayMs: e.target.value ? Number(e.target.value) : null })}
        disabled={disabled}
        aria-label="Delay"
      >
        <option value="">Model default</option>
        {DELAYS_MS.map((ms) => (
          <option key={ms} value={ms}>
            {ms < 1000 ? `${ms} ms` : `${ms / 1000} s`}
          </option>
        ))}
      </select>
    </label>
  )
}
