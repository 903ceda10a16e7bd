import type { Knex } from 'knex';
import { outboxChannel } from '../outbox/channel';
import { fullJitterBackoff } from '../retry/backoff';
import { runCycle, type CycleReport, type SiblingHint } from './cycle';
import { idAfter } from './row-order';
import { createPublishGate } from './publish-gate';
import type { KeyCursor } from './sql/scan-keys';
import { listen, type Listener } from './listener';
import { createRelayInstruments } from './metrics';
import { resolveRelayOptions } from './options';
import { RateWindow } from './rate';
import { deletePublishedBatch } from './sql/cleanup';
import { requeueDead, selectDead } from './sql/dead';
import { readTableStats } from './sql/stats';
import { ConfigurationError } from '../errors/configuration-error';
import { integerOption } from '../config/options';
import { isConnectionLoss } from '../store/errors/connection-loss';
import { isStoreOutage } from '../store/outage';
import type {
  CleanupOptions,
  CycleResult,
  DeadEvent,
  Relay,
  RelayOptions,
  RelayStats,
  StopOptions,
} from './types';

/** Longest pause between cycles while the database is unavailable. */
const OUTAGE_BACKOFF_CAP_MS = 5_000;

/** The upper bound of the per-call integer options, which have none of their own. */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** Every how many claims a loop ignores its siblings' hint and scans from the start. */
const HINT_EVERY = 4;

/** Wakes idle loops one at a time; remembers wakes that found nobody waiting. */
class Waker {
  generation = 0;
  private readonly waiters: Array<() => void> = [];

  /** Wakes one waiting loop (or marks the wake for the next loop that looks). */
  one(): void {
    this.generation += 1;
    this.waiters.shift()?.();
  }

  /** Wakes every waiting loop. */
  all(): void {
    this.generation += 1;
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Sleeps up to `ms`, or until woken. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        const at = this.waiters.indexOf(done);
        if (at >= 0) this.waiters.splice(at, 1);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.push(done);
    });
  }
}

/**
 * Creates a relay: it claims committed outbox events, publishes them through the publisher
 * and marks them, at least once and in order per partition key, safely beside other relays.
 *
 * @example
 * ```ts
 * const relay = createRelay({ store, publisher: kafkaPublisher });
 * await relay.start();
 * process.on('SIGTERM', () => void relay.stop());
 * ```
 */
export function createRelay(options: RelayOptions): Relay {
  const o = resolveRelayOptions(options);
  const { store, logger } = o;
  const channel = outboxChannel(store.names);
  const instruments = createRelayInstruments(o.meter);
  const rate = new RateWindow(10);
  const waker = new Waker();
  const counters = { published: 0, failed: 0, dead: 0 };

  let running = false;
  let stopping = false;
  let draining = false;
  /** Set when a stop timed out: cycles still waiting for a connection claim nothing. */
  let abandoned = false;
  let loops: Promise<void>[] = [];
  let listener: Listener | null = null;
  let stopObserving: (() => void) | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let retryAt = Number.POSITIVE_INFINITY;
  /** Transactions of cycles in flight, so a timed-out stop can roll them back. */
  const open = new Set<Knex.Transaction>();

  const wakeAfter = (ms: number): void => {
    const at = Date.now() + ms;
    if (at >= retryAt) return;
    if (retryTimer !== null) clearTimeout(retryTimer);
    retryAt = at;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      retryAt = Number.POSITIVE_INFINITY;
      waker.one();
    }, ms);
  };

  /** The last head each loop's open cycle holds, for its siblings' claims to start after. */
  const held: Array<string | null> = [];
  /** Where the relay's walk over keys stands, shared by its loops. */
  const keyCursor: KeyCursor = { key: null };
  const gate = createPublishGate(o.maxConcurrentPublishes);

  const cycle = async (siblings: SiblingHint | null = null): Promise<CycleReport> => {
    let current: Knex.Transaction | null = null;
    const report = await runCycle(o, {
      track: (trx) => {
        if (current) open.delete(current);
        current = trx;
        if (trx) open.add(trx);
      },
      cancelled: () => abandoned || (stopping && !draining),
      siblings,
      gate,
      keyCursor,
    });
    if (report.published > 0) {
      counters.published += report.published;
      rate.add(report.published);
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
    if (report.nextRetryMs !== null && running) wakeAfter(report.nextRetryMs + 5);
    return report;
  };

  const loop = async (index: number): Promise<void> => {
    let errors = 0;
    let cycles = 0;
    let full = false;
    held[index] = null;
    // While there is a backlog (the last batch was full), a claim starts after the heads
    // sibling loops hold instead of scanning past them; every fourth claim, and any claim
    // after a batch that was not full, looks at everything again, so nothing waits long
    // behind the hint.
    /** The last heads the sibling loops' open cycles hold. */
    const siblingHeads = (): string[] =>
      held.filter((id, i): id is string => i !== index && id != null);
    const siblings: SiblingHint = {
      after: () => {
        if (!full || cycles % HINT_EVERY === 0) return null;
        let after: string | null = null;
        for (const id of siblingHeads()) if (after === null || idAfter(id, after)) after = id;
        return after;
      },
      hold: (id) => {
        held[index] = id;
      },
    };
    for (;;) {
      if (stopping && !draining) return;
      const generation = waker.generation;
      let result: CycleReport;
      try {
        cycles += 1;
        result = await cycle(siblings);
        full = result.full;
        errors = 0;
      } catch (error) {
        errors += 1;
        const outage = isStoreOutage(error);
        if (isConnectionLoss(error)) {
          // A partition, restart or failover: expected to pass, and the next cycle runs on a
          // new connection (after a restart knex reports the dead transaction as "Transaction
          // query already complete").
          logger.warn('relay: database connection lost; retrying on a new connection', {
            error: String(error),
            consecutive: errors,
          });
        } else if (outage) {
          // Disk full, read-only, out of memory: the events are not at fault (nothing is
          // charged); a batch already published is published again and deduplicated downstream.
          logger.warn('relay: database unavailable; retrying with backoff', {
            error: String(error),
            consecutive: errors,
          });
        } else {
          logger.error('relay: cycle failed', { error: String(error), consecutive: errors });
        }
        if (stopping) return;
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
      if (stopping) {
        if (result.claimed === 0) return;
        continue;
      }
      if (result.claimed > 0 || waker.generation !== generation) continue;
      // Nothing to claim while a sibling loop holds keys: the sibling wakes this loop when its
      // claim ends full, and notifications wake it for new events, so polling meanwhile would
      // only repeat a claim that finds the same keys held (it costs the database a scan each
      // time). The sibling polls on its own schedule once its claim ends, so polling for
      // events of other keys goes on.
      const siblingHolds = siblingHeads().length > 0;
      await waker.sleep(
        siblingHolds ? Math.max(o.pollIntervalMs, o.claimHoldMs) : o.pollIntervalMs,
      );
    }
  };

  const relay: Relay = {
    ownerId: o.ownerId,
    get running() {
      return running;
    },

    async start(): Promise<void> {
      if (running) return;
      running = true;
      stopping = false;
      draining = false;
      abandoned = false;
      if (o.notify) listener = await listen(store, channel, () => waker.one(), logger);
      stopObserving = instruments.observeTable(() => readTableStats(store.knex, store.names));
      // PGlite has one connection, and a cycle holds it from claim to commit: more loops
      // would only queue behind each other.
      const concurrency = store.dialect === 'pglite' ? 1 : o.concurrency;
      held.length = 0;
      loops = Array.from({ length: concurrency }, (_, index) => loop(index));
      logger.info('relay: started', {
        ownerId: o.ownerId,
        listening: listener?.active ?? false,
        concurrency,
      });
    },

    async stop(stopOptions: StopOptions = {}): Promise<void> {
      if (!running) return;
      const timeoutMs = integerOption(stopOptions.timeoutMs, 30_000, 'timeoutMs', 0, NO_LIMIT);
      stopping = true;
      draining = stopOptions.drain === true;
      waker.all();
      if (retryTimer !== null) clearTimeout(retryTimer);
      retryTimer = null;
      retryAt = Number.POSITIVE_INFINITY;
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        Promise.all(loops).then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!finished) {
        // Give back what the stuck cycles hold: rolling back frees their keys at once; a
        // publish still running may be repeated by another relay, with the same message id.
        logger.warn('relay: in-flight batches did not finish in time; rolling them back', {
          timeoutMs,
          batches: open.size,
        });
        abandoned = true;
        await Promise.all([...open].map((trx) => trx.rollback().catch(() => undefined)));
        open.clear();
      }
      stopObserving?.();
      stopObserving = null;
      await listener?.close();
      listener = null;
      loops = [];
      running = false;
      logger.info('relay: stopped', { ownerId: o.ownerId });
    },

    async runOnce(): Promise<CycleResult> {
      const { claimed, published, failed, dead, released } = await cycle();
      return { claimed, published, failed, dead, released };
    },

    async stats(): Promise<RelayStats> {
      const table = await readTableStats(store.knex, store.names);
      return {
        ...table,
        published: counters.published,
        failed: counters.failed,
        markedDead: counters.dead,
        publishedPerSec: rate.perSecond(),
        listening: listener?.active ?? false,
      };
    },

    async listDead(listOptions = {}): Promise<DeadEvent[]> {
      const limit = listOptions.limit ?? 100;
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
        throw new ConfigurationError('limit must be an integer from 1 to 10 000', { limit });
      }
      const afterId = listOptions.afterId ?? null;
      if (afterId !== null && !/^\d{1,19}$/.test(afterId)) {
        throw new ConfigurationError('afterId must be a row id', { afterId });
      }
      const rows = await selectDead(store.knex, store.names, limit, afterId);
      return rows.map((row) => ({
        id: String(row.id),
        destination: row.destination,
        key: row.partition_key,
        messageId: row.message_id,
        headers:
          typeof row.headers === 'string'
            ? (JSON.parse(row.headers) as Record<string, string>)
            : row.headers,
        payload: row.payload,
        attempts: row.attempts,
        lastError: row.last_error,
        createdAt: new Date(row.created_at),
        diedAt: new Date(row.available_at),
      }));
    },

    async requeue(id: string): Promise<string | null> {
      if (typeof id !== 'string' || !/^\d{1,19}$/.test(id)) {
        throw new ConfigurationError('requeue needs a row id from listDead()', { id });
      }
      const next = await requeueDead(store.knex, store.names, id, o.notify ? channel : null);
      if (next !== null) logger.info('relay: dead event requeued', { id, newId: next });
      return next;
    },

    async cleanup(cleanupOptions: CleanupOptions = {}): Promise<number> {
      const olderThanMs = integerOption(
        cleanupOptions.olderThanMs,
        24 * 3_600_000,
        'olderThanMs',
        0,
        NO_LIMIT,
      );
      const batchSize = integerOption(cleanupOptions.batchSize, 1_000, 'batchSize', 1, NO_LIMIT);
      const maxBatches = cleanupOptions.maxBatches ?? Number.POSITIVE_INFINITY;
      if (!(maxBatches >= 1)) {
        throw new ConfigurationError('maxBatches must be at least 1', { maxBatches });
      }
      let total = 0;
      for (let batch = 0; batch < maxBatches; batch += 1) {
        const deleted = await deletePublishedBatch(store.knex, store.names, olderThanMs, batchSize);
        total += deleted;
        if (deleted < batchSize) break;
      }
      return total;
    },
  };
  return relay;
}
