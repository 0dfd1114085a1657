// The speaking rate of one job (Speak, Batch export): starts at the voice's own speed;
// moving it back there means "the voice's speed" (null), so later voice changes apply.

export function SpeedField({
  id,
  value,
  voiceSpeed,
  disabled,
  onChange,
}: {
  id: string
  value: number
  voiceSpeed: number
  disabled: boolean
  onChange: (speed: number | null) => void
}) {
  return (
    <div className="field speed-field">
      <label className="field-label" htmlFor={id}>
        Speed
      </label>
      <div className="speed-control">
        <input
          id={id}
          type="range"
          min={0.5}
          max={2}
          step={0.05}
          value={value}
          disabled={disabled}
          onChange={(e) => {
            const v = Number(e.target.value)
            onChange(Math.abs(v - voiceSpeed) < 1e-6 ? null : v)
          }}
          aria-valuetext={`${value.toFixed(2)}×`}
        />
        <output htmlFor={id} className="tabular speed-value">
          {value.toFixed(2)}×
        </output>
      </div>
    </div>
  )
}
