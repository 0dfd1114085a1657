// How each kind of job is named and drawn in History.

import type { JobKind } from '../../bindings'
import type { IconName } from '../../components/Icon'

export const JOB_KINDS: Record<JobKind, { label: string; icon: IconName }> = {
  transcribe: { label: 'Transcript', icon: 'transcribe' },
  speak: { label: 'Speech', icon: 'speak' },
  speak_batch: { label: 'Batch', icon: 'batch' },
  chat: { label: 'Chat', icon: 'chat' },
}
