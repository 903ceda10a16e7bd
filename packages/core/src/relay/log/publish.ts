import { sleep } from '../../common/time';
import { fullJitterBackoff } from '../../retry/backoff';
import { decide } from '../decide';
import { publishBatch } from '../lane';
import type { RelayRuntime } from '../runtime';
import type { ClaimedRow } from '../sql/claimed-row';
import { markDeadEvents } from './sql/events';

/** When the relay must give up on a batch it has not finished. */
export interface Abandon {
  /** Aborted when a stop gave up waiting: nothing more is published or confirmed. */
  readonly signal: AbortSignal;
  /** True once a stop (not a drain) was asked: a failed batch is not retried any more. */
  readonly stopping: () => boolean;
}

/**
 * Publishes `rows` (a run of events in commit order) until every one is acknowledged or dead,
 * with the polling relay's rules (`decide`): per key, successes up to the first failure are
 * done; the failure is retried after its backoff with the rest of its key, in order; a
 * failure the broker calls final, or one past `maxAttempts`, is marked dead and its key moves
 * on; a failed call (an outage) is retried and never charged. Attempts are counted in memory:
 * the log mode writes to an event's row only when it dies. Resolves to `false` when
 * abandoned before the end (nothing after that may be confirmed). @internal
 */
export async function publishEvents(
  rt: RelayRuntime,
  rows: readonly ClaimedRow[],
  abandon: Abandon,
): Promise<boolean> {
  const o = rt.options;
  let remaining = rows;
  while (remaining.length > 0) {
    if (abandon.signal.aborted) return false;
    const outcome = await publishBatch(o, remaining, rt.gate);
    const d = decide(remaining, outcome, o);
    for (const key of d.disorderedKeys) {
      o.logger.warn('relay: publisher accepted a message after an earlier one of its key failed', {
        key,
      });
    }
    tally(rt, d.published.length, d.failures.length);
    const dead = d.failures.filter((f) => f.dead);
    if (dead.length > 0) {
      const byId = new Map(remaining.map((row) => [row.id, row]));
      const marks = dead.map((f) => ({
        id: f.id,
        attempts: byId.get(f.id)!.attempts + (f.charged ? 1 : 0),
        error: f.error,
      }));
      if (!(await markDead(rt, marks, abandon))) return false;
    }
    const retrying = d.failures.filter((f) => !f.dead);
    const again = new Set([...retrying.map((f) => f.id), ...d.released]);
    if (again.size === 0) return true;
    // A stop leaves the rest unconfirmed, for the next reader, rather than wait out a backoff.
    if (abandon.stopping()) return false;
    const charged = new Set(retrying.filter((f) => f.charged).map((f) => f.id));
    for (const f of retrying) {
      o.logger.warn('relay: publish failed; will retry', {
        id: f.id,
        error: f.error,
        retryInMs: f.delayMs,
      });
    }
    remaining = remaining
      .filter((row) => again.has(row.id))
      .map((row) => (charged.has(row.id) ? { ...row, attempts: row.attempts + 1 } : row));
    await sleep(Math.min(...retrying.map((f) => f.delayMs), o.backoff.capMs), abandon.signal);
  }
  return true;
}

function tally(rt: RelayRuntime, published: number, failed: number): void {
  rt.counters.published += published;
  rt.rate.add(published);
  rt.instruments.published.add(published);
  rt.counters.failed += failed;
  rt.instruments.failed.add(failed);
}

/** Records dead events, retrying through a store outage until it answers or the stop gives up. */
async function markDead(
  rt: RelayRuntime,
  marks: { id: string; attempts: number; error: string }[],
  abandon: Abandon,
): Promise<boolean> {
  const { store, logger } = rt.options;
  for (let failures = 1; ; failures += 1) {
    if (abandon.signal.aborted) return false;
    try {
      const marked = new Set(await markDeadEvents(store.knex, store.names, marks));
      for (const mark of marks) {
        logger.error('relay: event is dead', {
          id: mark.id,
          error: mark.error,
          ...(marked.has(mark.id) ? {} : { recorded: false }),
        });
      }
      rt.counters.dead += marks.length;
      rt.instruments.dead.add(marks.length);
      return true;
    } catch (error) {
      const delayMs = fullJitterBackoff(failures, { baseMs: 200, capMs: 10_000 });
      logger.warn('relay: could not record dead events; will retry', {
        error: String(error),
        retryInMs: delayMs,
      });
      await sleep(delayMs, abandon.signal);
    }
  }
}
