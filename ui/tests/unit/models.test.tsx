import { act, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { commands, emitRuntime, fail, model, ok } from './bindingsMock'
import { resetApp } from './helpers'
import { ConfirmHost } from '../../src/components/Dialog'
import { ModelsPage } from '../../src/features/models/ModelsPage'
import { handleModelEvent, loadModels } from '../../src/features/models/modelsStore'
import { subscribeRuntime } from '../../src/lib/events'
import type { ModelInfo } from '../../src/bindings'

vi.mock('../../src/bindings', () => import('./bindingsMock'))

function deferred<T>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

async function setup(models: ModelInfo[]) {
  commands.listModels.mockResolvedValue(ok(models))
  const sub = subscribeRuntime(handleModelEvent)
  await sub.ready
  await loadModels()
  render(
    <>
      <ModelsPage />
      <ConfirmHost />
    </>,
  )
}

const progress = (downloaded: number, rate: number, eta: number | null) =>
  ({
    type: 'download',
    model_id: 'whisper-base',
    file: 'model.bin',
    downloaded,
    total: 290_000_000,
    bytes_per_second: rate,
    eta_seconds: eta,
    done: false,
  }) as const

describe('model cards', () => {
  beforeEach(resetApp)

  it('lists the catalog with what each model is', async () => {
    await setup([
      model(),
      model({
        id: 'whisper-tiny.en',
        name: 'Whisper tiny (English)',
        status: 'installed',
        languages: ['en'],
        size_bytes: 77_700_000,
        disk_bytes: 77_700_000,
      }),
    ])
    const card = screen.getByRole('article', { name: 'Whisper base' })
    expect(within(card).getByText('whisper-base')).toBeInTheDocument()
    expect(within(card).getByText('290 MB')).toBeInTheDocument()
    expect(within(card).getByText('4 languages')).toBeInTheDocument()
    expect(within(card).getByText('MIT')).toBeInTheDocument()
    expect(within(card).getByText('Not installed')).toBeInTheDocument()
    const tiny = screen.getByRole('article', { name: 'Whisper tiny (English)' })
    expect(within(tiny).getByText('English only')).toBeInTheDocument()
    expect(within(tiny).getByText('Installed')).toBeInTheDocument()
    expect(screen.getByTestId('models-summary')).toHaveTextContent('1 model installed · 77.7 MB on disk')
  })

  it('shows download progress with rate and ETA, then installs', async () => {
    const answer = deferred<ReturnType<typeof ok<ModelInfo>>>()
    commands.downloadModel.mockReturnValue(answer.promise as never)
    await setup([model()])
    const card = screen.getByRole('article', { name: 'Whisper base' })
    await userEvent.click(within(card).getByRole('button', { name: 'Download Whisper base' }))
    expect(commands.downloadModel).toHaveBeenCalledWith('whisper-base')
    expect(within(card).getByText('Downloading')).toBeInTheDocument()

    act(() => emitRuntime(progress(72_500_000, 5_000_000, 43.5)))
    const bar = within(card).getByRole('progressbar', { name: 'Downloading Whisper base' })
    expect(bar).toHaveAttribute('aria-valuenow', '25')
    const text = within(card).getByTestId('download-progress')
    expect(text).toHaveTextContent('72.5 MB of 290 MB')
    expect(text).toHaveTextContent('5 MB/s')
    expect(text).toHaveTextContent('44 s left')

    act(() => emitRuntime(progress(145_000_000, 5_200_000, 27.9)))
    expect(bar).toHaveAttribute('aria-valuenow', '50')
    expect(text).toHaveTextContent('145 MB of 290 MB')
    expect(text).toHaveTextContent('28 s left')

    await act(async () => answer.resolve(ok(model({ status: 'installed', disk_bytes: 290_000_000 }))))
    expect(within(card).getByText('Installed')).toBeInTheDocument()
    expect(within(card).queryByRole('progressbar')).not.toBeInTheDocument()
    expect(within(card).getByRole('button', { name: 'Remove Whisper base' })).toBeInTheDocument()
  })

  it('says in plain words why a download failed, and retries', async () => {
    commands.downloadModel.mockResolvedValueOnce(
      fail('network', 'error sending request for url (https://huggingface.co/...)') as never,
    )
    await setup([model()])
    const card = screen.getByRole('article', { name: 'Whisper base' })
    await userEvent.click(within(card).getByRole('button', { name: 'Download Whisper base' }))
    const alert = await within(card).findByRole('alert')
    expect(alert).toHaveTextContent('The download stopped')
    expect(alert).toHaveTextContent('Could not reach the model hub. Check the connection and try again.')
    expect(alert).toHaveTextContent('Error sending request')

    commands.downloadModel.mockReturnValueOnce(new Promise(() => {}) as never)
    await userEvent.click(within(alert).getByRole('button', { name: 'Try again' }))
    expect(commands.downloadModel).toHaveBeenCalledTimes(2)
    expect(within(card).queryByRole('alert')).not.toBeInTheDocument()
  })

  it('cancels a download without calling it an error', async () => {
    const answer = deferred<unknown>()
    commands.downloadModel.mockReturnValue(answer.promise as never)
    await setup([model()])
    const card = screen.getByRole('article', { name: 'Whisper base' })
    await userEvent.click(within(card).getByRole('button', { name: 'Download Whisper base' }))
    act(() => emitRuntime(progress(30_000_000, 4_000_000, null)))
    expect(within(card).getByTestId('download-progress')).toHaveTextContent('Estimating…')
    await userEvent.click(within(card).getByRole('button', { name: 'Cancel download of Whisper base' }))
    expect(commands.cancelDownload).toHaveBeenCalledWith('whisper-base')
    expect(within(card).getByText('Cancelling…')).toBeInTheDocument()
    await act(async () => answer.resolve(fail('cancelled', 'cancelled')))
    expect(within(card).queryByRole('alert')).not.toBeInTheDocument()
    expect(within(card).getByRole('button', { name: 'Download Whisper base' })).toBeInTheDocument()
  })

  it('removes an installed model after confirming', async () => {
    commands.removeModel.mockResolvedValue(ok(290_000_000))
    await setup([model({ status: 'installed', disk_bytes: 290_000_000 })])
    commands.listModels.mockResolvedValue(ok([model()]))
    const card = screen.getByRole('article', { name: 'Whisper base' })
    await userEvent.click(within(card).getByRole('button', { name: 'Remove Whisper base' }))
    const dialog = screen.getByRole('dialog', { name: 'Remove Whisper base?' })
    expect(dialog).toHaveTextContent('This frees 290 MB')
    await userEvent.click(within(dialog).getByRole('button', { name: 'Remove' }))
    expect(commands.removeModel).toHaveBeenCalledWith('whisper-base')
    expect(await within(card).findByText('Not installed')).toBeInTheDocument()
  })

  it('imports a Piper .onnx file or a Whisper folder, from one Import menu', async () => {
    await setup([model()])
    const imported = model({
      id: 'local/joe',
      name: 'joe',
      family: 'piper',
      task: 'speak',
      status: 'installed',
      source: { kind: 'local', imported_from: '/home/ada/voices/en_US-joe-medium.onnx' },
    })
    commands.importModel.mockResolvedValue(ok(imported))
    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/voices/en_US-joe-medium.onnx']))
    await userEvent.click(screen.getByRole('button', { name: /Import/ }))
    await userEvent.click(screen.getByRole('menuitem', { name: /Piper voice/ }))
    // One .onnx file (the Rust side's dialog filters and takes a single file).
    expect(commands.choosePaths).toHaveBeenLastCalledWith('model_file')
    expect(commands.importModel).toHaveBeenCalledWith('/home/ada/voices/en_US-joe-medium.onnx', null)

    commands.choosePaths.mockResolvedValueOnce(ok(['/home/ada/models/whisper-small']))
    await userEvent.click(screen.getByRole('button', { name: /Import/ }))
    await userEvent.click(screen.getByRole('menuitem', { name: /Whisper model folder/ }))
    expect(commands.choosePaths).toHaveBeenLastCalledWith('model_folder')
    expect(commands.importModel).toHaveBeenLastCalledWith('/home/ada/models/whisper-small', null)
  })

  it('imports a chat model (.gguf) and lists it under Chat', async () => {
    await setup([model()])
    const gguf = '/home/ada/Models/SmolLM2-135M-Instruct-Q8_0.gguf'
    commands.importModel.mockResolvedValue(
      ok(
        model({
          id: 'local/smollm2',
          name: 'SmolLM2-135M-Instruct-Q8_0',
          family: 'llama',
          task: 'chat',
          status: 'installed',
          source: { kind: 'local', imported_from: gguf },
          languages: [],
        }),
      ),
    )
    commands.choosePaths.mockResolvedValueOnce(ok([gguf]))
    await userEvent.click(screen.getByRole('button', { name: /Import/ }))
    await userEvent.click(screen.getByRole('menuitem', { name: /Chat model \(\.gguf file\)/ }))
    expect(commands.choosePaths).toHaveBeenLastCalledWith('model_file')
    expect(commands.importModel).toHaveBeenCalledWith(gguf, null)
    const group = await screen.findByRole('region', { name: 'Chat' })
    const card = within(group).getByRole('article', { name: 'SmolLM2-135M-Instruct-Q8_0' })
    expect(within(card).getByRole('list', { name: 'Details' })).toHaveTextContent('Chat')
  })

  it('shows an import among its catalog family, and on the catalog card it is', async () => {
    const tinyEn = model({ id: 'whisper-tiny.en', name: 'Whisper tiny (English)', size_bytes: 151_000_000 })
    const base = model({ id: 'whisper-base', name: 'Whisper base', size_bytes: 290_000_000 })
    const small = model({ id: 'whisper-small', name: 'Whisper small', size_bytes: 967_000_000 })
    const voiceModel = model({ id: 'piper-en_US-joe-medium', name: 'Joe', family: 'piper', task: 'speak' })
    const local = (name: string, size: number, patch: object = {}) =>
      model({
        id: `local/${name}`,
        name,
        status: 'installed',
        size_bytes: size,
        disk_bytes: size,
        source: { kind: 'local', imported_from: `/home/ada/models/${name}` },
        ...patch,
      })
    // A fine-tune the hub does not recognise, between base and small by size.
    const custom = local('base-de', 300_000_000)
    // The hub recognised this import as the catalog's tiny.en.
    const tiny = local('tiny', 151_000_000, { catalog_id: 'whisper-tiny.en', languages: ['en'] })
    await setup([tinyEn, base, small, voiceModel, custom, tiny])

    const group = screen.getByRole('region', { name: 'Speech to text' })
    expect(
      within(group)
        .getAllByRole('article')
        .map((a) => a.getAttribute('aria-label')),
    ).toEqual(['Whisper tiny (English)', 'Whisper base', 'base-de', 'Whisper small'])
    const card = within(group).getByRole('article', { name: 'Whisper tiny (English)' })
    expect(within(card).getByText(/Imported/)).toBeInTheDocument()
    expect(within(card).getByTestId('model-imported')).toHaveTextContent('Your import local/tiny is this model')
    expect(within(card).queryByRole('button', { name: /Download/ })).not.toBeInTheDocument()
    // Removing it removes the import; the catalog entry stays.
    expect(within(card).getByRole('button', { name: 'Remove tiny' })).toBeInTheDocument()
  })
})
