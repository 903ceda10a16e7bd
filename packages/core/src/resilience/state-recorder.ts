import { textOf } from '../common/text';
import type { InboxReporting } from '../inbox/reporting';
import type { Clock } from '../retry/clock';
import { stateForget, stateUpsert, type StateRow } from './sql/state-upsert';
import type { ResilienceSnapshot } from './types';

/** Timing of a {@link StateRecorder}; injectable for tests. @internal */
export const STATE_REPORTING = Object.freeze({
  /** Least time between two writes, however often the state changes. */
  minIntervalMs: 2_000,
  /** Time between writes while the consumer works (see `quietMs`). */
  heartbeatMs: 5_000,
  /** Longest wait after failed writes (doubling from `heartbeatMs`). */
  maxBackoffMs: 60_000,
  /** A write taking longer is abandoned (and retried later). */
  timeoutMs: 5_000,
  /** Keys not reported for this long are deleted: the gate no longer tracks them. */
  forgetMs: 3_600_000,
  /** Most breaker keys written per report: the ones not closed first, then the latest changed. */
  maxKeys: 20,
});

/**
 * Reports one consumer's breakers and budget to `consumer_resilience`, off the hot path: the
 * gate only calls {@link StateRecorder.note}, which at most schedules a timer. @internal
 */
export interface StateRecorder {
  /** The consumer worked (`changed`: a breaker changed state, reported within seconds). */
  note(changed: boolean): void;
  /** Writes the state now, after any write in progress. Never rejects. */
  flush(): Promise<void>;
}

/** The rows of `snapshot`: its breakers (capped), or one `*` row without a breaker. */
export function stateRows(snapshot: ResilienceSnapshot, clock: Clock, maxKeys: number): StateRow[] {
  const { window } = snapshot;
  const common = {
    budgetRemaining: snapshot.budgetRemaining ?? null,
    windowMs: Math.round(window.windowMs),
    firstDeliveries: window.firstDeliveries,
    retriesPaid: window.retriesPaid,
    retriesShed: window.retriesShed,
    breakerSheds: window.breakerSheds,
  };
  if (snapshot.breakers.length === 0) return [{ key: '*', state: null, since: null, ...common }];
  // The gate's clock may be a test's; convert its times to the wall clock by their age.
  const wall = (at: number): Date => new Date(Date.now() - Math.max(0, clock.now() - at));
  return [...snapshot.breakers]
    .sort(
      (a, b) => Number(a.state === 'closed') - Number(b.state === 'closed') || b.since - a.since,
    )
    .slice(0, maxKeys)
    .map((b) => ({ key: b.key, state: b.state, since: wall(b.since), ...common }));
}

/**
 * Creates the {@link StateRecorder} of `consumer`, reading `snapshot` when it writes. It keeps
 * writing for `quietMs` after the last work (the breaker's `openMs`: a transport holding its
 * deliveries behind an open breaker tries again within it), then stops until work comes, so a
 * stopped or idle consumer goes stale. @internal
 */
export function createStateRecorder(
  consumer: string,
  reporting: InboxReporting,
  snapshot: () => ResilienceSnapshot,
  clock: Clock,
  quietMs: number,
  timing: typeof STATE_REPORTING = STATE_REPORTING,
): StateRecorder {
  const { store, logger } = reporting;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let due = Infinity;
  let lastWrite = -Infinity;
  let lastWork = -Infinity;
  let failures = 0;
  let chain: Promise<void> = Promise.resolve();

  const schedule = (delayMs: number): void => {
    const at = Date.now() + Math.max(0, delayMs);
    if (timer !== undefined && due <= at) return;
    if (timer !== undefined) clearTimeout(timer);
    due = at;
    timer = setTimeout(
      () => {
        timer = undefined;
        due = Infinity;
        void flush();
      },
      Math.max(0, delayMs),
    );
    timer.unref();
  };

  const writeOnce = async (): Promise<void> => {
    const state = snapshot();
    lastWrite = Date.now();
    const keepGoing = lastWrite - lastWork <= Math.max(quietMs, timing.heartbeatMs);
    const rows = stateRows(state, clock, timing.maxKeys);
    const upsert = stateUpsert(store.names, consumer, rows);
    const forget = stateForget(store.names, consumer, new Date(lastWrite - timing.forgetMs));
    try {
      await store.knex.raw(upsert.sql, upsert.bindings).timeout(timing.timeoutMs);
      await store.knex.raw(forget.sql, forget.bindings).timeout(timing.timeoutMs);
      failures = 0;
      if (keepGoing) schedule(timing.heartbeatMs);
    } catch (error) {
      failures += 1;
      const backoffMs = Math.min(timing.maxBackoffMs, timing.heartbeatMs * 2 ** (failures - 1));
      logger.warn('resilience: could not write the consumer state; retrying later', {
        consumer,
        retryInMs: backoffMs,
        error: error instanceof Error ? error.message : textOf(error),
      });
      // A quiet consumer's report is not retried: status shows it stale in any case.
      if (keepGoing) schedule(backoffMs);
    }
  };

  function flush(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
      due = Infinity;
    }
    chain = chain.then(writeOnce).catch(() => undefined);
    return chain;
  }

  return {
    note(changed) {
      lastWork = Date.now();
      // In a failing spell the backoff's timer stands; a change does not hurry it.
      if (failures > 0) {
        if (timer === undefined) schedule(timing.heartbeatMs);
        return;
      }
      const sinceLast = Date.now() - lastWrite;
      if (changed || lastWrite === -Infinity) schedule(timing.minIntervalMs - sinceLast);
      else if (timer === undefined) schedule(timing.heartbeatMs - sinceLast);
    },
    flush,
  };
}
