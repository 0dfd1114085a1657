// Formatting helpers: bytes, rates, durations, timestamps, ETAs, dates, paths, languages.

const BYTE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB']

/** Decimal units, as model hubs and file managers show them: 290 MB, 1.62 GB. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes == null || !Number.isFinite(bytes) || bytes < 0) return '—'
  if (bytes < 1000) return `${Math.round(bytes)} B`
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < BYTE_UNITS.length - 1) {
    value /= 1000
    unit++
  }
  // Three significant digits at most: 1.62 GB, 15.2 MB, 290 MB.
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2
  const text = value.toFixed(digits).replace(/\.0+$|(\.\d*[1-9])0+$/, '$1')
  return `${text} ${BYTE_UNITS[unit]}`
}

export function formatRate(bytesPerSecond: number | null | undefined): string {
  if (bytesPerSecond == null || !Number.isFinite(bytesPerSecond) || bytesPerSecond <= 0) return ''
  return `${formatBytes(bytesPerSecond)}/s`
}

/** A length of time in words: "45 s", "3 min 5 s", "1 h 2 min". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null || !Number.isFinite(seconds) || seconds < 0) return '—'
  if (seconds < 10) return `${(Math.round(seconds * 10) / 10).toString()} s`
  const total = Math.round(seconds)
  if (total < 60) return `${total} s`
  const h = Math.floor(total / 3600)
  const m = Math.floor((total % 3600) / 60)
  const s = total % 60
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`
  return s > 0 ? `${m} min ${s} s` : `${m} min`
}

/** A short wait, as latencies are read: "350 ms", "1.4 s". */
export function formatLatency(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms) || ms < 0) return '—'
  return ms < 1000 ? `${Math.round(ms)} ms` : formatDuration(ms / 1000)
}

/** Time left, from an estimate that may not exist yet; never "done" while work is left. */
export function formatEta(seconds: number | null | undefined): string {
  if (seconds == null || !Number.isFinite(seconds) || seconds < 0) return 'Estimating…'
  if (seconds < 1) return 'Under 1 s left'
  if (seconds < 60) return `${Math.ceil(seconds)} s left`
  if (seconds < 3600) {
    const m = Math.floor(seconds / 60)
    const s = Math.round(seconds % 60)
    return m < 10 && s > 0 ? `${m} min ${s} s left` : `${Math.round(seconds / 60)} min left`
  }
  const h = Math.floor(seconds / 3600)
  const m = Math.round((seconds % 3600) / 60)
  return m > 0 ? `${h} h ${m} min left` : `${h} h left`
}

/** A position in media: 0:07, 1:05, 1:02:03; with `fraction`, tenths: 0:07.3. */
export function formatTimestamp(seconds: number, opts: { fraction?: boolean } = {}): string {
  const safe = Number.isFinite(seconds) && seconds > 0 ? seconds : 0
  const whole = opts.fraction ? Math.floor(safe) : Math.floor(safe + 1e-6)
  const h = Math.floor(whole / 3600)
  const m = Math.floor((whole % 3600) / 60)
  const s = whole % 60
  const ss = String(s).padStart(2, '0')
  const tenths = opts.fraction ? `.${Math.floor((safe - whole) * 10)}` : ''
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}${tenths}` : `${m}:${ss}${tenths}`
}

/** How much faster than real time: RTF 0.12 → "8.3× real time". */
export function formatSpeed(rtf: number | null | undefined): string {
  if (rtf == null || !Number.isFinite(rtf) || rtf <= 0) return '—'
  const x = 1 / rtf
  return `${x >= 10 ? Math.round(x) : x.toFixed(1)}× real time`
}

export function formatRtf(rtf: number | null | undefined): string {
  if (rtf == null || !Number.isFinite(rtf)) return '—'
  return rtf >= 1 ? rtf.toFixed(1) : rtf.toFixed(2)
}

/** Unix milliseconds as "Today 14:02", "Yesterday 09:10", "Mon 3 Nov", "3 Nov 2024". */
export function formatDate(ms: number | null | undefined, now: Date = new Date()): string {
  if (ms == null || !Number.isFinite(ms)) return '—'
  const d = new Date(ms)
  const time = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
  const startOfDay = (x: Date) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime()
  const days = Math.round((startOfDay(now) - startOfDay(d)) / 86_400_000)
  if (days === 0) return `Today ${time}`
  if (days === 1) return `Yesterday ${time}`
  if (days > 1 && days < 7) {
    return `${d.toLocaleDateString(undefined, { weekday: 'short' })} ${time}`
  }
  const sameYear = d.getFullYear() === now.getFullYear()
  return d.toLocaleDateString(undefined, {
    day: 'numeric',
    month: 'short',
    ...(sameYear ? {} : { year: 'numeric' }),
  })
}

export function basename(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '')
  const i = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'))
  return i >= 0 ? trimmed.slice(i + 1) : trimmed
}

export function dirname(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '')
  const i = Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\'))
  return i > 0 ? trimmed.slice(0, i) : i === 0 ? trimmed.slice(0, 1) : ''
}

/** File name without its extension: "jfk.wav" → "jfk". */
export function stem(path: string): string {
  const name = basename(path)
  const dot = name.lastIndexOf('.')
  return dot > 0 ? name.slice(0, dot) : name
}

export function joinPath(dir: string, rel: string): string {
  if (/^([a-zA-Z]:)?[\\/]/.test(rel)) return rel
  const sep = dir.includes('\\') && !dir.includes('/') ? '\\' : '/'
  return `${dir.replace(/[\\/]+$/, '')}${sep}${rel}`
}

let displayNames: Intl.DisplayNames | null | undefined

/** "en" → "English"; unknown codes come back as they are. */
export function languageName(code: string): string {
  if (displayNames === undefined) {
    try {
      displayNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' })
    } catch {
      displayNames = null
    }
  }
  try {
    const name = displayNames?.of(code)
    return name && name !== code ? name : code
  } catch {
    return code
  }
}

/** "1 segment", "2 segments": every count shown goes through here. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}

/** "English only", "English, German", "99 languages". */
export function languagesLabel(languages: string[]): string {
  if (languages.length === 0) return 'No languages listed'
  if (languages.length === 1) return `${languageName(languages[0])} only`
  if (languages.length <= 3) return languages.map(languageName).join(', ')
  return `${languages.length} languages`
}

/** What runs the models, for people: "cpu" → "CPU", "cuda:0" → "NVIDIA GPU (CUDA 0)". */
export function deviceLabel(device: string): string {
  if (device === 'cpu') return 'CPU'
  if (device.startsWith('cuda')) return `NVIDIA GPU (CUDA${device.includes(':') ? ` ${device.split(':')[1]}` : ''})`
  if (device === 'metal') return 'Apple GPU (Metal)'
  return device
}
