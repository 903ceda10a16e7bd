import { cleanupPublished } from './cleanup';
import { listDead, requeue } from './dead-events';
import { startRelay, stopRelay } from './lifecycle';
import { createLogRelay } from './log/log-relay';
import { countedCycle } from './loop';
import { resolveRelayOptions } from './options';
import { createRelayRuntime } from './runtime';
import { readTableStats } from './sql/stats';
import type { CycleResult, Relay, RelayOptions, RelayStats } from './types';

/**
 * Creates a relay: it claims committed outbox events, publishes them through the publisher
 * and marks them, at least once and in order per partition key, safely beside other relays.
 * With `mode: 'log'` (PostgreSQL) it reads them from a logical replication slot instead and
 * confirms the slot's position once the broker acknowledged them (docs/relays.md).
 *
 * @example
 * ```ts
 * const relay = createRelay({ store, publisher: kafkaPublisher });
 * await relay.start();
 * process.on('SIGTERM', () => void relay.stop());
 * ```
 */
export function createRelay(options: RelayOptions): Relay {
  const rt = createRelayRuntime(resolveRelayOptions(options));
  if (rt.options.log !== null) return createLogRelay(rt, rt.options.log);
  const { store } = rt.options;
  const relay: Relay = {
    ownerId: rt.options.ownerId,
    get running() {
      return rt.state.running;
    },
    start: () => startRelay(rt),
    stop: (stopOptions) => stopRelay(rt, stopOptions),

    async runOnce(): Promise<CycleResult> {
      const { claimed, published, failed, dead, released } = await countedCycle(rt);
      return { claimed, published, failed, dead, released };
    },

    async stats(): Promise<RelayStats> {
      const table = await readTableStats(store.knex, store.names);
      return {
        ...table,
        published: rt.counters.published,
        failed: rt.counters.failed,
        markedDead: rt.counters.dead,
        publishedPerSec: rt.rate.perSecond(),
        listening: rt.state.listener?.active ?? false,
      };
    },

    listDead: (listOptions) => listDead(rt, listOptions),
    requeue: (id) => requeue(rt, id),
    cleanup: (cleanupOptions) => cleanupPublished(rt, cleanupOptions),
  };
  return relay;
}
