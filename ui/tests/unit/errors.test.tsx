import { render, screen } from '@testing-library/react'
import { describe, expect, it } from 'vitest'
import { ErrorNote } from '../../src/components/ErrorNote'
import { describeError, jobError, jobFailureText } from '../../src/lib/errors'

describe('errors in plain words', () => {
  it('says an unreadable file is the file’s problem, not the model’s, and what to do', () => {
    const message = '/home/ada/notes.mp3: unsupported or unrecognised audio format: probe failed'
    render(<ErrorNote error={jobError(message)} title="Transcription failed" />)
    const note = screen.getByRole('alert')
    expect(note).toHaveTextContent('Izwi could not read this audio. Check that the file plays in another app')
    expect(note).toHaveTextContent('/home/ada/notes.mp3: unsupported or unrecognised audio format')
    expect(note).not.toHaveTextContent('The model could not run')
  })

  it('says what to do when no file manager can be opened (no D-Bus session)', () => {
    const { title, detail } = describeError({
      kind: 'internal',
      message:
        'could not open the file manager at /home/ada/out: org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.FileManager1 was not provided',
    })
    expect(title).toBe(
      'No file manager could be opened: this session has no desktop bus (D-Bus). Open /home/ada/out yourself.',
    )
    expect(title).not.toContain('Something went wrong')
    // Said once: no detail repeating it.
    expect(detail).toBe('')
  })

  it('says why a job was cancelled when the user did not cancel it', () => {
    expect(jobFailureText('cancelled', null)).toBe('Cancelled.')
    expect(jobFailureText('cancelled', 'the API request timed out after 600 s')).toBe(
      'The API request timed out after 600 s',
    )
  })

  it('keeps the kind of failures it recognises, the model’s otherwise', () => {
    expect(jobError('Whisper tiny (English) is English-only: it cannot translate').kind).toBe('invalid')
    expect(jobError('loading model local/tiny: weights missing').kind).toBe('model')
    expect(jobError(null, 'interrupted').kind).toBe('interrupted')
    expect(describeError(jobError(null, 'interrupted')).title).toBe(
      'Izwi was closed while this was running. Queue it again to finish it.',
    )
  })
})
