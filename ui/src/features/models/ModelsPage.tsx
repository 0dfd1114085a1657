// Models: the catalog and imported models, what is installed and how much disk it takes.

import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { toast } from '../../lib/toast'
import { describeError } from '../../lib/errors'
import { choose } from '../../lib/choose'
import { formatBytes, plural } from '../../lib/format'
import { changeDefaultModel, useSettings } from '../settings/settingsStore'
import { ModelCard } from './ModelCard'
import { importModel, isInstalled, loadModels, useModels } from './modelsStore'

async function importFolder() {
  const [path] = await choose('model_folder')
  if (!path) return
  try {
    const model = await importModel(path)
    toast({ kind: 'success', title: `Imported ${model.name}`, detail: path })
  } catch (e) {
    const { title, detail } = describeError(e)
    toast({ kind: 'error', title: `Could not import that folder: ${title}`, detail })
  }
}

export function ModelsPage() {
  const { models, loaded, loadError, downloads, errors, removing, importing } = useModels()
  const { settings } = useSettings()
  const installed = models.filter(isInstalled)
  const diskUsed = installed.reduce((sum, m) => sum + (m.disk_bytes || 0), 0)
  const groups: { title: string; items: typeof models }[] = [
    { title: 'Speech to text', items: models.filter((m) => m.task === 'transcribe') },
    { title: 'Text to speech', items: models.filter((m) => m.task === 'speak') },
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
          <button
            type="button"
            className="btn btn-sm"
            onClick={importFolder}
            disabled={importing}
            data-tooltip="Use a Whisper model you already have (CTranslate2 or Hugging Face layout)"
          >
            <Icon name={importing ? 'spinner' : 'folder'} /> Import folder
          </button>
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
              {g.items.map((m) => (
                <ModelCard
                  key={m.id}
                  model={m}
                  download={downloads[m.id]}
                  error={errors[m.id]}
                  removing={!!removing[m.id]}
                  isDefault={settings?.default_transcribe_model === m.id}
                  onMakeDefault={() => makeDefault(m.id)}
                />
              ))}
            </div>
          </section>
        ))}
        {loaded && !loadError && models.length === 0 && (
          <p className="muted">The catalog is empty. Import a model folder to start.</p>
        )}
      </div>
    </div>
  )
}
