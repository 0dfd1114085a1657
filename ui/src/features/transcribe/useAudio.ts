// An <audio> element's state for the player: time (smooth while playing), duration, play/pause.

import { useCallback, useEffect, useState } from 'react'

export interface AudioControls {
  time: number
  duration: number
  playing: boolean
  error: boolean
  seek: (seconds: number) => void
  toggle: () => void
  pause: () => void
}

export function useAudio(
  ref: React.RefObject<HTMLAudioElement | null>,
  src: string | null,
  fallbackDuration: number,
): AudioControls {
  const [time, setTime] = useState(0)
  const [duration, setDuration] = useState(0)
  const [playing, setPlaying] = useState(false)
  const [error, setError] = useState(false)

  useEffect(() => {
    setTime(0)
    setPlaying(false)
    setError(false)
    setDuration(0)
  }, [src])

  useEffect(() => {
    const el = ref.current
    if (!el) return
    let frame = 0
    const tick = () => {
      setTime(el.currentTime)
      frame = requestAnimationFrame(tick)
    }
    const onPlay = () => {
      setPlaying(true)
      cancelAnimationFrame(frame)
      frame = requestAnimationFrame(tick)
    }
    const onPause = () => {
      setPlaying(false)
      cancelAnimationFrame(frame)
      setTime(el.currentTime)
    }
    const onMeta = () => {
      if (Number.isFinite(el.duration)) setDuration(el.duration)
    }
    const onTime = () => setTime(el.currentTime)
    const onError = () => setError(true)
    el.addEventListener('play', onPlay)
    el.addEventListener('pause', onPause)
    el.addEventListener('ended', onPause)
    el.addEventListener('loadedmetadata', onMeta)
    el.addEventListener('durationchange', onMeta)
    el.addEventListener('timeupdate', onTime)
    el.addEventListener('seeked', onTime)
    el.addEventListener('error', onError)
    return () => {
      cancelAnimationFrame(frame)
      el.removeEventListener('play', onPlay)
      el.removeEventListener('pause', onPause)
      el.removeEventListener('ended', onPause)
      el.removeEventListener('loadedmetadata', onMeta)
      el.removeEventListener('durationchange', onMeta)
      el.removeEventListener('timeupdate', onTime)
      el.removeEventListener('seeked', onTime)
      el.removeEventListener('error', onError)
    }
  }, [ref, src])

  const seek = useCallback(
    (seconds: number) => {
      const el = ref.current
      const t = Math.max(0, seconds)
      if (el) {
        try {
          el.currentTime = t
        } catch {
          /* not seekable yet */
        }
      }
      setTime(t)
    },
    [ref],
  )

  const toggle = useCallback(() => {
    const el = ref.current
    if (!el) return
    if (el.paused) {
      const p = el.play()
      if (p && typeof p.catch === 'function') p.catch(() => setError(true))
    } else {
      el.pause()
    }
  }, [ref])

  const pause = useCallback(() => ref.current?.pause(), [ref])

  return { time, duration: duration || fallbackDuration, playing, error, seek, toggle, pause }
}
