// One model of the catalog: what it is, and download / cancel / remove with progress and errors.

import type { ModelInfo } from '../../bindings'
import { confirm } from '../../lib/confirm'
import { ErrorNote } from '../../components/ErrorNote'
import { Icon } from '../../components/Icon'
import { ProgressBar } from '../../components/ProgressBar'
import { toast } from '../../lib/toast'
import { formatBytes, formatEta, formatRate, languageName, languagesLabel } from '../../lib/format'
import { cancelDownload, dismissModelError, downloadModel, removeModel, type DownloadState } from './modelsStore'

const TASKS: Record<ModelInfo['task'], string> = {
  transcribe: 'Speech to text',
  speak: 'Text to speech',
  chat: 'Chat',
}

export function ModelCard({
  model,
  imports = [],
  download,
  error,
  removing,
  defaultModel,
  onMakeDefault,
}: {
  model: ModelInfo
  /** Imports that are this catalog model: the card shows it installed through them. */
  imports?: ModelInfo[]
  download?: DownloadState
  error?: { action: 'download' | 'remove'; error: unknown }
  removing?: boolean
  defaultModel?: string | null
  onMakeDefault?: (id: string) => void
}) {
  // A catalog model not downloaded but imported is used (and removed) as its import.
  const via = model.status !== 'installed' ? (imports[0] ?? null) : null
  const target = via ?? model
  const installed = target.status === 'installed'
  const local = target.source.kind === 'local'
  const isDefault = defaultModel != null && (defaultModel === model.id || imports.some((i) => i.id === defaultModel))
  const pct = download && download.total > 0 ? download.downloaded / download.total : null

  const remove = async () => {
    const ok = await confirm({
      title: `Remove ${target.name}?`,
      body: local
        ? `Izwi forgets this imported model. The files in ${target.source.kind === 'local' ? target.source.imported_from : 'its folder'} stay where they are.`
        : `This frees ${formatBytes(model.disk_bytes || model.size_bytes)}. You can download it again later; transcripts made with it stay.`,
      confirmLabel: 'Remove',
      danger: true,
    })
    if (!ok) return
    const freed = await removeModel(target.id)
    if (freed != null)
      toast({
        kind: 'success',
        title: `Removed ${target.name}`,
        detail: freed > 0 ? `${formatBytes(freed)} freed` : undefined,
      })
  }

  return (
    <article
      className={`model-card${installed ? ' model-installed' : ''}${download ? ' model-downloading' : ''}`}
      aria-label={model.name}
      data-model={model.id}
    >
      <div className="model-head">
        <div className="model-names">
          <h3 className="model-name">
            {model.name}
            {isDefault && <span className="badge badge-default">Default</span>}
          </h3>
          <code className="model-id">{model.id}</code>
        </div>
        <div className="model-status">
          {installed ? (
            <span className="badge badge-done">
              <Icon name="check" size={11} /> {via ? 'Imported' : 'Installed'}
            </span>
          ) : download ? (
            <span className="badge badge-running">Downloading</span>
          ) : (
            <span className="badge badge-muted">Not installed</span>
          )}
        </div>
      </div>
      <p className="model-desc">{model.description}</p>
      <ul className="model-facts" aria-label="Details">
        <li>{TASKS[model.task]}</li>
        <li className="tabular" data-testid="model-size">
          {formatBytes(installed && model.disk_bytes ? model.disk_bytes : model.size_bytes)}
        </li>
        <li title={model.languages.map(languageName).join(', ')}>{languagesLabel(model.languages)}</li>
        {model.license && <li>{model.license}</li>}
      </ul>
      <p
        className="model-source truncate"
        title={model.source.kind === 'catalog' ? model.source.repo : model.source.imported_from}
      >
        {model.source.kind === 'catalog' ? model.source.repo : `Imported from ${model.source.imported_from}`}
      </p>
      {imports.length > 0 && (
        <p className="model-imported" data-testid="model-imported">
          {imports.map((i) => (
            <span
              key={i.id}
              className="truncate"
              title={i.source.kind === 'local' ? i.source.imported_from : undefined}
            >
              Your import <code className="model-id">{i.id}</code> is this model
              {i.source.kind === 'local' ? ` (from ${i.source.imported_from})` : ''}.
            </span>
          ))}
        </p>
      )}

      {download && (
        <div className="model-progress">
          <ProgressBar value={pct} label={`Downloading ${model.name}`} />
          <div className="model-progress-text tabular" data-testid="download-progress">
            <span>
              {formatBytes(download.downloaded)} of {formatBytes(download.total)}
            </span>
            {download.bytesPerSecond > 0 && <span>{formatRate(download.bytesPerSecond)}</span>}
            <span>{download.cancelling ? 'Cancelling…' : formatEta(download.etaSeconds)}</span>
          </div>
        </div>
      )}

      {error && (
        <ErrorNote
          compact
          error={error.error}
          title={error.action === 'download' ? 'The download stopped' : 'Could not remove it'}
          onRetry={error.action === 'download' ? () => downloadModel(model.id) : undefined}
          onDismiss={() => dismissModelError(model.id)}
        />
      )}

      <div className="model-actions">
        {download ? (
          <button
            type="button"
            className="btn btn-sm"
            disabled={download.cancelling}
            onClick={() => cancelDownload(model.id)}
            aria-label={`Cancel download of ${model.name}`}
          >
            <Icon name="stop" size={11} /> Cancel
          </button>
        ) : installed ? (
          <>
            {model.task === 'transcribe' && !isDefault && onMakeDefault && (
              <button type="button" className="btn btn-ghost btn-sm" onClick={() => onMakeDefault(target.id)}>
                Make default
              </button>
            )}
            <button
              type="button"
              className="btn btn-ghost btn-sm btn-danger-text"
              disabled={removing}
              onClick={remove}
              aria-label={`Remove ${target.name}`}
            >
              <Icon name={removing ? 'spinner' : 'trash'} size={13} /> Remove
            </button>
          </>
        ) : (
          <button
            type="button"
            className="btn btn-primary btn-sm"
            onClick={() => downloadModel(model.id)}
            aria-label={`Download ${model.name}`}
          >
            <Icon name="download" size={13} /> Download · {formatBytes(model.size_bytes)}
          </button>
        )}
      </div>
    </article>
  )
}
