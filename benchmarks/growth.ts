/**
 * `pnpm bench growth`: what justonce's hot paths cost as its tables grow. Two schemas side by
 * side: one kept empty, one filled to each size of BENCH_GROWTH_ROWS in turn (default
 * 1 000 000 and 10 000 000 rows in each of `inbox_records`, `idempotency`, `inbox_attempts`
 * and `outbox`, set-based: test-support/growth-fill.ts). At each size every figure is measured
 * on both schemas in alternating rounds (each goes first in half of them), and reported with
 * its ratio, filled ÷ empty (the median of the rounds' ratios).
 *
 * Figures (every side's writes use random ids, as a broker's are, so they land all over the
 * keys):
 * - inbox per message: `inbox.process` of BENCH_GROWTH_MESSAGES (default 2 000) first
 *   deliveries, 8 workers, a handler that does nothing;
 * - duplicates: the same messages again, each a duplicate of a SUCCEEDED record;
 * - inbox batch: `inbox.processBatch` of 100, 4 workers, five times as many messages;
 * - reserve p50/p99: `operations.reserve` latency on new keys, one caller, 1 000 calls (each
 *   completed before the next);
 * - relay: 20 000 pending events over 1 000 keys drained by a polling relay
 *   (`onPublished: 'keep'`, as the filled table's published rows imply);
 * - publish p99: commit → publish latency at 500 single-event transactions per second, with
 *   notifications (_support.ts, commitToPublishLatency);
 * - status: `createAdmin(store).status()` (`justonce status` runs the same), median of 5;
 * - cleanup: BENCH_GROWTH_STALE (default 20 000) stale rows added to each table retention
 *   cleans by age, then `retention.runOnce()` (batches of 1 000, no pause) while two writers
 *   loop (`inbox.process` and `operations.run` of new keys): how long the pass took, its
 *   longest batch statement, and the writers' longest call during the pass beside their
 *   longest call in the 2 s before it.
 *
 * Targets (issue #38): every figure at the largest size within 10 % of the empty tables;
 * cleanup never blocks a writer for more than 10 ms (judged as the writers' longest call
 * during the pass less their longest before it); status under 1 s.
 *
 * Environment: BENCH_GROWTH_ROWS (comma-separated sizes, ascending), BENCH_ROUNDS (default
 * 6), BENCH_GROWTH_MESSAGES, BENCH_GROWTH_STALE, BENCH_GROWTH_LAYOUT (the store's table
 * layout, `plain` or `partitioned`; see {@link LAYOUTS}). The last line printed is the JSON result.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  createInbox,
  createMemoryPublisher,
  createOperations,
  createRetention,
  createStore,
  rowsOf,
  type Envelope,
  type Store,
  type StoreOptions,
} from '@justonce/core';
import { createAdmin, statusQueries, type StatusQueryName } from '@justonce/core/admin';
import {
  addStaleRows,
  describeTiming,
  fillTo,
  RETENTION_MS,
  type FillTiming,
} from '../test-support/growth-fill';
import {
  benchRounds,
  commitToPublishLatency,
  fillOutbox,
  median,
  percentile,
  printTable,
  timedRelayRun,
  timedWorkers,
} from './_support';

/**
 * The store options of each table layout the benchmark can fill and measure; BENCH_GROWTH_LAYOUT
 * picks one. On `partitioned` the fill creates the partitions of its 29 days first, in
 * `inbox_records` and `outbox` (test-support/growth-fill.ts), so their rows land in daily
 * partitions as a month of traffic's would.
 */
const LAYOUTS: Readonly<
  Record<string, Omit<StoreOptions, 'connectionString' | 'schema' | 'knex' | 'pglite' | 'pool'>>
> = {
  plain: {},
  partitioned: { layout: 'partitioned' },
};

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

function sizes(): number[] {
  const list = (process.env.BENCH_GROWTH_ROWS ?? '1000000,10000000').split(',').map(Number);
  if (list.some((n, i) => !Number.isInteger(n) || n < 1 || (i > 0 && n <= list[i - 1]!))) {
    throw new Error('BENCH_GROWTH_ROWS must be positive integers in ascending order');
  }
  return list;
}

const MESSAGES = positive('BENCH_GROWTH_MESSAGES', 2_000);
const STALE = positive('BENCH_GROWTH_STALE', 20_000);
const RESERVES = 1_000;
const RELAY_EVENTS = 20_000;
const PUBLISH_RATE = 500;
const PUBLISH_SECONDS = 4;
const QUIET_MS = 2_000;

/** Whether a figure is better high (a rate) or low (a time). */
type Better = 'higher' | 'lower';

/** Every figure the benchmark reports: its unit and which way is better. */
const FIGURES = {
  inboxPerSec: { label: 'inbox per message', unit: '/s', better: 'higher' },
  duplicatePerSec: { label: 'duplicates (SUCCEEDED record)', unit: '/s', better: 'higher' },
  batchPerSec: { label: 'inbox batch of 100', unit: '/s', better: 'higher' },
  reserveP50Ms: { label: 'operations.reserve p50', unit: 'ms', better: 'lower' },
  reserveP99Ms: { label: 'operations.reserve p99', unit: 'ms', better: 'lower' },
  relayPerSec: { label: 'relay, 20 000 events', unit: '/s', better: 'higher' },
  publishP99Ms: { label: `commit → publish p99 at ${PUBLISH_RATE}/s`, unit: 'ms', better: 'lower' },
  statusMs: { label: 'status()', unit: 'ms', better: 'lower' },
  cleanupMs: { label: `cleanup of ${STALE} stale rows × 3 tables`, unit: 'ms', better: 'lower' },
  longestBatchMs: { label: 'cleanup: longest batch statement', unit: 'ms', better: 'lower' },
  writerQuietMaxMs: { label: 'writers: longest call, no cleanup', unit: 'ms', better: 'lower' },
  writerCleanupMaxMs: {
    label: 'writers: longest call during cleanup',
    unit: 'ms',
    better: 'lower',
  },
} as const satisfies Record<string, { label: string; unit: string; better: Better }>;

type Figure = keyof typeof FIGURES;

/** The tables retention cleans by age, for the cleanup's breakdown. */
const CLEANED = ['idempotency', 'inbox_records', 'inbox_attempts', 'consumer_activity'] as const;
const STATUS_QUERIES: readonly StatusQueryName[] = [
  'outbox',
  'deadLetters',
  'consumers',
  'activity',
  'operations',
  'retention',
];

/**
 * Where the time of two figures goes, printed below them without a target: each of the six
 * statements of `status()` alone (median of three runs), and per table the cleanup's time and
 * its longest batch.
 */
type Detail =
  | `status ${StatusQueryName}`
  | `cleanup ${(typeof CLEANED)[number]}`
  | `cleanup ${(typeof CLEANED)[number]} longest batch`;

type Figures = Record<Figure, number> & { readonly details: Partial<Record<Detail, number>> };

/** One side of the benchmark: a store (and the relay's), empty or filled. */
interface Side {
  readonly label: 'empty' | 'filled';
  readonly store: Store;
  readonly relayStore: Store;
  /** Run before the side is measured: empties the empty side's tables. */
  readonly reset: () => Promise<void>;
}

/** `count` first deliveries with random ids and small JSON bodies. */
function deliveries(count: number): Envelope[] {
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    headers: {},
    body: JSON.stringify({ account: `acct-${i % 97}`, amountCents: 100 + (i % 9_900) }),
    delivery: { attempt: 1, receiveCount: 1, redelivered: false, source: 'bench' },
  }));
}

const noop = async (): Promise<void> => undefined;

/** Inbox per message, its duplicates, and batches: messages per second. */
async function inboxFigures(store: Store) {
  const inbox = createInbox({ store, consumer: 'consumer-3', retentionMs: RETENTION_MS });
  const messages = deliveries(MESSAGES);
  const deliver = (expected: string) => async (m: Envelope) => {
    const outcome = await inbox.process(m, noop);
    if (outcome.status !== expected) throw new Error(`${outcome.status}, not ${expected}`);
  };
  const first = await timedWorkers(messages, 8, deliver('processed'));
  const again = await timedWorkers(messages, 8, deliver('duplicate'));
  const batches: Envelope[][] = [];
  const batchMessages = deliveries(MESSAGES * 5);
  for (let i = 0; i < batchMessages.length; i += 100) batches.push(batchMessages.slice(i, i + 100));
  const batched = await timedWorkers(batches, 4, async (batch) => {
    const outcomes = await inbox.processBatch(batch, noop);
    if (outcomes.some((o) => o.status !== 'processed')) throw new Error('batch not processed');
  });
  return {
    inboxPerSec: MESSAGES / first,
    duplicatePerSec: MESSAGES / again,
    batchPerSec: batchMessages.length / batched,
  };
}

/** `operations.reserve` latency on new keys, one caller, each completed before the next. */
async function reserveFigures(store: Store) {
  const ops = createOperations({ store, operation: 'op-3', retentionMs: RETENTION_MS });
  const latencies: number[] = [];
  for (let i = 0; i < RESERVES; i += 1) {
    const started = performance.now();
    const reservation = await ops.reserve(randomUUID(), { n: i });
    latencies.push(performance.now() - started);
    if (reservation.kind !== 'acquired') throw new Error(`reserve: ${reservation.kind}`);
    await ops.complete(reservation.ref, { ok: i });
  }
  return { reserveP50Ms: percentile(latencies, 50), reserveP99Ms: percentile(latencies, 99) };
}

/** The relay's throughput over fresh pending events, and commit → publish p99. */
async function relayFigures(side: Side) {
  await fillOutbox(side.store, RELAY_EVENTS, (n) => ({
    destination: 'topic-bench',
    key: `key-${n % 1_000}`,
    payload: { n, body: 'x'.repeat(64) },
  }));
  const drained = await timedRelayRun(side.store, createMemoryPublisher(), RELAY_EVENTS, {
    onPublished: 'keep',
  });
  const latency = await commitToPublishLatency(
    side.store,
    side.relayStore,
    true,
    PUBLISH_RATE,
    PUBLISH_SECONDS,
    { onPublished: 'keep' },
  );
  return { relayPerSec: drained.perSec, publishP99Ms: latency.p99Ms };
}

/** `status()`: the median of five calls after one untimed; and each of its statements. */
async function statusFigures(store: Store) {
  const admin = createAdmin(store);
  await admin.status();
  const times: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    const started = performance.now();
    await admin.status();
    times.push(performance.now() - started);
  }
  const sql = statusQueries(store.names);
  const details: Partial<Record<Detail, number>> = {};
  for (const name of STATUS_QUERIES) {
    const each: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const started = performance.now();
      await store.knex.raw(sql[name]);
      each.push(performance.now() - started);
    }
    details[`status ${name}`] = median(each);
  }
  return { statusMs: median(times), details };
}

/** A writer call: when it started and ended (performance.now()). */
interface Call {
  readonly start: number;
  readonly end: number;
}

/** Two writers looping until `stop`: inbox first deliveries and operations on new keys. */
function startWriters(store: Store): { stop: () => Promise<Call[]> } {
  const inbox = createInbox({ store, consumer: 'consumer-4', retentionMs: RETENTION_MS });
  const ops = createOperations({ store, operation: 'op-4', retentionMs: RETENTION_MS });
  const calls: Call[] = [];
  let running = true;
  const loop = async (call: () => Promise<unknown>): Promise<void> => {
    while (running) {
      const start = performance.now();
      await call();
      calls.push({ start, end: performance.now() });
    }
  };
  const loops = [
    loop(() => inbox.process(deliveries(1)[0]!, noop)),
    loop(() => ops.run(randomUUID(), { w: 1 }, () => Promise.resolve({ ok: true }))),
  ];
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return calls;
    },
  };
}

/** The rows of `addStaleRows(store, tag, …)` still in the three tables. */
async function staleRowsLeft(store: Store, tag: string): Promise<number> {
  const t = (name: 'inbox_records' | 'idempotency' | 'inbox_attempts'): string =>
    store.names.table(name);
  const [row] = rowsOf<{ n: string }>(
    await store.knex.raw(
      `select (select count(*) from ${t('inbox_records')} where message_id like ?)
            + (select count(*) from ${t('idempotency')} where key like ?)
            + (select count(*) from ${t('inbox_attempts')} where message_id like ?) as n`,
      [`stale-${tag}-%`, `stale-${tag}-%`, `stale-${tag}-%`],
    ),
  );
  return Number(row?.n ?? 0);
}

/** Retention's pass over stale rows while two writers run; see the module's comment. */
async function cleanupFigures(store: Store) {
  const tag = randomBytes(4).toString('hex');
  await addStaleRows(store, tag, STALE);
  const writers = startWriters(store);
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  let longestBatchMs = 0;
  const details: Partial<Record<Detail, number>> = {};
  const retention = createRetention({
    store,
    retentionMs: RETENTION_MS,
    maxBatchesPerRun: 1_000_000,
    onBatch: (b) => {
      longestBatchMs = Math.max(longestBatchMs, b.durationMs);
      const table = b.table as (typeof CLEANED)[number];
      if (!CLEANED.includes(table)) return;
      details[`cleanup ${table}`] = (details[`cleanup ${table}`] ?? 0) + b.durationMs;
      const longest = `cleanup ${table} longest batch` as const;
      details[longest] = Math.max(details[longest] ?? 0, b.durationMs);
    },
  });
  const started = performance.now();
  const result = await retention.runOnce();
  const ended = performance.now();
  const calls = await writers.stop();
  // On the partitioned layout the stale inbox records go with whole partitions, which the
  // pass's row count leaves out: what must be true is that none of the stale rows is left.
  const left = await staleRowsLeft(store, tag);
  if (left > 0) throw new Error(`cleanup left ${left} stale rows (deleted ${result.deleted})`);
  const longest = (list: Call[]): number => Math.max(0, ...list.map((c) => c.end - c.start));
  return {
    cleanupMs: ended - started,
    longestBatchMs,
    writerQuietMaxMs: longest(calls.filter((c) => c.end < started)),
    writerCleanupMaxMs: longest(calls.filter((c) => c.end > started && c.start < ended)),
    details,
  };
}

/**
 * {@link measureSide}, once more when PostgreSQL ran out of its shared lock table (53200): the
 * server is shared, and another client holding many locks (a schema of many tables dropped at
 * once) fails whatever statement asks for a lock meanwhile. Any other error ends the run.
 */
async function measureSideRetried(side: Side): Promise<Figures> {
  try {
    return await measureSide(side);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== '53200') throw error;
    console.error(`  ${side.label}: ${(error as Error).message}; measuring the side again`);
    return measureSide(side);
  }
}

/** Every figure of one side, in one go. */
async function measureSide(side: Side): Promise<Figures> {
  await side.reset();
  const inbox = await inboxFigures(side.store);
  const reserve = await reserveFigures(side.store);
  const relay = await relayFigures(side);
  const status = await statusFigures(side.store);
  const cleanup = await cleanupFigures(side.store);
  return {
    ...inbox,
    ...reserve,
    ...relay,
    ...status,
    ...cleanup,
    details: { ...status.details, ...cleanup.details },
  };
}

/** One figure at one size: medians of both sides and of the rounds' ratios. */
interface FigureResult {
  readonly figure: Figure;
  readonly unit: string;
  readonly empty: number;
  readonly filled: number;
  /** Filled ÷ empty, the median of the rounds' ratios. */
  readonly ratio: number;
  /** Whether the target for this figure is met; absent for a figure without one. */
  readonly met?: boolean;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/**
 * Whether a figure meets its target (see the module's comment): undefined for the writers'
 * longest call without cleanup, the reference of the one during cleanup.
 */
function meets(
  figure: Figure,
  empty: Figures[],
  filled: Figures[],
  ratio: number,
): boolean | undefined {
  if (figure === 'writerQuietMaxMs') return undefined;
  if (figure === 'writerCleanupMaxMs') {
    const blocked = [...empty, ...filled].map((f) => f.writerCleanupMaxMs - f.writerQuietMaxMs);
    return Math.max(...blocked) <= 10;
  }
  const withinTenPercent = FIGURES[figure].better === 'higher' ? ratio >= 0.9 : ratio <= 1.1;
  if (figure === 'statusMs') {
    return withinTenPercent && median(filled.map((f) => f.statusMs)) < 1_000;
  }
  return withinTenPercent;
}

/** A detail at one size: medians of both sides, no target. */
interface DetailResult {
  readonly detail: Detail;
  readonly empty: number;
  readonly filled: number;
}

/** The medians of each detail either side reported. */
function detailResults(empty: Figures[], filled: Figures[]): DetailResult[] {
  const names = new Set([...empty, ...filled].flatMap((f) => Object.keys(f.details) as Detail[]));
  const of = (list: Figures[], name: Detail): number =>
    round2(median(list.map((f) => f.details[name] ?? 0)));
  return [...names].map((detail) => ({
    detail,
    empty: of(empty, detail),
    filled: of(filled, detail),
  }));
}

/** What one size measured. */
interface SizeResult {
  readonly figures: FigureResult[];
  readonly details: DetailResult[];
}

/** The rounds of one size, alternating which side goes first. */
async function measureSize(rows: number, empty: Side, filled: Side): Promise<SizeResult> {
  const rounds = benchRounds();
  const samples: Record<Side['label'], Figures[]> = { empty: [], filled: [] };
  await measureSideRetried(empty); // warm-up: connections, JIT, the statements' plans
  await measureSideRetried(filled);
  for (let r = 0; r < rounds; r += 1) {
    for (const side of r % 2 === 0 ? [empty, filled] : [filled, empty]) {
      samples[side.label].push(await measureSideRetried(side));
    }
    const e = samples.empty.at(-1)!;
    const f = samples.filled.at(-1)!;
    console.log(
      `  ${rows} rows, round ${r + 1}/${rounds}: ` +
        (Object.keys(FIGURES) as Figure[])
          .map((k) => `${k} ${round2(f[k])} vs ${round2(e[k])}`)
          .join(', '),
    );
  }
  const figures = (Object.keys(FIGURES) as Figure[]).map((figure) => {
    const ratio = median(samples.filled.map((f, i) => f[figure] / samples.empty[i]![figure]));
    return {
      figure,
      unit: FIGURES[figure].unit,
      empty: round2(median(samples.empty.map((f) => f[figure]))),
      filled: round2(median(samples.filled.map((f) => f[figure]))),
      ratio: round2(ratio),
      met: meets(figure, samples.empty, samples.filled, ratio),
    } satisfies FigureResult;
  });
  return { figures, details: detailResults(samples.empty, samples.filled) };
}

/** A store in a fresh schema of the benchmark's layout, and a relay's store beside it. */
async function openSide(
  url: string,
  label: Side['label'],
  layout: string,
): Promise<Side & { schema: string }> {
  const schema = `bench_growth_${label}_${randomBytes(4).toString('hex')}`;
  const extra = LAYOUTS[layout]!;
  const store = await createStore({ ...extra, connectionString: url, schema, pool: { max: 12 } });
  await store.migrate();
  const relayStore = await createStore({
    ...extra,
    connectionString: url,
    schema,
    pool: { max: 4 },
  });
  const tables = [
    'inbox_records',
    'idempotency',
    'inbox_attempts',
    'outbox',
    'dead_letters',
    'consumer_activity',
    'inbox_offsets',
  ] as const;
  const reset = async (): Promise<void> => {
    if (label === 'empty') {
      await store.knex.raw(`truncate ${tables.map((t) => store.names.table(t)).join(', ')}`);
    }
  };
  return { label, store, relayStore, reset, schema };
}

/** Prints one size's table: every figure beside its empty-table baseline, then the details. */
function printSize(rows: number, result: SizeResult): void {
  console.log('');
  printTable(
    ['figure', 'empty', `${rows} rows`, 'ratio', 'target met'],
    [
      ...result.figures.map((r) => [
        FIGURES[r.figure].label,
        `${r.empty} ${r.unit}`,
        `${r.filled} ${r.unit}`,
        String(r.ratio),
        r.met === undefined ? '' : r.met ? 'yes' : 'NO',
      ]),
      ...result.details.map((d) => [`  ${d.detail}`, `${d.empty} ms`, `${d.filled} ms`]),
    ],
  );
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const layout = process.env.BENCH_GROWTH_LAYOUT ?? 'plain';
  if (!(layout in LAYOUTS)) {
    throw new Error(`BENCH_GROWTH_LAYOUT must be one of ${Object.keys(LAYOUTS).join(', ')}`);
  }
  const empty = await openSide(url, 'empty', layout);
  const filled = await openSide(url, 'filled', layout);
  const results: Array<{ rows: number; fill: FillTiming[] } & SizeResult> = [];
  try {
    let rows = 0;
    for (const size of sizes()) {
      console.log(`filling to ${size} rows per table (layout ${layout})`);
      const fill = await fillTo(url, filled.store, rows, size);
      rows = size;
      const measured = await measureSize(size, empty, filled);
      printSize(size, measured);
      for (const t of fill) console.log(`  fill ${t.table}: ${describeTiming(t)}`);
      results.push({ rows: size, fill, ...measured });
    }
  } catch (error) {
    // Printed before the schemas go, so that a failing drop cannot hide it.
    console.error(error);
    throw error;
  } finally {
    for (const side of [empty, filled]) {
      await side.relayStore.close();
      await side.store.knex
        .raw(`drop schema if exists "${side.schema}" cascade`)
        .catch((error: unknown) => console.error(`dropping ${side.schema}:`, error));
      await side.store.close();
    }
  }
  console.log(JSON.stringify({ bench: 'growth', layout, rounds: benchRounds(), results }));
}
