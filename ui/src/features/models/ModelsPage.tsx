// Models: the catalog and imported models, what is installed and how much disk it takes.

import { useState } from 'react'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { Menu } from '../../components/Menu'
import { toast } from '../../lib/toast'
import { describeError } from '../../lib/errors'
import { choose } from '../../lib/choose'
import { basename, formatBytes, plural } from '../../lib/format'
import { changeDefaultModel, useSettings } from '../settings/settingsStore'
import { arrangeModels, catalogMatch } from './arrange'
import { ModelCard } from './ModelCard'
import { importModel, isInstalled, loadModels, useModels } from './modelsStore'

/**
 * What an import can be: a Whisper model's folder, a Piper voice's `.onnx` (its `.onnx.json`
 * beside it), or a chat model in one `.gguf` file.
 */
const IMPORT_KINDS = [
  { id: 'folder', label: 'Whisper model folder…', hint: 'HF or CTranslate2' },
  { id: 'onnx', label: 'Piper voice (.onnx file)…', hint: '+ .onnx.json' },
  { id: 'gguf', label: 'Chat model (.gguf file)…', hint: 'Llama architecture' },
] as const

async function importFrom(kind: string) {
  const [path] = await choose(kind === 'folder' ? 'model_folder' : 'model_file')
  if (!path) return
  try {
    const model = await importModel(path)
    const match = catalogMatch(model)
    toast({
      kind: 'success',
      title: `Imported ${model.name}`,
      detail: match ? `It is ${match} of the catalog; its card shows it as installed.` : path,
    })
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not import ${basename(path)}: ${title}`, detail })
  }
}

export function ModelsPage() {
  const { models, loaded, loadError, downloads, errors, removing, importing } = useModels()
  const { settings } = useSettings()
  const installed = models.filter(isInstalled)
  const diskUsed = installed.reduce((sum, m) => sum + (m.disk_bytes || 0), 0)
  const [importOpen, setImportOpen] = useState(false)
  const entries = arrangeModels(models)
  const groups = [
    { title: 'Speech to text', items: entries.filter((e) => e.model.task === 'transcribe') },
    { title: 'Text to speech', items: entries.filter((e) => e.model.task === 'speak') },
    { title: 'Chat', items: entries.filter((e) => e.model.task === 'chat') },
  ].filter((g) => g.items.length)

  const makeDefault = async (id: string) => {
    try {
      await changeDefaultModel(id)
      toast({ kind: 'success', title: 'Default model changed' })
    } catch (e) {
      const { title, detail } = describeError(e)
      toast({ kind: 'error', title: `Could not change the default: ${title}`, detail })
    }
  }

  return (
    <div className="page page-models">
      <header className="page-header">
        <h1 className="page-title">Models</h1>
        <p className="page-summary" data-testid="models-summary">
          {loaded ? `${plural(installed.length, 'model')} installed · ${formatBytes(diskUsed)} on disk` : 'Loading…'}
        </p>
        <div className="page-actions">
          <Menu
            label="Import"
            open={importOpen}
            onOpenChange={setImportOpen}
            items={IMPORT_KINDS.map((k) => ({ id: k.id, label: k.label, hint: k.hint }))}
            onSelect={(id) => void importFrom(id)}
            button={(p) => (
              <button
                type="button"
                className="btn btn-sm"
                disabled={importing}
                data-tooltip="Use a model you already have: a Whisper folder, a Piper .onnx or a chat model .gguf"
                {...p}
              >
                <Icon name={importing ? 'spinner' : 'folder'} /> Import…
              </button>
            )}
          />
        </div>
      </header>
      {loadError != null && (
        <ErrorNote error={loadError} title="Could not list the models" onRetry={() => loadModels()} />
      )}
      <div className="page-scroll">
        {groups.map((g) => (
          <section key={g.title} className="model-group" aria-label={g.title}>
            <h2 className="section-label">{g.title}</h2>
            <div className="model-grid">
              {g.items.map(({ model: m, imports }) => (
                <ModelCard
                  key={m.id}
                  model={m}
                  imports={imports}
                  download={downloads[m.id]}
                  error={errors[m.id]}
                  removing={!!removing[m.id] || imports.some((i) => removing[i.id])}
                  defaultModel={settings?.default_transcribe_model ?? null}
                  onMakeDefault={makeDefault}
                />
              ))}
            </div>
          </section>
        ))}
        {loaded && !loadError && models.length === 0 && (
          <p className="muted">The catalog is empty. Import a model to start.</p>
        )}
      </div>
    </div>
  )
}
