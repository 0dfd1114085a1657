import { render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, fail } from './bindingsMock'
import { resetApp } from './helpers'
import { App } from '../../src/App'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

async function openSettings() {
  render(<App />)
  await userEvent.keyboard('{Control>}9{/Control}')
  return screen.findByTestId('remote-backend-status')
}

describe('the backend in Settings', () => {
  beforeEach(resetApp)

  it('sends the work to a server with its key, never shows the key, and goes back', async () => {
    const status = await openSettings()
    await waitFor(() => expect(status).toHaveTextContent('This computer.'))
    await userEvent.type(screen.getByLabelText('Remote server URL'), 'http://gpu-box:8000/v1')
    await userEvent.type(screen.getByLabelText('Remote server key'), 'sk-secret')
    await userEvent.click(screen.getByRole('button', { name: 'Use this server' }))
    expect(commands.setRemoteBackend).toHaveBeenCalledWith('http://gpu-box:8000/v1', 'sk-secret')
    await waitFor(() =>
      expect(status).toHaveTextContent('run on http://gpu-box:8000/v1, with an API key. Jobs and history stay here.'),
    )
    // The key field is emptied: the key lives on the Rust side only.
    expect(screen.getByLabelText('Remote server key')).toHaveValue('')
    expect(screen.getByLabelText('Remote server key')).toHaveAttribute('placeholder', 'Kept')

    await userEvent.click(screen.getByRole('button', { name: 'Use this computer' }))
    expect(commands.setRemoteBackend).toHaveBeenLastCalledWith(null, null)
    await waitFor(() => expect(status).toHaveTextContent('This computer.'))
  })

  it('says plainly why a server cannot be used', async () => {
    commands.setRemoteBackend.mockResolvedValue(
      fail('invalid', '"gpu-box" is not a server\'s address: give its OpenAI base URL'),
    )
    const status = await openSettings()
    await waitFor(() => expect(status).toHaveTextContent('This computer.'))
    await userEvent.type(screen.getByLabelText('Remote server URL'), 'gpu-box')
    await userEvent.click(screen.getByRole('button', { name: 'Use this server' }))
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not use that server')
    expect(alert).toHaveTextContent('is not a server')
    expect(status).toHaveTextContent('This computer.')
  })
})
