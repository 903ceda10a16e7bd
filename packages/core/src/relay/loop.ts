import type { Knex } from 'knex';
import { fullJitterBackoff } from '../retry/backoff';
import { isConnectionLoss } from '../store/errors/connection-loss';
import { isStoreOutage } from '../store/outage';
import { runCycle, type CycleReport, type SiblingHint } from './cycle';
import { idAfter } from './row-order';
import type { RelayRuntime } from './runtime';

/** Longest pause between cycles while the database is unavailable. */
const OUTAGE_BACKOFF_CAP_MS = 5_000;

/** Every how many claims a loop ignores its siblings' hint and scans from the start. */
const HINT_EVERY = 4;

/** How far one loop has got, as its sibling hint needs to know. */
interface LoopProgress {
  cycles: number;
  /** The last batch was full: there is a backlog. */
  full: boolean;
}

/**
 * Runs one cycle and adds its counts to the relay's totals and instruments; schedules a
 * wake-up for the earliest retry it set. `siblings` is null for `runOnce`. @internal
 */
export async function countedCycle(
  rt: RelayRuntime,
  siblings: SiblingHint | null = null,
): Promise<CycleReport> {
  const { state, counters, instruments } = rt;
  let current: Knex.Transaction | null = null;
  const report = await runCycle(rt.options, {
    track: (trx) => {
      if (current) rt.open.delete(current);
      current = trx;
      if (trx) rt.open.add(trx);
    },
    cancelled: () => state.abandoned || (state.stopping && !state.draining),
    siblings,
    gate: rt.gate,
    keyCursor: rt.keyCursor,
  });
  if (report.published > 0) {
    counters.published += report.published;
    rt.rate.add(report.published);
    instruments.published.add(report.published);
  }
  if (report.failed > 0) {
    counters.failed += report.failed;
    instruments.failed.add(report.failed);
  }
  if (report.dead > 0) {
    counters.dead += report.dead;
    instruments.dead.add(report.dead);
  }
  if (report.nextRetryMs !== null && state.running) rt.waker.oneAfter(report.nextRetryMs + 5);
  return report;
}

/** The last heads the sibling loops' open cycles hold. */
function siblingHeads(rt: RelayRuntime, index: number): string[] {
  return rt.held.filter((id, i): id is string => i !== index && id != null);
}

/**
 * While there is a backlog (the last batch was full), a claim starts after the heads
 * sibling loops hold instead of scanning past them; every fourth claim, and any claim after
 * a batch that was not full, looks at everything again, so nothing waits long behind the
 * hint.
 */
function siblingHint(rt: RelayRuntime, index: number, progress: LoopProgress): SiblingHint {
  return {
    after: () => {
      if (!progress.full || progress.cycles % HINT_EVERY === 0) return null;
      let after: string | null = null;
      for (const id of siblingHeads(rt, index))
        if (after === null || idAfter(id, after)) after = id;
      return after;
    },
    hold: (id) => {
      rt.held[index] = id;
    },
  };
}

/** Logs a failed cycle by kind; returns whether it was an outage of the store. */
function logCycleFailure(rt: RelayRuntime, error: unknown, consecutive: number): boolean {
  const { logger } = rt.options;
  const outage = isStoreOutage(error);
  if (isConnectionLoss(error)) {
    // A partition, restart or failover: expected to pass, and the next cycle runs on a
    // new connection (after a restart knex reports the dead transaction as "Transaction
    // query already complete").
    logger.warn('relay: database connection lost; retrying on a new connection', {
      error: String(error),
      consecutive,
    });
  } else if (outage) {
    // Disk full, read-only, out of memory: the events are not at fault (nothing is
    // charged); a batch already published is published again and deduplicated downstream.
    logger.warn('relay: database unavailable; retrying with backoff', {
      error: String(error),
      consecutive,
    });
  } else {
    logger.error('relay: cycle failed', { error: String(error), consecutive });
  }
  return outage;
}

/**
 * One of the relay's claiming loops: runs cycles back to back while there is work, backs
 * off after failures, and otherwise sleeps until woken or the poll interval passes. Ends
 * when the relay stops (after the backlog, when draining). @internal
 */
export async function runLoop(rt: RelayRuntime, index: number): Promise<void> {
  const { state, waker, options: o } = rt;
  const progress: LoopProgress = { cycles: 0, full: false };
  let errors = 0;
  rt.held[index] = null;
  const siblings = siblingHint(rt, index, progress);
  for (;;) {
    if (state.stopping && !state.draining) return;
    const generation = waker.generation;
    let result: CycleReport;
    try {
      progress.cycles += 1;
      result = await countedCycle(rt, siblings);
      progress.full = result.full;
      errors = 0;
    } catch (error) {
      errors += 1;
      const outage = logCycleFailure(rt, error, errors);
      if (state.stopping) return;
      // An outage may last: back off further than for a one-off failure, up to a few seconds.
      const capMs = outage
        ? Math.max(o.pollIntervalMs * 5, OUTAGE_BACKOFF_CAP_MS)
        : o.pollIntervalMs * 5;
      await waker.sleep(50 + fullJitterBackoff(errors, { baseMs: 100, capMs }));
      continue;
    }
    if (result.full) {
      // A full batch: there is probably more, so let an idle loop help.
      waker.one();
      continue;
    }
    if (state.stopping) {
      if (result.claimed === 0) return;
      continue;
    }
    if (result.claimed > 0 || waker.generation !== generation) continue;
    // Nothing to claim while a sibling loop holds keys: the sibling wakes this loop when its
    // claim ends full, and notifications wake it for new events, so polling meanwhile would
    // only repeat a claim that finds the same keys held (it costs the database a scan each
    // time). The sibling polls on its own schedule once its claim ends, so polling for
    // events of other keys goes on.
    // The same when the backlog's keys are all held elsewhere (another relay process), or
    // backing off: they come free when those holds end, and new events wake this loop.
    const heldElsewhere = siblingHeads(rt, index).length > 0 || result.backlogHeld;
    await waker.sleep(heldElsewhere ? Math.max(o.pollIntervalMs, o.claimHoldMs) : o.pollIntervalMs);
  }
}
