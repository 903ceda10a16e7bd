/**
 * `pnpm bench relays`: the three ways justonce's outbox reaches Kafka, side by side, in one run
 * on the same PostgreSQL (LOGICAL_DATABASE_URL: `wal_level = logical`, which all three need or
 * pay for alike) and the same Kafka:
 *
 * - `polling`: `createRelay` with the Kafka publisher (claim, publish, delete), woken by
 *   notifications;
 * - `log`: the logical-replication relay (a `pgoutput` slot; no write per event);
 * - `debezium`: Debezium's PostgreSQL connector with its outbox event router in the Kafka
 *   Connect worker (`KAFKA_CONNECT_URL`), configured by `debeziumOutboxConnector`.
 *
 * Every side has its own schema and topic. Events arrive at one measuring consumer per side
 * (raw kafkajs, reading the side's topic), which takes each record's `message-id` header.
 *
 * - **throughput**: with the side stopped (the polling relay not started, the log relay not
 *   started, the connector stopped), BENCH_RELAYS_EVENTS events (default 20 000) over 1 000
 *   keys are added in transactions of 500; then the side starts, timed until the consumer has
 *   every event. Over that drain: PostgreSQL's WAL bytes per event (`pg_current_wal_lsn`),
 *   rows written per event in the side's schema (`pg_stat_user_tables`), PostgreSQL's CPU and
 *   the Java processes' (Kafka and Connect) per event.
 * - **latency**: with the side running, events committed (`synchronous_commit` on) at
 *   BENCH_RELAYS_RATE (default 500/s) for BENCH_SECONDS (default 4) through up to 8
 *   connections (_relays-load.ts: one event per transaction at that rate, multi-row
 *   transactions of what came due at higher ones); then the offered rate doubles from twice
 *   that, step by step, until a step leaves a backlog (its last event arrives more than a
 *   second after its last commit; then one step between) or BENCH_RELAYS_MAX_RATE (default
 *   64 000/s): the highest sustained rate is the last step kept up with ("≥" when the producers
 *   could not offer more). Commit → arrival at the consumer p50/p99 at 500/s and at that rate
 *   (the consumer's fetch is in every side's figure).
 *
 * Each side runs BENCH_ROUNDS rounds (default 6), sides alternating within a round; figures
 * are medians. BENCH_RELAYS_SIDES (comma-separated) runs some sides only. The last line
 * printed is the JSON result.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { createOutbox, rowsOf, type Store } from '@justonce/core';
import { ensureServices } from '../test-support/services';
import { benchRounds, costMeter, median, printTable, rowsWritten, type Measured } from './_support';
import { relaySides, type RelaySide, type SideName } from './_relays-sides';
import { highestSustained, offer, type Arrivals } from './_relays-load';

const EVENTS = Number(process.env.BENCH_RELAYS_EVENTS ?? 20_000);
const RATE = Number(process.env.BENCH_RELAYS_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const KEYS = 1_000;
/** The highest rate the search offers (events/s). */
const MAX_RATE = Number(process.env.BENCH_RELAYS_MAX_RATE ?? 64_000);

/** What one side measured in one round. */
interface Round {
  readonly perSec: number;
  readonly walBytesPerEvent: number;
  readonly rowsPerEvent: number;
  readonly postgresCpuUs: number | null;
  readonly javaCpuUs: number | null;
  readonly at500: { p50Ms: number; p99Ms: number };
  readonly atHigh: { perSec: number; p50Ms: number; p99Ms: number; producersLimit: boolean };
}

/** Arrival times by message id, on the side's topic. */
interface SideArrivals extends Arrivals {
  readonly consumer: Consumer;
}

async function arrivals(kafka: Kafka, side: RelaySide): Promise<SideArrivals> {
  const { topic } = side;
  const consumer = kafka.consumer({
    groupId: `bench-relays-${randomBytes(4).toString('hex')}`,
    maxWaitTimeInMs: 20,
  });
  const at = new Map<string, number>();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    // No offset commits: kafkajs commits after every batch by default, a round trip before
    // its next fetch, which was most of the measured latency (p50 49 ms of 57 at 500/s).
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      const now = Date.now();
      for (const message of batch.messages) {
        const id = message.headers?.['message-id']?.toString();
        if (id !== undefined && !at.has(id)) at.set(id, now);
      }
    },
  });
  return {
    consumer,
    at,
    waitFor: async (ids, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      let checked = Date.now();
      for (const id of ids) {
        while (!at.has(id)) {
          if (Date.now() - checked > 1_000) {
            await side.check();
            checked = Date.now();
          }
          if (Date.now() > deadline) {
            // How many are missing, not just the first: a side that stopped relaying misses
            // every later event, a lost event is one among many that arrived.
            const missing = ids.filter((x) => !at.has(x));
            throw new Error(
              `${topic}: ${missing.length} of ${ids.length} events did not arrive (first ${id}, at index ${ids.indexOf(id)})`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    },
  };
}

async function walLsn(store: Store): Promise<bigint> {
  const [row] = rowsOf<{ lsn: string }>(
    await store.knex.raw("select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as lsn"),
  );
  return BigInt(row!.lsn.split('.')[0]!);
}

async function fill(store: Store, topic: string, count: number): Promise<string[]> {
  const outbox = createOutbox({ store, notify: false });
  const ids: string[] = [];
  for (let start = 0; start < count; start += 500) {
    const size = Math.min(500, count - start);
    const added = await store.knex.transaction((trx) =>
      outbox.add(
        trx,
        Array.from({ length: size }, (_, j) => ({
          destination: topic,
          key: `k-${(start + j) % KEYS}`,
          headers: { type: 'bench.event' },
          payload: { n: start + j },
        })),
      ),
    );
    ids.push(...added);
  }
  return ids;
}

async function round(side: RelaySide, kafka: Kafka): Promise<Round> {
  const seen = await arrivals(kafka, side);
  try {
    await side.stop();
    const ids = await fill(side.store, side.topic, EVENTS);
    const rowsBefore = await rowsWritten(side.store.knex, side.schema, 4);
    const walBefore = await walLsn(side.store);
    const meter = costMeter();
    await side.start();
    await seen.waitFor(ids, 300_000);
    const used: Measured = meter(EVENTS);
    const walBytes = Number((await walLsn(side.store)) - walBefore);
    const rows = (await rowsWritten(side.store.knex, side.schema, 4)) - rowsBefore;
    // From the first event's arrival to the last's: the sustained rate, without each side's
    // start (a Connect task's start takes far longer than a relay's).
    const times = ids.map((id) => seen.at.get(id)!);
    const perSec = (EVENTS - 1) / Math.max(0.001, (Math.max(...times) - Math.min(...times)) / 1000);
    const at500 = await offer(side, seen, RATE, SECONDS);
    const high = await highestSustained(side, seen, RATE * 2, SECONDS, MAX_RATE);
    console.log(
      `  ${side.name} steps: ${high.steps
        .map(
          (s) =>
            `${s.offeredPerSec}/s→${Math.round(s.perSec)}/s p99 ${s.p99Ms} ms, behind ${s.caughtUpMs} ms`,
        )
        .join('; ')}`,
    );
    const atHigh = {
      perSec: high.perSec,
      p50Ms: high.p50Ms,
      p99Ms: high.p99Ms,
      producersLimit: high.producersLimit,
    };
    return {
      perSec,
      walBytesPerEvent: walBytes / EVENTS,
      rowsPerEvent: rows / EVENTS,
      postgresCpuUs: used.processCpuUsPerEvent?.database ?? null,
      javaCpuUs: used.processCpuUsPerEvent?.broker ?? null,
      at500,
      atHigh,
    };
  } finally {
    await seen.consumer.disconnect();
  }
}

const ms = (x: number): string => `${Math.round(x * 10) / 10} ms`;

/** Runs the benchmark (see the file's comment). */
export async function main(): Promise<void> {
  const { logicalDatabaseUrl, kafkaBrokers, kafkaConnectUrl } = await ensureServices([
    'postgres-logical',
    'kafka',
    'connect',
  ]);
  const kafka = new Kafka({
    brokers: kafkaBrokers,
    logLevel: logLevel.NOTHING,
    clientId: 'bench-relays',
  });
  const wanted = (process.env.BENCH_RELAYS_SIDES ?? 'polling,log,debezium').split(
    ',',
  ) as SideName[];
  const sides = await relaySides(wanted, {
    databaseUrl: logicalDatabaseUrl,
    connectUrl: kafkaConnectUrl,
    kafka,
    kafkaBrokers,
  });
  const rounds = new Map<SideName, Round[]>(sides.map((side) => [side.name, []]));
  try {
    const count = benchRounds();
    for (let r = 0; r < count; r += 1) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const result = await round(side, kafka);
        rounds.get(side.name)!.push(result);
        console.log(`round ${r + 1}/${count} ${side.name}: ${JSON.stringify(result)}`);
      }
    }
  } finally {
    for (const side of sides) await side.dispose();
  }
  const results = sides.map((side) => {
    const list = rounds.get(side.name)!;
    const m = (f: (x: Round) => number) => median(list.map(f));
    const cpu = (f: (x: Round) => number | null) =>
      list.some((x) => f(x) === null) ? null : m((x) => f(x)!);
    return {
      side: side.name,
      perSec: m((x) => x.perSec),
      walBytesPerEvent: m((x) => x.walBytesPerEvent),
      rowsPerEvent: m((x) => x.rowsPerEvent),
      postgresCpuUs: cpu((x) => x.postgresCpuUs),
      javaCpuUs: cpu((x) => x.javaCpuUs),
      at500: { p50Ms: m((x) => x.at500.p50Ms), p99Ms: m((x) => x.at500.p99Ms) },
      atHigh: {
        perSec: m((x) => x.atHigh.perSec),
        p50Ms: m((x) => x.atHigh.p50Ms),
        p99Ms: m((x) => x.atHigh.p99Ms),
        producersLimit: list.some((x) => x.atHigh.producersLimit),
      },
    };
  });
  const polling = results.find((r) => r.side === 'polling');
  printTable(
    [
      'side',
      'events/s',
      'vs polling',
      'p50/p99 at 500/s',
      'highest sustained: p50/p99',
      'WAL B/event',
      'rows/event',
      'PG CPU µs/event',
      'Java CPU µs/event',
    ],
    results.map((r) => [
      r.side,
      String(Math.round(r.perSec)),
      polling ? (r.perSec / polling.perSec).toFixed(2) : 'n/a',
      `${ms(r.at500.p50Ms)} / ${ms(r.at500.p99Ms)}`,
      `${r.atHigh.producersLimit ? '≥ ' : ''}${Math.round(r.atHigh.perSec)}/s: ${ms(r.atHigh.p50Ms)} / ${ms(r.atHigh.p99Ms)}`,
      String(Math.round(r.walBytesPerEvent)),
      r.rowsPerEvent.toFixed(2),
      r.postgresCpuUs === null ? 'n/a' : r.postgresCpuUs.toFixed(1),
      r.javaCpuUs === null ? 'n/a' : r.javaCpuUs.toFixed(1),
    ]),
  );
  console.log(JSON.stringify({ bench: 'relays', events: EVENTS, rate: RATE, results }));
}
