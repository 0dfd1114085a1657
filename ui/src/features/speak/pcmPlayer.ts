// Plays PCM as it arrives: each chunk (a sentence, or a piece a Qwen3-TTS voice decoded)
// is scheduled with Web Audio after the one before, with the pause the saved speech has
// between them, so chunks play back to back while later ones are still made.
// Chunks may arrive out of order; they are held until the ones before them are in.

type AudioContextCtor = new (options?: AudioContextOptions) => AudioContext

function audioContextCtor(): AudioContextCtor | null {
  if (typeof window === 'undefined') return null
  const w = window as unknown as { AudioContext?: AudioContextCtor; webkitAudioContext?: AudioContextCtor }
  return w.AudioContext ?? w.webkitAudioContext ?? null
}

/** True when this webview can play audio through Web Audio. */
export function canPlayPcm(): boolean {
  return audioContextCtor() != null
}

export class PcmPlayer {
  private ctx: AudioContext | null = null
  private nextStart = 0
  private nextIndex = 0
  private held = new Map<number, { samples: ArrayLike<number>; sampleRate: number; gapBefore: number }>()
  private sources = new Set<AudioBufferSourceNode>()
  /** The context time at which second 0 of the clip `playFrom` plays; null otherwise. */
  private clipStart: number | null = null
  private onIdle: (() => void) | null

  /** `onIdle` runs when the last scheduled chunk has finished playing. */
  constructor(onIdle?: () => void) {
    this.onIdle = onIdle ?? null
  }

  /** Whether anything is scheduled or playing. */
  get playing(): boolean {
    return this.sources.size > 0
  }

  /** Adds chunk `index` (0-based); it plays `gapBefore` seconds after every chunk before it. */
  push(index: number, samples: ArrayLike<number>, sampleRate: number, gapBefore = 0): boolean {
    if (index < this.nextIndex || this.held.has(index)) return false
    this.held.set(index, { samples, sampleRate, gapBefore })
    let ok = true
    while (this.held.has(this.nextIndex)) {
      const chunk = this.held.get(this.nextIndex)!
      this.held.delete(this.nextIndex)
      ok = this.schedule(chunk.samples, chunk.sampleRate, chunk.gapBefore) && ok
      this.nextIndex++
    }
    return ok
  }

  /** Plays one clip from the start (a preview), stopping whatever played. */
  playClip(samples: ArrayLike<number>, sampleRate: number): boolean {
    this.stop()
    return this.push(0, samples, sampleRate)
  }

  /** Plays a whole clip from `offset` seconds (a seek), stopping whatever played. */
  playFrom(samples: ArrayLike<number>, sampleRate: number, offset: number): boolean {
    this.stop()
    const ctx = this.context()
    if (!ctx || samples.length === 0) return false
    if (ctx.state === 'suspended') void ctx.resume().catch(() => {})
    const buffer = ctx.createBuffer(1, samples.length, sampleRate)
    buffer.copyToChannel(Float32Array.from(samples), 0)
    const from = Math.max(0, Math.min(offset, buffer.duration))
    const source = ctx.createBufferSource()
    source.buffer = buffer
    source.connect(ctx.destination)
    const start = ctx.currentTime + 0.05
    source.start(start, from)
    this.clipStart = start - from
    this.sources.add(source)
    source.onended = () => {
      this.sources.delete(source)
      this.clipStart = null
      if (this.sources.size === 0) this.onIdle?.()
    }
    return true
  }

  /** Seconds into the clip `playFrom` is playing; null when it is not playing one. */
  position(): number | null {
    if (this.clipStart == null || !this.ctx || !this.playing) return null
    return Math.max(0, this.ctx.currentTime - this.clipStart)
  }

  /** Stops playback and forgets every chunk; the next push starts at index 0 again. */
  stop(): void {
    this.clipStart = null
    for (const s of this.sources) {
      s.onended = null
      try {
        s.stop()
      } catch {
        /* already stopped */
      }
    }
    this.sources.clear()
    this.held.clear()
    this.nextIndex = 0
    this.nextStart = 0
  }

  /** Releases the audio device. */
  close(): void {
    this.stop()
    void this.ctx?.close().catch(() => {})
    this.ctx = null
  }

  private context(): AudioContext | null {
    if (this.ctx) return this.ctx
    const Ctor = audioContextCtor()
    if (!Ctor) return null
    try {
      this.ctx = new Ctor()
    } catch {
      return null
    }
    return this.ctx
  }

  private schedule(samples: ArrayLike<number>, sampleRate: number, gap: number): boolean {
    const ctx = this.context()
    if (!ctx || samples.length === 0) return false
    if (ctx.state === 'suspended') void ctx.resume().catch(() => {})
    const buffer = ctx.createBuffer(1, samples.length, sampleRate)
    buffer.copyToChannel(Float32Array.from(samples), 0)
    const source = ctx.createBufferSource()
    source.buffer = buffer
    source.connect(ctx.destination)
    // Back to back after what is scheduled; a little ahead of now if playback caught up.
    const earliest = ctx.currentTime + 0.05
    const start = Math.max(earliest, this.nextStart + (this.playing ? gap : 0))
    source.start(start)
    this.nextStart = start + buffer.duration
    this.sources.add(source)
    source.onended = () => {
      this.sources.delete(source)
      if (this.sources.size === 0) this.onIdle?.()
    }
    return true
  }
}
