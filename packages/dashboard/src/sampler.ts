import { isJustonceError } from '@justonce/core';
import type { Admin, StoreStatus } from '@justonce/core/admin';

/** One point of the overview's chart. */
export interface Sample {
  readonly at: Date;
  /** Outbox events pending, every destination. */
  readonly outboxPending: number;
  /** Outbox events dead, every destination. */
  readonly outboxDead: number;
  /** Dead letters waiting (not requeued), every consumer. */
  readonly deadLetters: number;
}

/** The chart's window. */
export const WINDOW_MS = 60 * 60 * 1000;
/** Page loads add points too; this bounds the buffer whatever the traffic. */
const MAX_POINTS = 4000;

/** The figures of one status read that the chart draws. */
export function sampleOf(status: StoreStatus): Sample {
  const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
  return {
    at: status.at,
    outboxPending: sum(status.outbox.map((d) => d.pending)),
    outboxDead: sum(status.outbox.map((d) => d.dead)),
    deadLetters: sum(status.deadLetters.map((d) => d.count)),
  };
}

/**
 * Samples `admin.status()` every `everyMs` into an in-memory ring of one hour. The store keeps
 * no history, so the chart only covers the time this dashboard has been running.
 */
export class StatusSampler {
  private readonly points: Sample[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private running = false;
  /** The last sampling error's message, shown under the chart. */
  lastError: string | undefined;

  constructor(
    private readonly admin: Admin,
    everyMs: number,
  ) {
    this.timer = setInterval(() => void this.sample(), everyMs);
    // A dashboard must not keep the process alive on its own.
    this.timer.unref?.();
    void this.sample();
  }

  /** Reads the status once and records it; overlapping reads are skipped. */
  async sample(): Promise<void> {
    if (this.running || this.timer === undefined) return;
    this.running = true;
    try {
      this.record(sampleOf(await this.admin.status()));
      this.lastError = undefined;
    } catch (error) {
      // Reads need no token: only justonce's own messages are shown, never a driver's.
      this.lastError = isJustonceError(error)
        ? `${error.code}: ${error.message}`
        : `${error instanceof Error ? error.name : 'error'} while reading the status`;
    } finally {
      this.running = false;
    }
  }

  /** Adds a point (in time order) and drops those older than the window. */
  record(sample: Sample): void {
    const last = this.points.at(-1);
    if (last !== undefined && sample.at.getTime() < last.at.getTime()) return;
    this.points.push(sample);
    const oldest = sample.at.getTime() - WINDOW_MS;
    let drop = 0;
    while (drop < this.points.length && this.points[drop]!.at.getTime() < oldest) drop++;
    drop = Math.max(drop, this.points.length - MAX_POINTS);
    if (drop > 0) this.points.splice(0, drop);
  }

  /** The points of the last hour, oldest first. */
  samples(): readonly Sample[] {
    return this.points.slice();
  }

  /** Stops sampling. Idempotent. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
