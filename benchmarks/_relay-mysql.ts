/**
 * `DATABASE_URL=mysql://… pnpm bench relay`: the relay on MySQL or MariaDB, which polls, beside
 * the relay on PostgreSQL with LISTEN/NOTIFY (`BENCH_PG_URL`, default the local server), in
 * the same process and the same run:
 *
 * - latency from an event's commit to the publisher accepting it, single-event transactions
 *   at BENCH_RATE per second (default 200) for BENCH_SECONDS (4): MySQL polling every 1 000 ms
 *   (the default) and every 100 ms, against PostgreSQL notified;
 * - drain: BENCH_EVENTS (default 20 000) events over 200 keys added first, then published by
 *   one relay with default options; the ratio is MySQL's rate over PostgreSQL's.
 *
 * Medians over BENCH_ROUNDS (default 3) rounds; the last line printed is the JSON result.
 */
import { randomBytes } from 'node:crypto';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  type Store,
} from '@justonce/core';
import { benchRounds, commitToPublishLatency, median, printTable } from './_support';

const KEYS = 200;

async function openPair(url: string, schema: string): Promise<[Store, Store]> {
  const store = await createStore({ connectionString: url, schema, pool: { max: 20 } });
  await store.migrate();
  // The relay on a pool of its own, as in its own process.
  const relayStore = await createStore({ connectionString: url, schema, pool: { max: 4 } });
  return [store, relayStore];
}

async function drain(store: Store, relayStore: Store, count: number): Promise<number> {
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
  const publisher = createMemoryPublisher();
  const relay = createRelay({ store: relayStore, publisher, notify: false, pollIntervalMs: 20 });
  const started = performance.now();
  await relay.start();
  await publisher.waitForCount(count, 300_000);
  const seconds = (performance.now() - started) / 1000;
  await relay.stop();
  await store.knex.raw(`delete from ${store.names.table('outbox')}`);
  return count / seconds;
}

/** Runs the benchmark; prints its JSON line last. */
export async function mysqlRelayMain(mysqlUrl: string): Promise<void> {
  const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_relay_${randomBytes(4).toString('hex')}`;
  const [my, myRelay] = await openPair(mysqlUrl, schema);
  const [pg, pgRelay] = await openPair(pgUrl, schema);
  const rate = Number(process.env.BENCH_RATE ?? 200);
  const seconds = Number(process.env.BENCH_SECONDS ?? 4);
  const events = Number(process.env.BENCH_EVENTS ?? 20_000);
  const rounds = benchRounds();
  const version = String((await my.knex.raw('select version() as v'))[0]?.[0]?.v ?? 'MySQL');
  console.log(
    `relay benchmark on ${version} beside PostgreSQL: latency at ${rate}/s for ${seconds} s, ` +
      `drain of ${events} events, ${rounds} rounds`,
  );
  const sides = {
    'MySQL, poll 1 000 ms': { p50: [] as number[], p99: [] as number[] },
    'MySQL, poll 100 ms': { p50: [] as number[], p99: [] as number[] },
    'PostgreSQL, notified': { p50: [] as number[], p99: [] as number[] },
  };
  const drains = { mysql: [] as number[], postgres: [] as number[] };
  try {
    for (let r = 0; r < rounds; r += 1) {
      const runs: Array<[keyof typeof sides, Store, Store, boolean, number]> = [
        ['MySQL, poll 1 000 ms', my, myRelay, false, 1_000],
        ['MySQL, poll 100 ms', my, myRelay, false, 100],
        ['PostgreSQL, notified', pg, pgRelay, true, 1_000],
      ];
      for (const [name, store, relayStore, notify, pollIntervalMs] of runs) {
        const l = await commitToPublishLatency(store, relayStore, notify, rate, seconds, {
          pollIntervalMs,
        });
        sides[name].p50.push(l.p50Ms);
        sides[name].p99.push(l.p99Ms);
        console.log(`  round ${r + 1}: ${name}: p50 ${l.p50Ms} ms, p99 ${l.p99Ms} ms`);
      }
      drains.mysql.push(await drain(my, myRelay, events));
      drains.postgres.push(await drain(pg, pgRelay, events));
      console.log(
        `  round ${r + 1}: drain MySQL ${Math.round(drains.mysql[r]!)}/s, PostgreSQL ${Math.round(drains.postgres[r]!)}/s`,
      );
    }
    const latency = Object.entries(sides).map(([name, s]) => ({
      case: name,
      p50Ms: Math.round(median(s.p50) * 10) / 10,
      p99Ms: Math.round(median(s.p99) * 10) / 10,
    }));
    const ratios = drains.mysql.map((m, i) => m / drains.postgres[i]!);
    const drained = {
      case: 'drain',
      perSec: Math.round(median(drains.mysql)),
      baselinePerSec: Math.round(median(drains.postgres)),
      ratio: Math.round(median(ratios) * 100) / 100,
    };
    console.log('');
    printTable(
      ['latency', 'p50 ms', 'p99 ms'],
      latency.map((l) => [l.case, String(l.p50Ms), String(l.p99Ms)]),
    );
    console.log('');
    printTable(
      ['drain', 'MySQL /s', 'PostgreSQL /s', 'ratio'],
      [['drain', String(drained.perSec), String(drained.baselinePerSec), String(drained.ratio)]],
    );
    console.log(
      JSON.stringify({ bench: 'relay', database: 'mysql', results: [...latency, drained] }),
    );
  } finally {
    await my.knex.raw(`drop database if exists \`${schema}\``).catch(() => undefined);
    await pg.knex.raw(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await Promise.all([my, myRelay, pg, pgRelay].map((s) => s.close()));
  }
}
