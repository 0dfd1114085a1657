// The waveform of the source audio (peaks from the Rust side) with the playhead; click or
// arrow keys to seek.

import { useEffect, useRef, useState } from 'react'
import { formatTimestamp } from '../../lib/format'

function cssVar(el: Element, name: string, fallback: string): string {
  const v = getComputedStyle(el).getPropertyValue(name).trim()
  return v || fallback
}

export function Waveform({
  peaks,
  duration,
  time,
  onSeek,
}: {
  peaks: number[] | null
  duration: number
  time: number
  onSeek: (seconds: number) => void
}) {
  const canvasRef = useRef<HTMLCanvasElement>(null)
  const [width, setWidth] = useState(0)
  const [hover, setHover] = useState<number | null>(null)
  const height = 56

  useEffect(() => {
    const el = canvasRef.current
    if (!el) return
    setWidth(el.clientWidth)
    if (typeof ResizeObserver === 'undefined') return
    const ro = new ResizeObserver(() => setWidth(el.clientWidth))
    ro.observe(el)
    return () => ro.disconnect()
  }, [])

  useEffect(() => {
    const canvas = canvasRef.current
    if (!canvas || !width) return
    const ctx = canvas.getContext?.('2d')
    if (!ctx) return
    const dpr = window.devicePixelRatio || 1
    canvas.width = Math.round(width * dpr)
    canvas.height = Math.round(height * dpr)
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0)
    ctx.clearRect(0, 0, width, height)
    const played = cssVar(canvas, '--wave-played', '#5b5bd6')
    const rest = cssVar(canvas, '--wave', '#c8c8d0')
    const head = cssVar(canvas, '--wave-head', '#5b5bd6')
    const frac = duration > 0 ? Math.min(1, time / duration) : 0
    const bar = 2
    const gap = 1
    const n = Math.max(1, Math.floor(width / (bar + gap)))
    const mid = height / 2
    for (let i = 0; i < n; i++) {
      let peak = 0.04
      if (peaks && peaks.length) {
        // Max of the peaks that fall into this bar.
        const a = Math.floor((i / n) * peaks.length)
        const b = Math.max(a + 1, Math.floor(((i + 1) / n) * peaks.length))
        for (let j = a; j < b && j < peaks.length; j++) peak = Math.max(peak, peaks[j])
      }
      const h = Math.max(2, Math.min(1, peak) * (height - 6))
      const x = i * (bar + gap)
      ctx.fillStyle = x / width < frac ? played : rest
      ctx.fillRect(x, mid - h / 2, bar, h)
    }
    ctx.fillStyle = head
    ctx.fillRect(Math.round(frac * width) - 1, 0, 2, height)
    if (hover != null) {
      ctx.globalAlpha = 0.35
      ctx.fillRect(Math.round(hover * width), 0, 1, height)
      ctx.globalAlpha = 1
    }
  }, [peaks, duration, time, width, hover])

  const at = (clientX: number) => {
    const rect = canvasRef.current?.getBoundingClientRect()
    if (!rect || rect.width <= 0) return 0
    return Math.max(0, Math.min(1, (clientX - rect.left) / rect.width))
  }

  return (
    <div className="waveform">
      <canvas
        ref={canvasRef}
        className="waveform-canvas"
        style={{ height }}
        role="slider"
        tabIndex={0}
        aria-label="Playback position"
        aria-valuemin={0}
        aria-valuemax={Math.round(duration)}
        aria-valuenow={Math.round(time)}
        aria-valuetext={`${formatTimestamp(time)} of ${formatTimestamp(duration)}`}
        data-peaks={peaks?.length ?? 0}
        onClick={(e) => onSeek(at(e.clientX) * duration)}
        onMouseMove={(e) => setHover(at(e.clientX))}
        onMouseLeave={() => setHover(null)}
        onKeyDown={(e) => {
          const step = e.shiftKey ? 10 : 5
          if (e.key === 'ArrowRight') onSeek(Math.min(duration, time + step))
          else if (e.key === 'ArrowLeft') onSeek(Math.max(0, time - step))
          else if (e.key === 'Home') onSeek(0)
          else if (e.key === 'End') onSeek(duration)
          else return
          e.preventDefault()
        }}
      />
      {hover != null && duration > 0 && (
        <div className="waveform-hover" style={{ left: `${hover * 100}%` }}>
          {formatTimestamp(hover * duration)}
        </div>
      )}
    </div>
  )
}
