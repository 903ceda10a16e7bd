import { errorText } from '../../common/errors';
import { finishesWithin, sleep } from '../../common/time';
import { integerOption, optionalBoolean } from '../../config/options';
import { ConfigurationError } from '../../errors/configuration-error';
import { StoreUnavailableError } from '../../errors/store-unavailable-error';
import { fullJitterBackoff } from '../../retry/backoff';
import { listDead, requeue } from '../dead-events';
import { cleanupLimits } from '../cleanup';
import { NO_LIMIT } from '../options';
import type { RelayRuntime } from '../runtime';
import { deletePublishedBatch } from '../sql/cleanup';
import type { CleanupOptions, CycleResult, Relay, RelayStats, StopOptions } from '../types';
import { recordBoundary } from './cut-over';
import {
  dropHandedBackSlot,
  handBackIncomplete,
  handedBackError,
  isHandedBack,
  readHandBack,
} from './hand-back';
import { observeSlot } from './metrics';
import type { ResolvedLogOptions } from './options';
import { runSession, type SessionControl, type SessionView } from './session';
import { checkServer, ensurePublicationAndSlot, readSlotPosition } from './setup';
import { deleteOldEventsBatch } from './sql/events';
import { rowsOf } from '../../store/migrate';

/** PostgreSQL's "object in use": another process reads the slot. */
const SLOT_IN_USE = '55006';

/** What one log relay keeps between its calls. */
interface LogState {
  running: boolean;
  stopping: boolean;
  draining: boolean;
  /** Set by `stop({ handBackToPolling: true })`. */
  handingBack: boolean;
  /** Set once a session handed the outbox back to polling relays: the loop reads no more. */
  handedBack: boolean;
  /** Aborted when a stop gave up waiting: the session stops at once, confirming nothing more. */
  abandon: AbortController;
  /** Aborted by `stop`: wakes an idle session and ends a wait between attempts. */
  stopSignal: AbortController;
  /** Set when `start` or `runOnce` made sure of the server, the publication and the slot. */
  prepared: boolean;
  loop: Promise<void> | null;
  view: SessionView | null;
  /** When its last session was lost to an error, until the next one starts. */
  lostAt: number | null;
  /** Whether it was standing by at the last attempt (so that it says so once). */
  standingBy: boolean;
  stopObserving: (() => void) | null;
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/**
 * Seconds the relay is behind: since the commit of the oldest event it read and has not had
 * acknowledged (0 with none), or since its session was lost while it reconnects; null while
 * it reads nothing of its own accord (never started reading, or standing by).
 */
function lagSeconds(state: LogState): number | null {
  const now = Date.now();
  if (state.view === null) return state.lostAt === null ? null : (now - state.lostAt) / 1000;
  const oldest = state.view.queue[0]?.commitTimeMs;
  return oldest === undefined ? 0 : Math.max(0, now - oldest) / 1000;
}

/**
 * Logs why a session ended or could not start, and resolves to the wait before the next try:
 * `standbyRetryMs` while another process reads the slot, else a backoff (an outage, or a
 * server that is not, or no longer, set up for the log mode).
 */
function onSessionError(
  rt: RelayRuntime,
  log: ResolvedLogOptions,
  state: LogState,
  error: unknown,
  failures: number,
): number {
  const { logger } = rt.options;
  if (codeOf(error) === SLOT_IN_USE) {
    if (!state.standingBy)
      logger.info('relay: another process reads the slot; standing by', { slot: log.slot });
    state.standingBy = true;
    return log.standbyRetryMs;
  }
  if (state.view !== null || state.lostAt === null) state.lostAt = Date.now();
  // A slot or publication dropped under the relay (42704) is made again, when allowed.
  if (codeOf(error) === '42704') state.prepared = false;
  const delayMs = fullJitterBackoff(failures, { baseMs: 200, capMs: 10_000 });
  const level = error instanceof ConfigurationError ? 'error' : 'warn';
  logger[level]('relay: replication stream failed; will retry', {
    slot: log.slot,
    error: errorText(error instanceof Error ? `${error.name}: ${error.message}` : error),
    retryInMs: delayMs,
  });
  return delayMs;
}

/**
 * Reads the slot, standing by while another process does, until stopped, drained or handed
 * back (then it drops the slot). A slot handed back before ends it with an error logged.
 */
async function readSlot(
  rt: RelayRuntime,
  log: ResolvedLogOptions,
  state: LogState,
  prepare: () => Promise<void>,
  control: () => SessionControl,
): Promise<void> {
  const o = rt.options;
  let failures = 0;
  while (!(state.stopping && !state.draining) && !state.abandon.signal.aborted) {
    let delayMs: number;
    try {
      await prepare();
      if ((await runSession(rt, log, control())) === 'handed back') {
        state.handedBack = true;
        await dropHandedBackSlot(o.store, log, o.logger);
        return;
      }
      if (state.draining && !state.handingBack) return;
      failures = 0;
      continue;
    } catch (error) {
      if (isHandedBack(error)) {
        o.logger.error('relay: the slot was handed back to polling; this relay reads it no more', {
          slot: log.slot,
        });
        return;
      }
      delayMs = onSessionError(rt, log, state, error, (failures += 1));
    }
    // A drain goes on trying until its time is up; a plain stop ends the wait.
    const stop = state.draining ? undefined : state.stopSignal.signal;
    await sleep(delayMs, state.abandon.signal, stop);
  }
}

/**
 * The `'log'` mode of {@link createRelay}: the same {@link Relay}, reading the outbox's inserts
 * from a logical replication slot instead of claiming rows (docs/relays.md). @internal
 */
export function createLogRelay(rt: RelayRuntime, log: ResolvedLogOptions): Relay {
  const o = rt.options;
  const state: LogState = {
    running: false,
    stopping: false,
    draining: false,
    handingBack: false,
    handedBack: false,
    abandon: new AbortController(),
    stopSignal: new AbortController(),
    prepared: false,
    loop: null,
    view: null,
    lostAt: null,
    standingBy: false,
    stopObserving: null,
  };

  const prepare = async (): Promise<void> => {
    if (state.prepared) return;
    await checkServer(o.store.knex);
    // Before the slot: a handed-back slot that was dropped must not be created again.
    if ((await readHandBack(o.store, log.slot))?.done === true) throw handedBackError(log.slot);
    await ensurePublicationAndSlot(o.store, log);
    if (log.takeOverFromPolling) await recordBoundary(o.store, log);
    state.prepared = true;
  };

  const control = (untilCaughtUp: () => boolean): SessionControl => ({
    signal: state.abandon.signal,
    stopping: () => state.stopping && !state.draining,
    untilCaughtUp,
    poke: state.stopSignal.signal,
    handBack: () => state.handingBack,
    onView: (view) => {
      state.view = view;
      if (view === null) return;
      state.lostAt = null;
      if (state.standingBy) o.logger.info('relay: took over the slot', { slot: log.slot });
      state.standingBy = false;
    },
  });

  const run = (): Promise<void> =>
    readSlot(rt, log, state, prepare, () => control(() => state.draining));

  const startRelay = async (): Promise<void> => {
    if (state.running) return;
    await state.loop;
    try {
      await prepare();
    } catch (error) {
      if (error instanceof ConfigurationError) throw error;
      // An outage: the loop tries again until the server answers.
      o.logger.warn('relay: could not check the server yet; will retry', { error: String(error) });
    }
    state.running = true;
    state.stopping = false;
    state.draining = false;
    state.handingBack = false;
    state.abandon = new AbortController();
    state.stopSignal = new AbortController();
    state.stopObserving = observeSlot(o.meter, log.slot, {
      position: () => readSlotPosition(o.store.knex, log.slot).catch(() => null),
      lagSeconds: () => lagSeconds(state),
    });
    state.loop = run().catch((error: unknown) => {
      o.logger.error('relay: stopped on an unexpected error', { error: String(error) });
    });
    o.logger.info('relay: started', { ownerId: o.ownerId, mode: 'log', slot: log.slot });
  };

  const stopRelay = async (stopOptions: StopOptions = {}): Promise<void> => {
    const handBack = optionalBoolean(stopOptions.handBackToPolling, 'handBackToPolling', false);
    if (!state.running) {
      if (handBack) throw handBackIncomplete(log, 0);
      return;
    }
    const timeoutMs = integerOption(stopOptions.timeoutMs, 'timeoutMs', 30_000, 0, NO_LIMIT);
    state.stopping = true;
    state.handingBack = handBack;
    state.draining = stopOptions.drain === true || state.handingBack;
    state.stopSignal.abort();
    const loop = state.loop ?? Promise.resolve();
    if (!(await finishesWithin(loop, timeoutMs))) {
      o.logger.warn('relay: the batch in flight did not finish in time; leaving it unconfirmed', {
        timeoutMs,
      });
      state.abandon.abort();
    }
    state.stopObserving?.();
    state.stopObserving = null;
    state.running = false;
    o.logger.info('relay: stopped', { ownerId: o.ownerId });
    if (state.handingBack && !state.handedBack) throw handBackIncomplete(log, timeoutMs);
  };

  return {
    ownerId: o.ownerId,
    get running() {
      return state.running;
    },
    start: startRelay,
    stop: stopRelay,
    runOnce: () =>
      runOnceLog(
        rt,
        prepare,
        control(() => true),
      ),
    stats: () => logStats(rt, log, state.view, lagSeconds(state)),
    listDead: (listOptions) => listDead(rt, listOptions),
    requeue: (id) => requeue(rt, id),
    cleanup: (cleanupOptions) => cleanupByAge(rt, cleanupOptions),
  };
}

/**
 * `runOnce` in log mode: reads the slot until the server has nothing more, publishes and
 * confirms it, and ends the session. Another process reading the slot leaves nothing to do.
 */
async function runOnceLog(
  rt: RelayRuntime,
  prepare: () => Promise<void>,
  control: SessionControl,
): Promise<CycleResult> {
  const before = { ...rt.counters };
  try {
    await prepare();
    await runSession(rt, rt.options.log!, control);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    if (codeOf(error) !== SLOT_IN_USE) throw new StoreUnavailableError(error, { mode: 'log' });
  }
  const published = rt.counters.published - before.published;
  const dead = rt.counters.dead - before.dead;
  return {
    claimed: published + dead,
    published,
    failed: rt.counters.failed - before.failed,
    dead,
    released: 0,
  };
}

async function logStats(
  rt: RelayRuntime,
  log: ResolvedLogOptions,
  view: SessionView | null,
  lagSeconds: number | null,
): Promise<RelayStats> {
  const { store } = rt.options;
  const [position, dead] = await Promise.all([
    readSlotPosition(store.knex, log.slot),
    store.knex.raw(
      `select count(*)::int as n from ${store.names.table('outbox')} where status = 'dead'`,
    ),
  ]);
  const queue = view?.queue ?? [];
  const pending = queue.reduce((n, t) => n + t.events.length, 0) - (view?.headDone ?? 0);
  const oldest = queue[0]?.commitTimeMs;
  return {
    pending,
    oldestPendingAgeMs: oldest === undefined ? 0 : Math.max(0, Date.now() - oldest),
    dead: Number(rowsOf<{ n: number }>(dead)[0]?.n ?? 0),
    published: rt.counters.published,
    failed: rt.counters.failed,
    markedDead: rt.counters.dead,
    publishedPerSec: rt.rate.perSecond(),
    listening: view !== null,
    log: {
      slot: log.slot,
      active: view !== null,
      confirmedLsn: position?.confirmedLsn ?? null,
      lagBytes: position?.lagBytes ?? 0,
      lagSeconds,
    },
  };
}

/**
 * `cleanup` in log mode: deletes events created more than `olderThanMs` ago, dead ones
 * excepted (and published ones a polling relay kept before the switch), in bounded batches.
 */
async function cleanupByAge(
  rt: RelayRuntime,
  cleanupOptions: CleanupOptions = {},
): Promise<number> {
  const { olderThanMs, batchSize, maxBatches } = cleanupLimits(cleanupOptions);
  const { knex, names } = rt.options.store;
  let total = 0;
  let afterId: string | null = null;
  let batches = 0;
  for (; batches < maxBatches; batches += 1) {
    const batch = await deleteOldEventsBatch(knex, names, olderThanMs, afterId, batchSize);
    total += batch.deleted;
    if (batch.allYoung || batch.lastId === null) break;
    afterId = batch.lastId;
  }
  for (; batches < maxBatches; batches += 1) {
    const deleted = await deletePublishedBatch(knex, names, olderThanMs, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
  }
  return total;
}
