/**
 * `pnpm bench relay`: the relay against the limit of a hand-written loop, and commit-to-publish
 * latency with notifications versus polling alone. Real PostgreSQL from DATABASE_URL.
 *
 * Throughput: N events over many keys are added, then drained to the in-memory publisher —
 * by the relay (claim, publish, mark published or delete; a cycle holds its keys for up to
 * `claimHoldMs` and reads ahead while a batch is out, so `statements/batch` is below one
 * transaction's four), and by a loop that selects the same rows `for update skip locked`,
 * publishes them and deletes them in one transaction (no order per key, no order across
 * processes: the cheapest correct single-process loop). Both ratios are against that loop. Beside it, the same loop marking
 * rows published instead of deleting them (`hand keep`) shows what `onPublished: 'keep'`'s
 * extra write costs by itself. Each round runs all on a fresh fill; medians of several
 * rounds after a warm-up, with the statements sent per batch (round trips; `begin` and
 * `commit` included) and what an event cost (_support.ts, costMeter: this process's CPU,
 * PostgreSQL's CPU and the statements sent, per event).
 *
 * Latency: single-event transactions at a steady rate, from a pool of connections; latency is
 * from the commit's return to the publisher accepting the message. The producer commits with
 * `synchronous_commit = off`: PostgreSQL serializes commits that notify, and with a flush to
 * disk in each of them the offered load would be capped by the machine's fsync rate rather
 * than set by BENCH_RATE (the relay's own transactions commit as configured). `perSec` is the
 * rate actually offered; the cost per event covers both the producing transactions and the
 * relay, from the relay's start to the last event published.
 *
 * Environment: BENCH_EVENTS (default 20 000), BENCH_ROUNDS (5), BENCH_RATE (1 000/s),
 * BENCH_SECONDS (4), BENCH_CONCURRENCY (relay loops, 2). With a `mysql://` or `mariadb://`
 * DATABASE_URL it runs `_relay-mysql.ts` instead. BENCH_DISTRIBUTION=distributable runs it all on
 * the distributable schema (docs/scaling.md) and adds the relay with the per-key claim
 * (`claim: 'per-key'`, deleting), beside the batch claim on the same schema.
 */
import { randomBytes } from 'node:crypto';
import { mysqlRelayMain } from './_relay-mysql';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type Store,
} from '@justonce/core';
import {
  costMeter,
  costLine,
  medianCost,
  median,
  commitToPublishLatency,
  printCostTable,
  type Cost,
  type CostRow,
} from './_support';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RATE = Number(process.env.BENCH_RATE ?? 1_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const BATCH = 500;
const KEYS = 1_000;
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

/** What one drain measured. */
interface Drain {
  readonly perSec: number;
  /** What an event cost: this process's CPU, PostgreSQL's, statements sent. */
  readonly cost: Cost;
  /** Statements sent per `publish` call (batch). */
  readonly roundTripsPerBatch: number;
}

/** Runs `drain` and measures it; `drain` resolves with the number of `publish` calls. */
async function measure(count: number, drain: () => Promise<number>): Promise<Drain> {
  const meter = costMeter();
  const started = performance.now();
  const batches = await drain();
  const elapsed = performance.now() - started;
  const { cost, statementsSent } = meter(count);
  return {
    perSec: count / (elapsed / 1000),
    cost,
    roundTripsPerBatch: statementsSent / Math.max(1, batches),
  };
}

/** The relay draining `count` events. */
function relayRun(
  store: Store,
  count: number,
  onPublished: 'keep' | 'delete',
  claim: 'batch' | 'per-key' = 'batch',
): Promise<Drain> {
  const publisher = createMemoryPublisher();
  const relay = createRelay({
    store,
    publisher,
    claim,
    batchSize: BATCH,
    notify: false,
    pollIntervalMs: 50,
    onPublished,
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 2),
  });
  return measure(count, async () => {
    await relay.start();
    await publisher.waitForCount(count, 120_000);
    const batches = publisher.calls;
    await relay.stop();
    return batches;
  });
}

/**
 * The hand-written limit: select, publish, delete (or, with `keep`, mark published), one
 * transaction per batch.
 */
function handRun(store: Store, count: number, keep = false): Promise<Drain> {
  const publisher = createMemoryPublisher();
  const t = store.names.table('outbox');
  return measure(count, async () => {
    await handLoop(store, t, publisher, count, keep);
    return publisher.calls;
  });
}

async function handLoop(
  store: Store,
  t: string,
  publisher: ReturnType<typeof createMemoryPublisher>,
  count: number,
  keep: boolean,
): Promise<void> {
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
           ${keep ? `where status = 'pending'` : ''}
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
      const ids = rows.map((r) => r.id);
      await (keep
        ? trx.raw(
            `update ${t} set status = 'published', published_at = statement_timestamp()
             where id = any(?::bigint[])`,
            [ids],
          )
        : trx.raw(`delete from ${t} where id = any(?::bigint[])`, [ids]));
      return rows.length;
    });
  }
}

export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? '';
  if (/^(mysql|mariadb):\/\//.test(url)) return mysqlRelayMain(url);
  const schema = `bench_relay_${randomBytes(4).toString('hex')}`;
  const distributable = process.env.BENCH_DISTRIBUTION === 'distributable';
  const store = await createStore({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    schema,
    pool: { max: 20 },
    distribution: distributable ? 'distributable' : 'none',
  });
  // The relay runs on a pool of its own, as it would in its own process.
  const relayStore = await createStore({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    schema,
    pool: { max: 4 },
    distribution: distributable ? 'distributable' : 'none',
  });
  const results: Array<CostRow & Record<string, unknown>> = [];
  try {
    await store.migrate();
    // Warm-up: JIT, connections, caches.
    await fill(store, 5_000);
    await relayRun(store, 5_000, 'keep');
    await emptyTable(store);
    await fill(store, 5_000);
    await handRun(store, 5_000);
    await emptyTable(store);
    await fill(store, 5_000);
    await handRun(store, 5_000, true);
    await emptyTable(store);

    const runs = {
      keep: [] as Drain[],
      delete: [] as Drain[],
      hand: [] as Drain[],
      handKeep: [] as Drain[],
      perKey: [] as Drain[],
    };
    const runners: Array<[keyof typeof runs, () => Promise<Drain>]> = [
      ['keep', () => relayRun(store, EVENTS, 'keep')],
      ['delete', () => relayRun(store, EVENTS, 'delete')],
      ['hand', () => handRun(store, EVENTS)],
      ['handKeep', () => handRun(store, EVENTS, true)],
      ...(distributable
        ? [
            ['perKey', () => relayRun(store, EVENTS, 'delete', 'per-key')] as [
              keyof typeof runs,
              () => Promise<Drain>,
            ],
          ]
        : []),
    ];
    for (let round = 0; round < ROUNDS; round += 1) {
      // Interleaved, in a different order each round, so drift in the machine's load and
      // whatever one run leaves behind (WAL, dirty pages) touch all of them alike.
      for (let i = 0; i < runners.length; i += 1) {
        const [name, run] = runners[(i + round) % runners.length]!;
        await fill(store, EVENTS);
        runs[name].push(await run());
        await emptyTable(store);
      }
      const last = (name: keyof typeof runs): string => {
        const d = runs[name].at(-1)!;
        return `${d.perSec.toFixed(0)}/s, ${d.roundTripsPerBatch.toFixed(2)} statements/batch, per event ${costLine(d.cost)}`;
      };
      console.error(
        `round ${round + 1}: relay keep ${last('keep')}; relay delete ${last('delete')}; hand loop ${last('hand')}; hand keep ${last('handKeep')}${
          distributable ? `; relay per-key delete ${last('perKey')}` : ''
        }`,
      );
    }
    const summary = (drains: Drain[]) => ({
      perSec: median(drains.map((d) => d.perSec)),
      cost: medianCost(drains.map((d) => d.cost)),
      roundTripsPerBatch: Number(median(drains.map((d) => d.roundTripsPerBatch)).toFixed(2)),
    });
    const hand = summary(runs.hand);
    const handKeep = summary(runs.handKeep);
    for (const mode of ['keep', 'delete'] as const) {
      const relay = summary(runs[mode]);
      results.push({
        case: `throughput-onPublished-${mode}-${EVENTS}-events-${KEYS}-keys`,
        perSec: Math.round(relay.perSec),
        baselinePerSec: Math.round(hand.perSec),
        ratio: Number((relay.perSec / hand.perSec).toFixed(3)),
        ...(mode === 'keep'
          ? {
              handKeepPerSec: Math.round(handKeep.perSec),
              ratioToHandKeep: Number((relay.perSec / handKeep.perSec).toFixed(3)),
              handKeepCost: handKeep.cost,
            }
          : {}),
        cost: relay.cost,
        baselineCost: hand.cost,
        roundTripsPerBatch: relay.roundTripsPerBatch,
        baselineRoundTripsPerBatch: hand.roundTripsPerBatch,
      });
    }
    if (distributable) {
      // The per-key claim against the hand loop and against the batch claim, same schema.
      const perKey = summary(runs.perKey);
      const batch = summary(runs.delete);
      results.push({
        case: `throughput-per-key-claim-delete-${EVENTS}-events-${KEYS}-keys`,
        perSec: Math.round(perKey.perSec),
        baselinePerSec: Math.round(hand.perSec),
        ratio: Number((perKey.perSec / hand.perSec).toFixed(3)),
        batchClaimPerSec: Math.round(batch.perSec),
        ratioToBatchClaim: Number((perKey.perSec / batch.perSec).toFixed(3)),
        cost: perKey.cost,
        baselineCost: hand.cost,
        roundTripsPerBatch: perKey.roundTripsPerBatch,
        baselineRoundTripsPerBatch: hand.roundTripsPerBatch,
      });
    }

    for (const notify of [true, false]) {
      await commitToPublishLatency(store, relayStore, notify, RATE, 1); // warm-up
      const runs = [];
      for (let round = 0; round < 3; round += 1)
        runs.push(await commitToPublishLatency(store, relayStore, notify, RATE, SECONDS));
      await emptyTable(store);
      const p50Ms = median(runs.map((r) => r.p50Ms));
      const p99Ms = median(runs.map((r) => r.p99Ms));
      console.error(`latency ${notify ? 'notify' : 'polling'}: p50 ${p50Ms} ms, p99 ${p99Ms} ms`);
      results.push({
        case: notify ? `latency-notify-${RATE}-per-sec` : `latency-polling-100ms-${RATE}-per-sec`,
        perSec: Math.round(median(runs.map((r) => r.perSec))),
        p50Ms,
        p99Ms,
        cost: medianCost(runs.map((r) => r.cost)),
      });
    }
    printCostTable(results, 'event');
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await relayStore.close();
    await store.close();
  }
  console.log(JSON.stringify({ bench: 'relay', results }));
}
