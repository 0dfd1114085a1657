import { useState } from 'react'
import { Icon } from './Icon'
import { copyText } from '../lib/clipboard'
import { toast } from '../lib/toast'

export function CopyButton({
  text,
  label = 'Copy',
  what,
}: {
  text: string | (() => string)
  label?: string
  what?: string
}) {
  const [done, setDone] = useState(false)
  return (
    <button
      type="button"
      className="btn btn-sm"
      onClick={async () => {
        const ok = await copyText(typeof text === 'function' ? text() : text)
        if (ok) {
          setDone(true)
          setTimeout(() => setDone(false), 1500)
        } else {
          toast({ kind: 'error', title: `Could not copy ${what ?? 'the text'}.` })
        }
      }}
    >
      <Icon name={done ? 'check' : 'copy'} size={13} />
      {done ? 'Copied' : label}
    </button>
  )
}
