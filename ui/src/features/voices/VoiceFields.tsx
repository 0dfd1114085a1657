// The fields every "new voice" dialog asks first: which installed model, and a name.

import { VOICE_NAME_MAX_CHARS, type ModelInfo } from '../../bindings'

export function ModelAndNameFields({
  modelLabel,
  models,
  modelId,
  onModel,
  name,
  onName,
  placeholder,
}: {
  modelLabel: string
  models: ModelInfo[]
  modelId: string
  onModel: (id: string) => void
  name: string
  onName: (name: string) => void
  placeholder: string
}) {
  return (
    <>
      <label className="field">
        <span className="field-label">{modelLabel}</span>
        <select className="select" value={modelId} onChange={(e) => onModel(e.target.value)}>
          {models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span className="field-label">Name</span>
        <input
          className="input"
          value={name}
          onChange={(e) => onName(e.target.value)}
          placeholder={placeholder}
          maxLength={VOICE_NAME_MAX_CHARS}
          data-autofocus
        />
      </label>
    </>
  )
}
