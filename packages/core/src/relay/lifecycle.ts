import { finishesWithin } from '../common/time';
import { integerOption } from '../config/options';
import { listen } from './listener';
import { runLoop } from './loop';
import { NO_LIMIT } from './options';
import type { RelayRuntime } from './runtime';
import { readTableStats } from './sql/stats';
import type { StopOptions } from './types';

/**
 * Starts the relay's loops, after subscribing to notifications (when enabled) and to the
 * table gauges. Does nothing when it is running already. @internal
 */
export async function startRelay(rt: RelayRuntime): Promise<void> {
  const { state, options: o } = rt;
  const { store, logger } = o;
  if (state.running) return;
  state.running = true;
  state.stopping = false;
  state.draining = false;
  state.abandoned = false;
  if (o.notify) state.listener = await listen(store, rt.channel, () => rt.waker.one(), logger);
  state.stopObserving = rt.instruments.observeTable(() => readTableStats(store.knex, store.names));
  // PGlite has one connection, and a cycle holds it from claim to commit: more loops
  // would only queue behind each other.
  const concurrency = store.dialect === 'pglite' ? 1 : o.concurrency;
  rt.held.length = 0;
  state.loops = Array.from({ length: concurrency }, (_, index) => runLoop(rt, index));
  logger.info('relay: started', {
    ownerId: o.ownerId,
    listening: state.listener?.active ?? false,
    concurrency,
  });
}

/**
 * Stops the loops (after the backlog when `drain` is set) and waits up to `timeoutMs` for
 * them; batches still in flight then are rolled back. Does nothing when stopped. @internal
 */
export async function stopRelay(rt: RelayRuntime, stopOptions: StopOptions = {}): Promise<void> {
  const { state, options: o } = rt;
  if (!state.running) return;
  const timeoutMs = integerOption(stopOptions.timeoutMs, 'timeoutMs', 30_000, 0, NO_LIMIT);
  state.stopping = true;
  state.draining = stopOptions.drain === true;
  rt.waker.all();
  rt.waker.cancelPending();
  const finished = await finishesWithin(Promise.all(state.loops), timeoutMs);
  if (!finished) {
    // Give back what the stuck cycles hold: rolling back frees their keys at once; a
    // publish still running may be repeated by another relay, with the same message id.
    o.logger.warn('relay: in-flight batches did not finish in time; rolling them back', {
      timeoutMs,
      batches: rt.open.size,
    });
    state.abandoned = true;
    await Promise.all([...rt.open].map((trx) => trx.rollback().catch(() => undefined)));
    rt.open.clear();
  }
  state.stopObserving?.();
  state.stopObserving = null;
  await state.listener?.close();
  state.listener = null;
  state.loops = [];
  state.running = false;
  o.logger.info('relay: stopped', { ownerId: o.ownerId });
}
