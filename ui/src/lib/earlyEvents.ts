// Events for a job the runtime has started before the command that queued it has
// answered with the job's id. A screen that follows one job holds them here and plays
// them once it knows which job is its own.

import type { RuntimeEvent } from './events'

/** Enough for any burst before a command answers; a bound so nothing grows unchecked. */
const MAX_HELD = 10_000

export class EarlyEvents<E extends object = RuntimeEvent> {
  private held: E[] = []

  hold(e: E): void {
    if (this.held.length < MAX_HELD) this.held.push(e)
  }

  /** The held events of `jobId`, in order; the rest are dropped. */
  take(jobId: number): E[] {
    const mine = this.held.filter((e) => 'job_id' in e && e.job_id === jobId)
    this.held = []
    return mine
  }

  clear(): void {
    this.held = []
  }
}
