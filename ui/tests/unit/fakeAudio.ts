// A stand-in for Web Audio (jsdom has none) that records what was scheduled.

export interface Scheduled {
  length: number
  sampleRate: number
  first: number
  at: number
  /** Seconds into the buffer playback starts from (a seek). */
  offset: number
  stopped: boolean
}

export function installFakeAudio(): { scheduled: Scheduled[]; finishAll: () => void; remove: () => void } {
  const scheduled: Scheduled[] = []
  const sources: { onended: (() => void) | null; entry: Scheduled }[] = []
  class FakeBuffer {
    data: Float32Array
    readonly length: number
    readonly sampleRate: number
    constructor(_channels: number, length: number, sampleRate: number) {
      this.length = length
      this.sampleRate = sampleRate
      this.data = new Float32Array(length)
    }
    get duration() {
      return this.length / this.sampleRate
    }
    copyToChannel(src: Float32Array) {
      this.data.set(src)
    }
  }
  class FakeContext {
    currentTime = 0
    state = 'running'
    destination = {}
    createBuffer(channels: number, length: number, rate: number) {
      return new FakeBuffer(channels, length, rate)
    }
    createBufferSource() {
      const src = {
        buffer: null as FakeBuffer | null,
        onended: null as (() => void) | null,
        connect() {},
        start(at: number, offset = 0) {
          const entry = {
            length: src.buffer!.length,
            sampleRate: src.buffer!.sampleRate,
            first: src.buffer!.data[0],
            at,
            offset,
            stopped: false,
          }
          scheduled.push(entry)
          sources.push({
            get onended() {
              return src.onended
            },
            set onended(v) {
              src.onended = v
            },
            entry,
          })
        },
        stop() {
          const s = sources.find((x) => x.entry === scheduled.find((e) => !e.stopped && x.entry === e))
          if (s) s.entry.stopped = true
        },
      }
      return src
    }
    resume() {
      return Promise.resolve()
    }
    close() {
      return Promise.resolve()
    }
  }
  const w = window as unknown as { AudioContext?: unknown }
  const before = w.AudioContext
  w.AudioContext = FakeContext
  return {
    scheduled,
    finishAll: () => {
      for (const s of sources.splice(0)) s.onended?.()
    },
    remove: () => {
      w.AudioContext = before
    },
  }
}
