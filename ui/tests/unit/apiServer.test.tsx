import { render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { apiServer, commands, fail, ok } from './bindingsMock'
import { resetApp } from './helpers'
import { App } from '../../src/App'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

async function openSettings() {
  render(<App />)
  await userEvent.keyboard('{Control>}9{/Control}')
  return screen.findByRole('switch', { name: 'OpenAI-compatible API' })
}

describe('the API switch in Settings', () => {
  beforeEach(resetApp)

  it('starts the API where it was asked to listen, shows where, and stops it', async () => {
    commands.getApiServer.mockResolvedValue(
      ok(apiServer({ settings: { host: '127.0.0.1', port: 8080, api_key: 'old' } })),
    )
    const toggle = await openSettings()
    await waitFor(() => expect(screen.getByLabelText('Port')).toHaveValue('8080'))
    expect(toggle).toHaveAttribute('aria-checked', 'false')
    expect(screen.getByTestId('api-server-status')).toHaveTextContent('Off.')
    expect(screen.getByLabelText('API key')).toHaveValue('old')

    await userEvent.clear(screen.getByLabelText('Port'))
    await userEvent.type(screen.getByLabelText('Port'), '9000')
    await userEvent.clear(screen.getByLabelText('API key'))
    await userEvent.type(screen.getByLabelText('API key'), 's3cret')
    await userEvent.click(toggle)
    expect(commands.startApiServer).toHaveBeenCalledWith({ host: '127.0.0.1', port: 9000, api_key: 's3cret' })
    await waitFor(() => expect(toggle).toHaveAttribute('aria-checked', 'true'))
    expect(screen.getByTestId('api-server-status')).toHaveTextContent('Listening at http://127.0.0.1:9000/v1')
    // Where it listens cannot change under it.
    expect(screen.getByLabelText('Port')).toBeDisabled()

    await userEvent.click(toggle)
    expect(commands.stopApiServer).toHaveBeenCalled()
    await waitFor(() => expect(toggle).toHaveAttribute('aria-checked', 'false'))
    expect(screen.getByLabelText('Port')).toBeEnabled()
  })

  it('says plainly why it could not start, and stays off', async () => {
    commands.startApiServer.mockResolvedValue(
      fail('invalid', 'cannot listen on 127.0.0.1:8080: Address already in use (os error 98)'),
    )
    const toggle = await openSettings()
    await waitFor(() => expect(toggle).toBeEnabled())
    await userEvent.click(toggle)
    const alert = await screen.findByRole('alert')
    expect(alert).toHaveTextContent('Could not start the API')
    expect(alert).toHaveTextContent(/cannot listen on 127\.0\.0\.1:8080: Address already in use/i)
    expect(toggle).toHaveAttribute('aria-checked', 'false')
    expect(screen.getByTestId('api-server-status')).toHaveTextContent('Off.')
  })

  it('does not start on a port that is not one', async () => {
    const toggle = await openSettings()
    await waitFor(() => expect(toggle).toBeEnabled())
    await userEvent.clear(screen.getByLabelText('Port'))
    await userEvent.type(screen.getByLabelText('Port'), '70000')
    expect(toggle).toBeDisabled()
    expect(screen.getByText('A port is 1 to 65535.')).toBeInTheDocument()
  })
})
