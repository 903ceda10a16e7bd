/**
 * Helpers shared by the benchmarks. The leading underscore keeps `pnpm bench` from listing
 * this file as a benchmark.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Knex } from 'knex';
import { Connection as MysqlConnection } from 'mysql2';
import { Client } from 'pg';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  rowsOf,
  type Envelope,
  type RelayOptions,
  type OutboxEvent,
  type OutgoingMessage,
  type Publisher,
  type Store,
} from '@justonce/core';

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Rounds per case: BENCH_ROUNDS, default 6. Keep it even, so that each side goes first in as
 * many rounds as the other: on a shared machine the side that ran second in a round was often
 * the faster one (by up to a fifth in the SQS relay case, whichever side it was; runs of one
 * side alone showed the same, every other run the faster), and with an odd number of rounds
 * the median ratio lands on a round of the order that came up more often.
 */
export function benchRounds(): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new Error('BENCH_ROUNDS must be a positive integer');
  }
  return rounds;
}

/** The `p`-th percentile (nearest rank) of a non-empty list. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Resolves once `count()` reaches `target`; rejects after `timeoutMs` (a bounded poll). */
export async function reached(
  count: () => number,
  target: number,
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (count() < target) {
    if (Date.now() > deadline) throw new Error(`stalled at ${count()} of ${target}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Wraps a publisher and counts the messages the broker acknowledged. */
export function countingPublisher(inner: Publisher): Publisher & { acked: number } {
  const wrapper = {
    acked: 0,
    async publish(messages: readonly OutgoingMessage[]) {
      const results = await inner.publish(messages);
      wrapper.acked += results.filter((r) => r.ok).length;
      return results;
    },
    close: () => inner.close(),
  };
  return wrapper;
}

/**
 * The relay's side of a relay case: drains `count` events already in the outbox through
 * `publisher` (connected beforehand, as the raw sides' clients are) with a polling relay,
 * timed from its start to the last acknowledged message; the publisher is closed after.
 */
export async function timedRelayRun(
  store: Store,
  publisher: Publisher,
  count: number,
  options: Omit<RelayOptions, 'store' | 'publisher'>,
): Promise<Run> {
  const counting = countingPublisher(publisher);
  const relay = createRelay({
    store,
    publisher: counting,
    notify: false,
    pollIntervalMs: 20,
    ...options,
  });
  const cpu = costMeter();
  const started = performance.now();
  await relay.start();
  await reached(() => counting.acked, count);
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await relay.stop();
  await counting.close();
  return { perSec: count / (elapsed / 1000), ...used };
}

/** What {@link commitToPublishLatency} measured. */
export interface PublishLatency {
  /** The rate actually offered, events per second. */
  readonly perSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Producing transactions and relay together, per event. */
  readonly cost: Cost;
}

/**
 * Single-event transactions at `rate` per second for `seconds`, over 100 keys, each committed
 * with `synchronous_commit = off`, published by a relay on `relayStore` (notifications, or
 * polling every 100 ms) to the in-memory publisher; latencies in ms from the commit's return
 * to the publisher accepting the event. `relayOptions` are added to the relay's.
 */
export async function commitToPublishLatency(
  store: Store,
  relayStore: Store,
  notify: boolean,
  rate: number,
  seconds: number,
  relayOptions: Omit<RelayOptions, 'store' | 'publisher' | 'notify'> = {},
): Promise<PublishLatency> {
  const publisher = createMemoryPublisher();
  const relay = createRelay({
    store: relayStore,
    publisher,
    notify,
    pollIntervalMs: notify ? 1_000 : 100,
    ...relayOptions,
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
  const meter = costMeter();
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
          .transaction(async (trx) => {
            // PostgreSQL's; MySQL's commit flush is a server setting (innodb_flush_log_at_trx_commit).
            if (store.dialect !== 'mysql') await trx.raw('set local synchronous_commit = off');
            return outbox.add(trx, { destination: 'lat', key, payload: { n } });
          })
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
  const { cost } = meter(total);
  await relay.stop();
  return {
    perSec: total / sendSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cost,
  };
}

/** Adds `count` events to the outbox in transactions of 500; `event(n)` builds the n-th. */
export async function fillOutbox(
  store: Store,
  count: number,
  event: (n: number) => OutboxEvent,
): Promise<void> {
  const outbox = createOutbox({ store, notify: false });
  for (let start = 0; start < count; start += 500) {
    const size = Math.min(500, count - start);
    await store.knex.transaction((trx) =>
      outbox.add(
        trx,
        Array.from({ length: size }, (_, j) => event(start + j)),
      ),
    );
  }
  // Statistics as autovacuum would soon gather them in production, so every round plans its
  // statements on the same footing instead of whenever autoanalyze happens to run.
  // Without the store's statement limit: a partitioned outbox of millions of rows is analyzed
  // partition by partition, which may take longer than any one statement of the hot path.
  // (`query_timeout: 0` lifts the store's client-side bound of that statement too).
  await store.knex.transaction(async (trx) => {
    await trx.raw('set local statement_timeout = 0');
    await trx.raw(`analyze ${store.names.table('outbox')}`).options({ query_timeout: 0 });
  });
}

/**
 * Runs `work` on every unit with `workers` concurrent loops, each taking the next unit of a
 * shared list; resolves to the elapsed seconds.
 */
export async function timedWorkers<T>(
  units: readonly T[],
  workers: number,
  work: (unit: T) => Promise<void>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < units.length) {
        const unit = units[next] as T;
        next += 1;
        await work(unit);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

/** One inbox delivery of a benchmark, with what the hand-written side needs of it. */
export interface BenchMessage {
  readonly envelope: Envelope;
  readonly id: string;
  /** The SHA-256 hex of the body, as the inbox stores it, computed before timing. */
  readonly hash: string;
}

/** `count` first deliveries with ids `<label>-0000000`… and small JSON bodies. */
export function benchMessages(label: string, count: number): BenchMessage[] {
  return Array.from({ length: count }, (_, i) => {
    const id = `${label}-${String(i).padStart(7, '0')}`;
    const body = JSON.stringify({ account: `acct-${i % 97}`, amountCents: 100 + (i % 9_900) });
    return {
      id,
      hash: createHash('sha256').update(body).digest('hex'),
      envelope: {
        id,
        headers: {},
        body,
        delivery: { attempt: 1, receiveCount: 1, redelivered: false, source: 'bench' },
      },
    };
  });
}

/** The inbox's default retention of dedup records (7 days), as the hand-written claims set it. */
export const INBOX_RETENTION_MS = 7 * 24 * 3_600_000;

/** `text` with its `$n` placeholders (each used once, in order) written as knex binds them. */
export function knexPlaceholders(text: string): string {
  return text.replace(/\$\d+/g, '?');
}

/**
 * The inbox's single-row claim written by hand (inbox/sql/claim-messages.ts, claimMessage, for
 * a first delivery, which has no attempt counter to clear): a SUCCEEDED record in the
 * inbox's table `inboxRecords` (`inbox_records`) with its fingerprint and an expiry ahead.
 * Binds $1 the consumer, $2 the message id, $3 the fingerprint, $4 the retention in ms.
 */
export function claimOneText(inboxRecords: string): string {
  return `insert into ${inboxRecords}
     (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
   values ('default', $1, $2, 'SUCCEEDED', $3, 1,
           now() + $4::double precision * interval '1 millisecond')
   on conflict (consumer, scope, message_id) do nothing returning scope, message_id`;
}

/**
 * The inbox's multi-row claim written by hand (inbox/sql/claim-messages.ts, claimMessages): a
 * SUCCEEDED record per message in the inbox's table `inboxRecords` (`inbox_records`), in the
 * order of the arrays. Binds $1 the consumer, $2 the retention in milliseconds, then the
 * arrays $3 of scopes, $4 of message ids, $5 of fingerprints and $6 of attempts.
 */
export function claimBatchText(inboxRecords: string): string {
  return `insert into ${inboxRecords}
     (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
   select m.scope, $1, m.message_id, 'SUCCEEDED', m.fingerprint, m.attempts,
          now() + $2::double precision * interval '1 millisecond'
     from unnest($3::text[], $4::text[], $5::text[], $6::integer[]) with ordinality
          as m (scope, message_id, fingerprint, attempts, ord)
    order by m.ord
   on conflict (consumer, scope, message_id) do nothing returning message_id`;
}

/**
 * {@link claimOneText} through knex: the record of a first delivery with an expiry
 * `retentionMs` ahead. Resolves to whether the record is new.
 */
export async function handClaimOne(
  trx: Knex.Transaction,
  inboxRecords: string,
  operation: string,
  retentionMs: number,
  message: { readonly id: string; readonly hash: string },
): Promise<boolean> {
  const claimed = await trx.raw(knexPlaceholders(claimOneText(inboxRecords)), [
    operation,
    message.id,
    message.hash,
    retentionMs,
  ]);
  return rowsOf(claimed).length === 1;
}

/** `messages` in key order, as the inbox sorts them before its multi-row claim. */
export function inKeyOrder<T extends { readonly id: string }>(messages: readonly T[]): T[] {
  return [...messages].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * {@link claimBatchText} through knex: a record per message, in key order as the inbox sorts
 * them, with an expiry `retentionMs` ahead; first deliveries have no attempt counter to
 * clear. Resolves to the ids that were new.
 */
export async function handClaim(
  trx: Knex.Transaction,
  inboxRecords: string,
  operation: string,
  retentionMs: number,
  messages: ReadonlyArray<{ readonly id: string; readonly hash: string }>,
): Promise<Set<string>> {
  const sorted = inKeyOrder(messages);
  const claimed = await trx.raw(knexPlaceholders(claimBatchText(inboxRecords)), [
    operation,
    retentionMs,
    sorted.map(() => 'default'),
    sorted.map((m) => m.id),
    sorted.map((m) => m.hash),
    sorted.map(() => 1),
  ]);
  return new Set(rowsOf<{ message_id: string }>(claimed).map((r) => r.message_id));
}

/** One outbox row as the hand-written relay loops claim it. */
export interface ClaimedRow {
  id: string;
  destination: string;
  partition_key: string | null;
  message_id: string;
  headers: Record<string, string>;
  payload: Buffer;
}

/**
 * The relay's work by hand: `loops` loops at once, each repeating one transaction that
 * claims up to `batchSize` pending rows of the outbox (`for update skip locked`, in id
 * order), hands them to `publish`, deletes them and commits, until a claim comes back empty.
 * Resolves to the milliseconds from the first claim to the last commit that deleted rows;
 * rejects when fewer than `expected` rows were published.
 */
export async function handRelayLoops(
  store: Store,
  options: {
    loops: number;
    batchSize: number;
    expected: number;
    publish: (rows: readonly ClaimedRow[]) => Promise<void>;
  },
): Promise<number> {
  const outbox = store.names.table('outbox');
  let done = 0;
  let lastCommit = 0;
  const started = performance.now();
  const loop = async (): Promise<void> => {
    for (;;) {
      const n = await store.knex.transaction(async (trx) => {
        const rows = rowsOf<
          Omit<ClaimedRow, 'headers'> & { headers: ClaimedRow['headers'] | string }
        >(
          await trx.raw(
            `select id, destination, partition_key, message_id, headers, payload from ${outbox}
              where status = 'pending' order by id limit ? for update skip locked`,
            [options.batchSize],
          ),
        ).map((row) => ({
          ...row,
          // jsonb arrives parsed from pg; a driver that hands it over as text is parsed here.
          headers:
            typeof row.headers === 'string'
              ? (JSON.parse(row.headers) as ClaimedRow['headers'])
              : row.headers,
        }));
        if (rows.length === 0) return 0;
        await options.publish(rows);
        await trx.raw(`delete from ${outbox} where id = any(?::bigint[])`, [rows.map((r) => r.id)]);
        return rows.length;
      });
      if (n === 0) return;
      done += n;
      lastCommit = performance.now();
    }
  };
  await Promise.all(Array.from({ length: options.loops }, loop));
  if (done !== options.expected) {
    throw new Error(`the hand relay published ${done} of ${options.expected} rows`);
  }
  return lastCommit - started;
}

/** `rows` grouped by destination, each group in claim order. */
export function byDestination(rows: readonly ClaimedRow[]): Map<string, ClaimedRow[]> {
  const groups = new Map<string, ClaimedRow[]>();
  for (const row of rows) {
    const group = groups.get(row.destination);
    if (group) group.push(row);
    else groups.set(row.destination, [row]);
  }
  return groups;
}

/** Busy CPU time of the whole machine (all processes, all cores) so far, in microseconds. */
function machineBusyUs(): number | null {
  try {
    // First line of /proc/stat: cpu user nice system idle iowait irq softirq steal …, in ticks.
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    const ticks = fields.slice(1).map(Number);
    const busy = ticks.reduce((sum, t, i) => (i === 3 || i === 4 ? sum : sum + t), 0);
    return (busy * 1_000_000) / TICKS_PER_SECOND;
  } catch {
    return null; // not Linux: the figure is left out
  }
}

/** USER_HZ, the unit of /proc/stat; 100 on every common Linux build. */
const TICKS_PER_SECOND = 100;

/** Busy CPU per event of the processes a benchmark involves, in µs. */
export interface ProcessCpu {
  /** This benchmark process: the client library, and the framework when it is measured. */
  readonly client: number;
  /** PostgreSQL's processes. */
  readonly database: number;
  /** The brokers' processes (`java` for Kafka and ElasticMQ, `beam.smp` for RabbitMQ). */
  readonly broker: number;
}

const BROKER_COMMANDS = new Set(['java', 'beam.smp']);

/** Which group a process counts in, by its command name; undefined for the rest. */
function groupOf(pid: number, command: string): keyof ProcessCpu | undefined {
  if (pid === process.pid) return 'client';
  if (command.startsWith('postgres') || command === 'mariadbd' || command === 'mysqld') {
    return 'database';
  }
  if (BROKER_COMMANDS.has(command)) return 'broker';
  return undefined;
}

/**
 * Busy CPU time so far of each process of the three groups, in clock ticks, by pid (from
 * /proc/<pid>/stat: user and system time of all of a process's threads); null off Linux. A
 * PostgreSQL process also counts the time of its children it has reaped: the postmaster's
 * holds that of every backend that ended (pgbench's connections end with it, before a run's
 * last reading, and a pool may close one).
 */
function processTicks(): Map<number, { group: keyof ProcessCpu; ticks: number }> | null {
  const found = new Map<number, { group: keyof ProcessCpu; ticks: number }>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // pid (comm) state ppid …: comm may hold spaces, so fields are counted after the ')'.
    const close = stat.lastIndexOf(')');
    const group = groupOf(Number(entry), stat.slice(stat.indexOf('(') + 1, close));
    if (group === undefined) continue;
    const fields = stat.slice(close + 2).split(' ');
    // utime, stime; then cutime, cstime (reaped children), for the server's processes only:
    // this process's children (pgbench) are not this process's work.
    const own = Number(fields[11]) + Number(fields[12]);
    const reaped = group === 'database' ? Number(fields[13]) + Number(fields[14]) : 0;
    found.set(Number(entry), { group, ticks: own + reaped });
  }
  return found;
}

/**
 * The CPU each group used between two readings of {@link processTicks}, in microseconds: a
 * process still there at the end counts from the first reading (or from its start, if it
 * started in between). One that ended in between is not counted, except PostgreSQL's: the
 * postmaster's reaped children's time took in all of its CPU, so what it had used before the
 * first reading is taken off.
 */
function processBusyUs(
  start: ReturnType<typeof processTicks>,
  end: ReturnType<typeof processTicks>,
): ProcessCpu | null {
  if (start === null || end === null) return null;
  const used = { client: 0, database: 0, broker: 0 };
  for (const [pid, now] of end) used[now.group] += now.ticks - (start.get(pid)?.ticks ?? 0);
  for (const [pid, then] of start) {
    if (then.group === 'database' && !end.has(pid)) used.database -= then.ticks;
  }
  const us = (ticks: number): number => (ticks * 1_000_000) / TICKS_PER_SECOND;
  return { client: us(used.client), database: us(used.database), broker: us(used.broker) };
}

/** Statements sent through node-postgres in this process since this module loaded. */
let statementsSent = 0;
const statementListeners = new Set<(text: string) => void>();

/**
 * Counts every statement that reaches node-postgres (or mysql2) in this process, by wrapping
 * `Client.prototype.query` once: knex, `pg`'s pool, Kysely, drizzle and TypeORM all send
 * through it, `begin` and `commit` included. No benchmark runs on PGlite, which this would
 * not see.
 */
function watchStatements(): void {
  watchQuery(Client.prototype as unknown as { query: (...args: unknown[]) => unknown });
  // knex's mysql2 client sends every statement through the connection's `query`.
  watchQuery(MysqlConnection.prototype as unknown as { query: (...args: unknown[]) => unknown });
}

/** Counts (and reports to the listeners) each call of `proto.query`. */
function watchQuery(proto: { query: (...args: unknown[]) => unknown }): void {
  const original = proto.query;
  proto.query = function query(this: unknown, ...args: unknown[]) {
    statementsSent += 1;
    if (statementListeners.size > 0) {
      const first = args[0];
      const text =
        typeof first === 'string' ? first : String((first as { text?: unknown } | null)?.text);
      for (const listener of statementListeners) listener(text);
    }
    return original.apply(this, args);
  };
}

// Before any connection opens: the store binds each new connection's `query` as it finds it
// (store/limits.ts), so a connection opened before the wrapping would go uncounted.
watchStatements();

/**
 * Calls `listener` with the text of every statement sent through node-postgres in this
 * process, until the returned function is called.
 */
export function onStatement(listener: (text: string) => void): () => void {
  statementListeners.add(listener);
  return () => statementListeners.delete(listener);
}

/** The CPU figures of one run, per event (see {@link costMeter}). */
export interface CpuUsed {
  readonly machineCpuUsPerEvent: number | null;
  readonly processCpuUsPerEvent: ProcessCpu | null;
}

/**
 * What a measured section cost per event: per message, or per order in `pnpm bench orders`,
 * per call in `pnpm bench operations`.
 */
export interface Cost {
  /** CPU time of this process (`process.cpuUsage`, user + system), in µs. */
  readonly nodeCpuUs: number;
  /** CPU time of PostgreSQL's server processes (from /proc), in µs; null off Linux. */
  readonly postgresCpuUs: number | null;
  /** Statements that reached node-postgres (`Client.prototype.query`). */
  readonly statements: number;
}

/** What {@link costMeter} measured over one section. */
export interface Measured extends CpuUsed {
  readonly cost: Cost;
  /** Statements that reached node-postgres in the section, in all. */
  readonly statementsSent: number;
}

const roundTo = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Starts measuring a section: the busy CPU time of the whole machine (every process: this
 * one, the database, the brokers) and, within it, this process's, PostgreSQL's and the
 * brokers' (from /proc), this process's CPU time (`process.cpuUsage`), and the statements
 * sent through node-postgres. The returned function ends the section and gives the figures
 * per `events`; a /proc figure is null where /proc is not available.
 */
export function costMeter(): (events: number) => Measured {
  const start = machineBusyUs();
  const startByProcess = processTicks();
  const startStatements = statementsSent;
  // Last at the start and first at the end: reading /proc is this process's work too.
  const startNode = process.cpuUsage();
  return (events) => {
    const node = process.cpuUsage(startNode);
    const sent = statementsSent - startStatements;
    const end = machineBusyUs();
    const byProcess = processBusyUs(startByProcess, processTicks());
    const per = (used: number): number => roundTo(used / events, 1);
    return {
      machineCpuUsPerEvent: start === null || end === null ? null : per(end - start),
      processCpuUsPerEvent:
        byProcess === null
          ? null
          : {
              client: per(byProcess.client),
              database: per(byProcess.database),
              broker: per(byProcess.broker),
            },
      cost: {
        nodeCpuUs: per(node.user + node.system),
        postgresCpuUs: byProcess === null ? null : per(byProcess.database),
        statements: roundTo(sent / events, 3),
      },
      statementsSent: sent,
    };
  };
}

/** The median of each figure of `costs` (non-empty); PostgreSQL's is null if any is. */
export function medianCost(costs: readonly Cost[]): Cost {
  const pg = costs.flatMap((c) => (c.postgresCpuUs === null ? [] : [c.postgresCpuUs]));
  return {
    nodeCpuUs: roundTo(median(costs.map((c) => c.nodeCpuUs)), 1),
    postgresCpuUs: pg.length === costs.length ? roundTo(median(pg), 1) : null,
    statements: roundTo(median(costs.map((c) => c.statements)), 3),
  };
}

/** One figure of a {@link Cost} as a table shows it: µs whole, statements to 3 places. */
function costFigure(value: number | null | undefined, digits = 0): string {
  return value == null ? 'n/a' : String(roundTo(value, digits));
}

/** The three cells of the cost columns: `a vs b` with a baseline, `a` without one. */
export function costCells(cost: Cost | undefined, baseline?: Cost): string[] {
  const cell = (pick: (c: Cost) => number | null, digits = 0): string =>
    baseline === undefined
      ? costFigure(cost && pick(cost), digits)
      : `${costFigure(cost && pick(cost), digits)} vs ${costFigure(pick(baseline), digits)}`;
  return [cell((c) => c.nodeCpuUs), cell((c) => c.postgresCpuUs), cell((c) => c.statements, 3)];
}

/** The cost figures in a sentence: `a vs b` with a baseline, `a` without one. */
export function costLine(cost: Cost | undefined, baseline?: Cost): string {
  const [node, pg, statements] = costCells(cost, baseline);
  return `node CPU ${node} µs, PostgreSQL CPU ${pg} µs, statements ${statements}`;
}

/** The headers of {@link costCells}, per `unit` (message, order, call…). */
export function costHeads(unit: string): string[] {
  return [`node CPU µs/${unit}`, `PostgreSQL CPU µs/${unit}`, `statements/${unit}`];
}

/** Prints `rows` under `head`, each column as wide as its widest cell. */
export function printTable(head: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  for (const line of [head, ...rows]) {
    console.log(
      line
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  }
}

/** A line of {@link printCostTable}: a case, its rates and what it cost per event. */
export interface CostRow {
  readonly case: string;
  readonly perSec: number;
  readonly baselinePerSec?: number;
  readonly ratio?: number;
  readonly cost?: Cost;
  readonly baselineCost?: Cost;
}

/**
 * Prints the summary of a benchmark: per case, both sides' rates, the ratio, and what each
 * side cost per `unit` (justonce vs baseline).
 */
export function printCostTable(rows: readonly CostRow[], unit = 'message'): void {
  console.log('');
  printTable(
    ['case', 'justonce /s', 'baseline /s', 'ratio', ...costHeads(unit)],
    rows.map((r) => [
      r.case,
      String(Math.round(r.perSec)),
      r.baselinePerSec === undefined ? '' : String(Math.round(r.baselinePerSec)),
      r.ratio === undefined ? '' : String(r.ratio),
      ...costCells(r.cost, r.baselineCost),
    ]),
  );
}

/** One timed run of one side: events per second, and what an event cost if measured. */
export interface Run {
  readonly perSec: number;
  readonly machineCpuUsPerEvent?: number | null;
  readonly processCpuUsPerEvent?: ProcessCpu | null;
  readonly cost?: Cost;
}

/** What {@link measureCase} prints in the JSON line for one case. */
export interface CaseResult {
  case: string;
  perSec: number;
  baselinePerSec: number;
  ratio: number;
  /** Median busy CPU of the whole machine (client, database, broker) per event, in µs. */
  machineCpuUsPerEvent?: number;
  baselineMachineCpuUsPerEvent?: number;
  /** Median busy CPU per event of this process, PostgreSQL and the broker, in µs. */
  processCpuUsPerEvent?: ProcessCpu;
  baselineProcessCpuUsPerEvent?: ProcessCpu;
  /** Median cost per event (see {@link costMeter}) of each side, when every run measured it. */
  cost?: Cost;
  baselineCost?: Cost;
}

/**
 * Runs a case: one untimed warm-up of each side, then `rounds` rounds alternating which side
 * goes first, each printed as it ends. `perSec` and `baselinePerSec` are medians, `ratio` the
 * median of the rounds' ratios rounded to `digits`; the CPU figures (each process group's
 * separately) and the costs are medians when every run reported one.
 */
export async function measureCase(
  name: string,
  rounds: number,
  framework: () => Promise<Run | number>,
  baseline: () => Promise<Run | number>,
  digits = 2,
): Promise<CaseResult> {
  const run = async (side: () => Promise<Run | number>): Promise<Run> => {
    const result = await side();
    return typeof result === 'number' ? { perSec: result } : result;
  };
  await run(framework);
  await run(baseline);
  const f: Run[] = [];
  const b: Run[] = [];
  const ratios: number[] = [];
  const cpu = (r: Run): string => {
    if (r.machineCpuUsPerEvent == null) return '';
    const p = r.processCpuUsPerEvent;
    const split = p ? `: client ${p.client}, database ${p.database}, broker ${p.broker}` : '';
    return ` (${r.machineCpuUsPerEvent} µs CPU/event${split})`;
  };
  for (let round = 0; round < rounds; round++) {
    let fw: Run;
    let base: Run;
    if (round % 2 === 0) {
      fw = await run(framework);
      base = await run(baseline);
    } else {
      base = await run(baseline);
      fw = await run(framework);
    }
    f.push(fw);
    b.push(base);
    ratios.push(fw.perSec / base.perSec);
    const costs = fw.cost && base.cost ? `; per event ${costLine(fw.cost, base.cost)}` : '';
    console.log(
      `${name} round ${round + 1}: ${fw.perSec.toFixed(0)}/s${cpu(fw)} vs baseline ` +
        `${base.perSec.toFixed(0)}/s${cpu(base)} (${(fw.perSec / base.perSec).toFixed(2)})${costs}`,
    );
  }
  const cpuOf = (runs: Run[]): number | undefined => {
    const known = runs.flatMap((r) =>
      r.machineCpuUsPerEvent == null ? [] : [r.machineCpuUsPerEvent],
    );
    return known.length === runs.length ? median(known) : undefined;
  };
  const fwCpu = cpuOf(f);
  const baseCpu = cpuOf(b);
  const processCpuOf = (runs: Run[]): ProcessCpu | undefined => {
    const known = runs.flatMap((r) => (r.processCpuUsPerEvent ? [r.processCpuUsPerEvent] : []));
    if (known.length !== runs.length) return undefined;
    return {
      client: median(known.map((p) => p.client)),
      database: median(known.map((p) => p.database)),
      broker: median(known.map((p) => p.broker)),
    };
  };
  const fwProcessCpu = processCpuOf(f);
  const baseProcessCpu = processCpuOf(b);
  const costOf = (runs: Run[]): Cost | undefined => {
    const known = runs.flatMap((r) => (r.cost ? [r.cost] : []));
    return known.length === runs.length ? medianCost(known) : undefined;
  };
  const fwCost = costOf(f);
  const baseCost = costOf(b);
  const scale = 10 ** digits;
  return {
    case: name,
    perSec: Math.round(median(f.map((r) => r.perSec))),
    baselinePerSec: Math.round(median(b.map((r) => r.perSec))),
    ratio: Math.round(median(ratios) * scale) / scale,
    ...(fwCpu !== undefined && baseCpu !== undefined
      ? { machineCpuUsPerEvent: fwCpu, baselineMachineCpuUsPerEvent: baseCpu }
      : {}),
    ...(fwProcessCpu !== undefined && baseProcessCpu !== undefined
      ? { processCpuUsPerEvent: fwProcessCpu, baselineProcessCpuUsPerEvent: baseProcessCpu }
      : {}),
    ...(fwCost !== undefined && baseCost !== undefined
      ? { cost: fwCost, baselineCost: baseCost }
      : {}),
  };
}

/** One case of a benchmark: its name, the framework's side and the baseline's. */
export type Case = readonly [
  name: string,
  framework: () => Promise<Run | number>,
  baseline: () => Promise<Run | number>,
];

/**
 * The case names listed in the environment variable `variable` (comma-separated), or every
 * name when it is unset.
 */
export function wantedCases(variable: string): (name: string) => boolean {
  const only = process.env[variable]?.split(',');
  return (name) => only === undefined || only.includes(name);
}

/**
 * Runs the cases `wanted` keeps, one after the other, with {@link measureCase}; ratios are
 * rounded to `digits`.
 */
export async function measureCases(
  rounds: number,
  cases: readonly Case[],
  wanted: (name: string) => boolean,
  digits = 2,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const [name, framework, baseline] of cases) {
    if (wanted(name)) results.push(await measureCase(name, rounds, framework, baseline, digits));
  }
  return results;
}

/**
 * Rows inserted, updated and deleted so far in the tables of `schema` (pg_stat_user_tables).
 * A backend adds its counts to the shared statistics at the end of a transaction at most once
 * a second, else up to 10 s later once idle; so first each of up to `connections` connections
 * of `knex`'s pool is asked to flush when its next statement ends
 * (`pg_stat_force_next_flush()`, PostgreSQL 15+: the concurrent calls, each sleeping a
 * moment, take distinct connections), then this reads until two readings 0.3 s apart agree.
 * TRUNCATE is not counted. Unlike a driver's reply, it counts the rows a data-modifying CTE
 * writes too.
 */
export async function rowsWritten(
  knex: Knex,
  schema: string,
  connections: number,
): Promise<number> {
  await Promise.all(
    Array.from({ length: connections }, () =>
      knex.raw('select pg_stat_force_next_flush(), pg_sleep(0.05)'),
    ),
  );
  const read = async (): Promise<number> => {
    await knex.raw('select pg_stat_clear_snapshot()');
    const [row] = rowsOf<{ n: string | null }>(
      await knex.raw(
        `select sum(n_tup_ins + n_tup_upd + n_tup_del)::bigint as n
           from pg_stat_user_tables where schemaname = ?`,
        [schema],
      ),
    );
    return Number(row?.n ?? 0);
  };
  let last = await read();
  for (let i = 0; i < 20; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await read();
    if (now === last) return now;
    last = now;
  }
  return last;
}
