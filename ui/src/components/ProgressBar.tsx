/** A thin progress bar; `value` null is indeterminate. */
export function ProgressBar({
  value,
  label,
  tone = 'accent',
  size = 'sm',
}: {
  value: number | null
  label: string
  tone?: 'accent' | 'muted' | 'danger' | 'success'
  size?: 'xs' | 'sm'
}) {
  const pct = value == null ? null : Math.max(0, Math.min(1, value)) * 100
  return (
    <div
      className={`progress progress-${tone} progress-${size}${pct == null ? ' progress-indeterminate' : ''}`}
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct == null ? undefined : Math.round(pct)}
    >
      <div className="progress-fill" style={pct == null ? undefined : { width: `${pct}%` }} />
    </div>
  )
}
