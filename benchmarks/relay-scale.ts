/**
 * `pnpm bench relay-scale`: relays that scale out. The outbox is filled with N events over many
 * keys, then 1, 2 and 4 relay processes (real Node processes, each running `createRelay` on the
 * same outbox: benchmarks/_relay-scale-worker.ts) drain it, to a publisher that only counts
 * (`memory`) and to Kafka (`kafka`, the built @justonce/kafka publisher). Timed from the start
 * message to the last event published; each count's baseline is one relay in the same round.
 * Every event carries its key's sequence number: each run checks that every event was
 * published exactly once and that, per key, the times the publishers accepted them (one clock
 * for all processes) are in sequence order across the processes.
 *
 * Per case and relay count it prints events/s, the ratio to one relay, and per event the
 * relays' CPU (all worker processes), PostgreSQL's CPU and the machine's; and PostgreSQL's and
 * the machine's busy share of the cores over the drain, which shows where the curve is capped.
 *
 * `long`: N_LONG events through one relay; the claim statement's duration over the run, by
 * tenths (first tenth against the last), shows whether a claim slows down as the run goes on.
 *
 * Environment: BENCH_SCALE_EVENTS (default 50 000), BENCH_SCALE_KAFKA_EVENTS (20 000),
 * BENCH_SCALE_LONG_EVENTS (200 000), BENCH_SCALE_KEYS (1 000), BENCH_SCALE_BATCH (500),
 * BENCH_SCALE_CONCURRENCY (each relay's `concurrency`, 2), BENCH_SCALE_COUNTS (1,2,4),
 * BENCH_ROUNDS (2), BENCH_SCALE_CASES (memory,kafka,long,long-snapshot).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { createStore, type Store } from '@justonce/core';
import { ensureServices } from '../test-support/services';
import { costMeter, fillOutbox, median, printTable, wantedCases } from './_support';
import type { WorkerReport } from './_relay-scale-worker';

const EVENTS = Number(process.env.BENCH_SCALE_EVENTS ?? 50_000);
const KAFKA_EVENTS = Number(process.env.BENCH_SCALE_KAFKA_EVENTS ?? 20_000);
const LONG_EVENTS = Number(process.env.BENCH_SCALE_LONG_EVENTS ?? 200_000);
const KEYS = Number(process.env.BENCH_SCALE_KEYS ?? 1_000);
const BATCH = Number(process.env.BENCH_SCALE_BATCH ?? 500);
const CONCURRENCY = Number(process.env.BENCH_SCALE_CONCURRENCY ?? 2);
const COUNTS = (process.env.BENCH_SCALE_COUNTS ?? '1,2,4').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CORES = cpus().length;

/** What one drain by `relays` processes measured. */
interface Drain {
  readonly relays: number;
  readonly perSec: number;
  /** Per event, µs: all relay processes, PostgreSQL, the whole machine. */
  readonly relayCpuUs: number;
  readonly postgresCpuUs: number | null;
  readonly machineCpuUs: number | null;
  /** Share of all cores busy over the drain: PostgreSQL's, the machine's. */
  readonly postgresBusy: number | null;
  readonly machineBusy: number | null;
  readonly claims: Array<[number, number]>;
  readonly walks: Array<[number, number]>;
}

interface Worker {
  readonly child: ProcessChild;
  published: number;
  report: Promise<WorkerReport>;
}
type ProcessChild = ChildProcess;

function startWorker(env: Record<string, string>): { worker: Worker; ready: Promise<void> } {
  const child = fork(join(__dirname, '_relay-scale-worker.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, TSX_TSCONFIG_PATH: 'tsconfig.bench.json', ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let readyResolve!: () => void;
  const ready = new Promise<void>((resolve) => (readyResolve = resolve));
  let reportResolve!: (r: WorkerReport) => void;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`relay worker exited with ${code}`))),
  );
  const report = Promise.race([
    new Promise<WorkerReport>((resolve) => (reportResolve = resolve)),
    exited,
  ]);
  report.catch(() => undefined);
  const worker: Worker = { child, published: 0, report };
  child.on('message', (message: { type: string; published?: number }) => {
    if (message.type === 'ready') readyResolve();
    else if (message.type === 'progress') worker.published = message.published!;
    else if (message.type === 'report') reportResolve(message as WorkerReport);
  });
  return { worker, ready: Promise.race([ready, exited]) };
}

/**
 * Checks the merged reports: every sequence number of every key published once, and per key
 * the acceptance times in sequence order. Returns the keys out of order (none expected).
 */
function checkOrder(reports: readonly WorkerReport[], keys: number, perKey: number): number {
  const merged = new Map<string, Array<[number, number]>>();
  for (const report of reports) {
    for (const [key, list] of Object.entries(report.keys)) {
      const all = merged.get(key) ?? [];
      all.push(...list);
      merged.set(key, all);
    }
  }
  if (merged.size !== keys) throw new Error(`published ${merged.size} keys of ${keys}`);
  let disordered = 0;
  for (const [key, list] of merged) {
    if (list.length !== perKey) {
      throw new Error(
        `key ${key}: ${list.length} events published, ${perKey} expected: ${JSON.stringify(list)}`,
      );
    }
    list.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    if (list.some(([seq], i) => seq !== i)) disordered += 1;
  }
  return disordered;
}

async function fill(store: Store, count: number, destination: string): Promise<void> {
  await store.knex.raw(`truncate ${store.names.table('outbox')}`);
  await fillOutbox(store, count, (n) => ({
    destination,
    key: `key-${n % KEYS}`,
    payload: { seq: Math.floor(n / KEYS), body: 'x'.repeat(64) },
  }));
  await store.knex.raw(`vacuum analyze ${store.names.table('outbox')}`);
}

/** Drains `count` events (filled beforehand) with `relays` worker processes. */
async function drain(
  relays: number,
  count: number,
  env: Record<string, string>,
  keys: number,
): Promise<Drain> {
  const started = Array.from({ length: relays }, () => startWorker(env));
  const workers = started.map((s) => s.worker);
  try {
    await Promise.all(started.map((s) => s.ready));
    const meter = costMeter();
    const t0 = performance.now();
    for (const w of workers) w.child.send({ type: 'start' });
    const deadline = Date.now() + 600_000;
    let total = 0;
    while ((total = workers.reduce((sum, w) => sum + w.published, 0)) < count) {
      if (Date.now() > deadline) throw new Error(`stalled at ${total} of ${count}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const elapsedMs = performance.now() - t0;
    const measured = meter(count);
    for (const w of workers) w.child.send({ type: 'stop' });
    const reports = await Promise.all(workers.map((w) => w.report));
    const disordered = checkOrder(reports, keys, count / keys);
    if (disordered > 0) throw new Error(`${disordered} keys published out of order`);
    const relayCpu = reports.reduce((sum, r) => sum + r.cpuUs, 0);
    const pg = measured.processCpuUsPerEvent?.database ?? null;
    const machine = measured.machineCpuUsPerEvent;
    const busy = (perEvent: number | null): number | null =>
      perEvent === null ? null : (perEvent * count) / (elapsedMs * 1000 * CORES);
    return {
      relays,
      perSec: count / (elapsedMs / 1000),
      relayCpuUs: relayCpu / count,
      postgresCpuUs: pg,
      machineCpuUs: machine,
      postgresBusy: busy(pg),
      machineBusy: busy(machine),
      claims: reports.flatMap((r) => r.claims),
      walks: reports.flatMap((r) => r.walks),
    };
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  }
}

/** How many claims and key walks a drain ran, and their time in all. */
function statementLine(d: Drain): string {
  const total = (list: Array<[number, number]>): string =>
    list.reduce((sum, [, ms]) => sum + ms, 0).toFixed(0);
  return `${d.claims.length} claims (${total(d.claims)} ms), ${d.walks.length} key walks (${total(d.walks)} ms)`;
}

const fixed = (x: number | null, digits = 0): string => (x === null ? 'n/a' : x.toFixed(digits));
const pct = (x: number | null): string => (x === null ? 'n/a' : `${Math.round(x * 100)} %`);

/** Rounds of drains at each relay count, in a rotated order each round; medians per count. */
async function scaleCase(
  name: string,
  store: Store,
  count: number,
  env: Record<string, string>,
  before: () => Promise<string>,
) {
  const runs = new Map<number, Drain[]>(COUNTS.map((k) => [k, []]));
  const ratios = new Map<number, number[]>(COUNTS.map((k) => [k, []]));
  // Warm-up: the build's files in the page cache, PostgreSQL's plans and caches.
  await fill(store, Math.min(count, 10_000), await before());
  await drain(1, Math.min(count, 10_000), env, KEYS);
  for (let round = 0; round < ROUNDS; round += 1) {
    const perSec = new Map<number, number>();
    for (let i = 0; i < COUNTS.length; i += 1) {
      const relays = COUNTS[(i + round) % COUNTS.length]!;
      const destination = await before();
      await fill(store, count, destination);
      const d = await drain(relays, count, env, KEYS);
      runs.get(relays)!.push(d);
      perSec.set(relays, d.perSec);
      console.error(
        `${name} round ${round + 1}: ${relays} relay(s) ${d.perSec.toFixed(0)}/s, relays ${fixed(d.relayCpuUs, 1)} µs/event, PostgreSQL ${fixed(d.postgresCpuUs, 1)} µs/event (${pct(d.postgresBusy)} of ${CORES} cores), machine ${pct(d.machineBusy)}; ${statementLine(d)}`,
      );
    }
    const one = perSec.get(1) ?? perSec.get(COUNTS[0]!)!;
    for (const [k, v] of perSec) ratios.get(k)!.push(v / one);
  }
  return COUNTS.map((relays) => {
    const ds = runs.get(relays)!;
    const m = (pick: (d: Drain) => number | null, digits = 1): number | null => {
      const values = ds.map(pick);
      if (values.some((v) => v === null)) return null;
      return Number(median(values as number[]).toFixed(digits));
    };
    return {
      case: `${name}-${relays}-relays-${count}-events-${KEYS}-keys`,
      relays,
      perSec: Math.round(median(ds.map((d) => d.perSec))),
      ratioToOneRelay: Number(median(ratios.get(relays)!).toFixed(2)),
      relayCpuUs: Number(m((d) => d.relayCpuUs)!.toFixed(1)),
      postgresCpuUs: m((d) => d.postgresCpuUs),
      machineCpuUs: m((d) => d.machineCpuUs),
      postgresBusy: m((d) => d.postgresBusy, 2),
      machineBusy: m((d) => d.machineBusy, 2),
      keysOutOfOrder: 0,
    };
  });
}

/**
 * One relay through LONG_EVENTS events; the claim's duration by tenths of the run. With
 * `snapshot`, another session holds a repeatable-read snapshot open through the drain (a long
 * report, a backup, another service's long transaction on the same server), so no deleted
 * row's index entries are dead to all while the relay runs.
 */
async function longCase(store: Store, env: Record<string, string>, snapshot: boolean) {
  await fill(store, LONG_EVENTS, 'long');
  const holder = snapshot
    ? await store.knex.transaction({ isolationLevel: 'repeatable read' })
    : null;
  if (holder !== null) await holder.raw(`select count(*) from ${store.names.table('outbox')}`);
  const d = await drain(1, LONG_EVENTS, env, KEYS).finally(() => holder?.rollback());
  const claims = [...d.claims].sort((a, b) => a[0] - b[0]);
  const tenths = Array.from({ length: 10 }, (_, i) =>
    claims.slice(Math.floor((i * claims.length) / 10), Math.floor(((i + 1) * claims.length) / 10)),
  );
  const claimMs = tenths.map((t) => Number(median(t.map(([, ms]) => ms)).toFixed(2)));
  const name = snapshot ? 'long-snapshot' : 'long';
  console.error(
    `${name}: ${LONG_EVENTS} events, ${d.perSec.toFixed(0)}/s, ${claims.length} claims; median claim ms by tenth of the run: ${claimMs.join(', ')}`,
  );
  return {
    case: `${name}-1-relay-${LONG_EVENTS}-events-${KEYS}-keys`,
    perSec: Math.round(d.perSec),
    claims: claims.length,
    claimMsByTenth: claimMs,
    lastTenthToFirst: Number((claimMs[9]! / claimMs[0]!).toFixed(2)),
    relayCpuUs: Number(d.relayCpuUs.toFixed(1)),
    postgresCpuUs: d.postgresCpuUs === null ? null : Number(d.postgresCpuUs.toFixed(1)),
  };
}

export async function main(): Promise<void> {
  const wanted = wantedCases('BENCH_SCALE_CASES');
  const services = await ensureServices(wanted('kafka') ? ['postgres', 'kafka'] : ['postgres']);
  const schema = `bench_scale_${randomBytes(4).toString('hex')}`;
  const store = await createStore({
    connectionString: services.databaseUrl,
    schema,
    pool: { max: 4 },
  });
  const kafka = wanted('kafka')
    ? new Kafka({ clientId: 'bench', brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING })
    : null;
  const topics: string[] = [];
  const env = {
    DATABASE_URL: services.databaseUrl,
    SCALE_SCHEMA: schema,
    SCALE_BATCH: String(BATCH),
    SCALE_CONCURRENCY: String(CONCURRENCY),
  };
  const scale: Array<Record<string, unknown>> = [];
  const results: Array<Record<string, unknown>> = [];
  try {
    await store.migrate();
    if (wanted('memory')) {
      scale.push(
        ...(await scaleCase('memory', store, EVENTS, { ...env, SCALE_PUBLISHER: 'memory' }, () =>
          Promise.resolve('bench'),
        )),
      );
    }
    if (kafka !== null) {
      const brokers = services.kafkaBrokers.join(',');
      scale.push(
        ...(await scaleCase(
          'kafka',
          store,
          KAFKA_EVENTS,
          { ...env, SCALE_PUBLISHER: 'kafka', KAFKA_BROKERS: brokers },
          async () => {
            const topic = `bench-scale-${randomBytes(4).toString('hex')}`;
            const admin = kafka.admin();
            await admin.connect();
            await admin.createTopics({
              waitForLeaders: true,
              topics: [{ topic, numPartitions: 8, replicationFactor: 1 }],
            });
            await admin.disconnect();
            topics.push(topic);
            return topic;
          },
        )),
      );
    }
    results.push(...scale);
    for (const snapshot of [false, true]) {
      if (wanted(snapshot ? 'long-snapshot' : 'long')) {
        results.push(await longCase(store, { ...env, SCALE_PUBLISHER: 'memory' }, snapshot));
      }
    }
    console.log('');
    printTable(
      [
        'case',
        'events/s',
        'vs 1 relay',
        'relays CPU µs/event',
        'PostgreSQL CPU µs/event',
        'PostgreSQL busy',
        'machine busy',
      ],
      scale.map((r) => [
        String(r.case),
        String(r.perSec),
        String(r.ratioToOneRelay),
        String(r.relayCpuUs),
        fixed(r.postgresCpuUs as number | null, 1),
        pct(r.postgresBusy as number | null),
        pct(r.machineBusy as number | null),
      ]),
    );
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await store.close();
    if (kafka !== null && topics.length > 0) {
      const admin = kafka.admin();
      await admin
        .connect()
        .then(() => admin.deleteTopics({ topics }))
        .catch(() => undefined)
        .finally(() => admin.disconnect());
    }
  }
  console.log(JSON.stringify({ bench: 'relay-scale', results }));
}
