/**
 * `pnpm bench relay`: the relay against the limit of a hand-written loop, and commit-to-publish
 * latency with notifications versus polling alone. Real PostgreSQL from DATABASE_URL.
 *
 * Throughput: N events over many keys are added, then drained to the in-memory publisher —
 * by the relay (claim with lease, publish, mark published), and by a loop that selects the
 * same rows `for update skip locked`, publishes them and deletes them in one transaction
 * (no leases, no order across processes: the cheapest correct single-process loop). Each
 * round runs both on a fresh fill; medians of several rounds after a warm-up.
 *
 * Latency: single-event transactions at a steady rate; latency is from the commit's return
 * to the publisher accepting the message.
 *
 * Environment: BENCH_EVENTS (default 20 000), BENCH_ROUNDS (5), BENCH_RATE (1 000/s),
 * BENCH_SECONDS (4), BENCH_CONCURRENCY (relay loops, 2).
 */
import { randomBytes } from 'node:crypto';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type Store,
} from '../packages/core/src';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RATE = Number(process.env.BENCH_RATE ?? 1_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const BATCH = 500;
const KEYS = 1_000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function fill(store: Store, count: number): Promise<void> {
  const outbox = createOutbox({ store, notify: false });
  for (let i = 0; i < count; i += 5_000) {
    await store.knex.transaction((trx) =>
      outbox.add(
        trx,
        Array.from({ length: Math.min(5_000, count - i) }, (_, j) => ({
          destination: 'bench',
          key: `key-${(i + j) % KEYS}`,
          payload: { n: i + j, body: 'x'.repeat(64) },
        })),
      ),
    );
  }
  await store.knex.raw(`vacuum analyze ${store.names.table('outbox')}`);
}

async function emptyTable(store: Store): Promise<void> {
  await store.knex.raw(`truncate ${store.names.table('outbox')}`);
}

/** The relay draining `count` events; events per second. */
async function relayRun(
  store: Store,
  count: number,
  onPublished: 'keep' | 'delete',
): Promise<number> {
  const publisher = createMemoryPublisher();
  const relay = createRelay({
    store,
    publisher,
    batchSize: BATCH,
    notify: false,
    pollIntervalMs: 50,
    onPublished,
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 2),
  });
  const started = performance.now();
  await relay.start();
  await publisher.waitForCount(count, 120_000);
  const elapsed = performance.now() - started;
  await relay.stop();
  return count / (elapsed / 1000);
}

/** The hand-written limit: select, publish, delete, one transaction per batch. */
async function handRun(store: Store, count: number): Promise<number> {
  const publisher = createMemoryPublisher();
  const t = store.names.table('outbox');
  const started = performance.now();
  let done = 0;
  while (done < count) {
    done += await store.knex.transaction(async (trx) => {
      const rows = rowsOf<{
        id: string;
        destination: string;
        partition_key: string | null;
        message_id: string;
        headers: Record<string, string>;
        payload: Uint8Array;
      }>(
        await trx.raw(
          `select id, destination, partition_key, message_id, headers, payload from ${t}
           order by id limit ? for update skip locked`,
          [BATCH],
        ),
      );
      if (rows.length === 0) return 0;
      await publisher.publish(
        rows.map((r) => ({
          messageId: r.message_id,
          destination: r.destination,
          key: r.partition_key,
          headers: r.headers,
          payload: r.payload,
        })),
      );
      await trx.raw(`delete from ${t} where id = any(?::bigint[])`, [rows.map((r) => r.id)]);
      return rows.length;
    });
  }
  const elapsed = performance.now() - started;
  return count / (elapsed / 1000);
}

/** Single-event transactions at `rate` per second for `seconds`; latencies in ms. */
async function latencyRun(
  store: Store,
  relayStore: Store,
  notify: boolean,
  rate: number,
  seconds: number,
) {
  const publisher = createMemoryPublisher();
  const relay = createRelay({
    store: relayStore,
    publisher,
    notify,
    pollIntervalMs: notify ? 1_000 : 100,
  });
  const outbox = createOutbox({ store, notify });
  const committedAt = new Map<string, number>();
  const latencies: number[] = [];
  const pending = new Map<string, number>();
  publisher.onPublish((m) => {
    const at = committedAt.get(m.messageId);
    if (at === undefined) pending.set(m.messageId, m.publishedAt);
    else latencies.push(m.publishedAt - at);
  });
  await relay.start();
  const total = Math.round(rate * seconds);
  const tickMs = 10;
  const perTick = (rate * tickMs) / 1000;
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  let n = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / tickMs + 1) * perTick));
    for (; sent < due; sent += 1) {
      const key = `lat-${n++ % 100}`;
      inFlight.push(
        store.knex
          .transaction((trx) => outbox.add(trx, { destination: 'lat', key, payload: { n } }))
          .then(([id]) => {
            const now = Date.now();
            const early = pending.get(id!);
            if (early !== undefined) latencies.push(early - now);
            else committedAt.set(id!, now);
          }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  await Promise.all(inFlight);
  const sendSeconds = (performance.now() - started) / 1000;
  await publisher.waitForCount(total, 60_000);
  await relay.stop();
  return {
    perSec: total / sendSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

export async function main(): Promise<void> {
  const schema = `bench_relay_${randomBytes(4).toString('hex')}`;
  const store = await createStore({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    schema,
    pool: { max: 20 },
  });
  // The relay runs on a pool of its own, as it would in its own process.
  const relayStore = await createStore({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    schema,
    pool: { max: 4 },
  });
  const results: Array<Record<string, number | string>> = [];
  try {
    await store.migrate();
    // Warm-up: JIT, connections, caches.
    await fill(store, 5_000);
    await relayRun(store, 5_000, 'keep');
    await emptyTable(store);
    await fill(store, 5_000);
    await handRun(store, 5_000);
    await emptyTable(store);

    const keepRates: number[] = [];
    const deleteRates: number[] = [];
    const handRates: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      // Interleaved, so drift in the machine's load touches all three alike.
      await fill(store, EVENTS);
      keepRates.push(await relayRun(store, EVENTS, 'keep'));
      await emptyTable(store);
      await fill(store, EVENTS);
      deleteRates.push(await relayRun(store, EVENTS, 'delete'));
      await emptyTable(store);
      await fill(store, EVENTS);
      handRates.push(await handRun(store, EVENTS));
      await emptyTable(store);
      console.error(
        `round ${round + 1}: relay keep ${keepRates.at(-1)!.toFixed(0)}/s, relay delete ${deleteRates.at(-1)!.toFixed(0)}/s, hand loop ${handRates.at(-1)!.toFixed(0)}/s`,
      );
    }
    const baselinePerSec = median(handRates);
    for (const [mode, rates] of [
      ['keep', keepRates],
      ['delete', deleteRates],
    ] as const) {
      const perSec = median(rates);
      results.push({
        case: `throughput-onPublished-${mode}-${EVENTS}-events-${KEYS}-keys`,
        perSec: Math.round(perSec),
        baselinePerSec: Math.round(baselinePerSec),
        ratio: Number((perSec / baselinePerSec).toFixed(3)),
      });
    }

    for (const notify of [true, false]) {
      await latencyRun(store, relayStore, notify, RATE, 1); // warm-up
      const runs = [];
      for (let round = 0; round < 3; round += 1)
        runs.push(await latencyRun(store, relayStore, notify, RATE, SECONDS));
      await emptyTable(store);
      const p50Ms = median(runs.map((r) => r.p50Ms));
      const p99Ms = median(runs.map((r) => r.p99Ms));
      console.error(`latency ${notify ? 'notify' : 'polling'}: p50 ${p50Ms} ms, p99 ${p99Ms} ms`);
      results.push({
        case: notify ? `latency-notify-${RATE}-per-sec` : `latency-polling-100ms-${RATE}-per-sec`,
        perSec: Math.round(median(runs.map((r) => r.perSec))),
        p50Ms,
        p99Ms,
      });
    }
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await relayStore.close();
    await store.close();
  }
  console.log(JSON.stringify({ bench: 'relay', results }));
}
