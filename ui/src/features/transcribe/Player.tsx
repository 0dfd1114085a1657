// The player: play/pause, the waveform to seek on, the time, and the <audio> element.

import type { RefObject } from 'react'
import { Icon } from '../../components/Icon'
import { formatTimestamp } from '../../lib/format'
import type { AudioControls } from './useAudio'
import { Waveform } from './Waveform'

export function Player({
  audio,
  audioRef,
  src,
  peaks,
}: {
  audio: AudioControls
  audioRef: RefObject<HTMLAudioElement | null>
  src: string | null
  peaks: number[] | null
}) {
  return (
    <div className="player">
      <button
        type="button"
        className="btn btn-icon btn-round"
        aria-label={audio.playing ? 'Pause' : 'Play'}
        data-tooltip={audio.playing ? 'Pause (Space)' : 'Play (Space)'}
        disabled={!src}
        onClick={audio.toggle}
      >
        <Icon name={audio.playing ? 'pause' : 'play'} />
      </button>
      <Waveform peaks={peaks} duration={audio.duration} time={audio.time} onSeek={audio.seek} />
      <span className="player-time tabular" aria-live="off">
        {formatTimestamp(audio.time)} / {formatTimestamp(audio.duration)}
      </span>
      {src && <audio ref={audioRef} src={src} preload="metadata" data-testid="player-audio" />}
    </div>
  )
}
