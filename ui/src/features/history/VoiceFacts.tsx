// Which voice a speech job used and how it was set, as a short list.

import type { VoiceUsed } from '../../bindings'

function signed(n: number): string {
  return n > 0 ? `+${n}` : String(n)
}

export function VoiceFacts({ voice }: { voice: VoiceUsed }) {
  const s = voice.settings
  const speed = s.speed ?? 1
  const pitch = s.pitch ?? 0
  return (
    <dl className="job-facts" aria-label="Voice and settings">
      <dt>Voice</dt>
      <dd title={voice.name ? `Asked for as “${voice.requested}”` : undefined}>{voice.name ?? voice.requested}</dd>
      {voice.model_id && (
        <>
          <dt>Model</dt>
          <dd>{voice.model_id}</dd>
        </>
      )}
      <dt>Speed</dt>
      <dd>
        {speed}×{voice.speed != null && <span className="muted"> (set for this job)</span>}
      </dd>
      <dt>Pitch</dt>
      <dd>{pitch === 0 ? 'as recorded' : `${signed(pitch)} semitones`}</dd>
      {s.noise_scale != null && (
        <>
          <dt title="noise_scale">Variation</dt>
          <dd>{s.noise_scale}</dd>
        </>
      )}
      {s.noise_w != null && (
        <>
          <dt title="noise_w">Rhythm variation</dt>
          <dd>{s.noise_w}</dd>
        </>
      )}
      {s.speaker != null && (
        <>
          <dt>Speaker</dt>
          <dd>{s.speaker}</dd>
        </>
      )}
    </dl>
  )
}
