/**
 * `DATABASE_URL=mysql://… pnpm bench inbox`: the inbox on MySQL or MariaDB against the same
 * transaction written by hand through knex on mysql2, in the same process and the same run.
 *
 * Cases (8 workers each, taking the next unit of work from a shared list):
 * - per-message: `inbox.process` per delivery, beside the transaction the inbox issues for a
 *   first delivery (the dedup record's insert, the business insert, commit) by hand;
 * - batch: `inbox.processBatch` of 100 per transaction, beside one multi-row insert of the
 *   records and the business inserts by hand;
 * - duplicates: the same first deliveries again, flagged as redelivered, after they were
 *   handled: every one is a duplicate of a committed record; its ratio is over the round's
 *   first deliveries.
 *
 * Rounds as in the PostgreSQL benchmark (BENCH_ROUNDS, sides in one order then the reverse,
 * tables emptied before each side); rates are medians, ratios the medians of each round's
 * ratio. Costs: this process's CPU, the database server's CPU (mariadbd or mysqld, from
 * /proc) and the statements sent through mysql2, per message. BENCH_INBOX_MESSAGES sets the
 * per-message count (default 2 000; batches take five times as many). The last line printed
 * is the JSON result.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createInbox, createStore, type Handler, type Store } from '@justonce/core';
import {
  benchMessages,
  benchRounds,
  costMeter,
  inKeyOrder,
  INBOX_RETENTION_MS,
  median,
  medianCost,
  printCostTable,
  timedWorkers,
  type BenchMessage,
  type Cost,
  type CostRow,
} from './_support';

const WORKERS = 8;
const BATCH_SIZE = 100;

interface Sample {
  readonly perSec: number;
  readonly cost: Cost;
}

interface Sides {
  readonly one: (m: BenchMessage) => Promise<void>;
  readonly batch: (ms: readonly BenchMessage[]) => Promise<void>;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The dedup record the inbox writes for a first delivery, as one row of a multi-row insert. */
const RECORD = `(?, ?, ?, 'SUCCEEDED', ?, 1, current_timestamp(6) + interval ? microsecond)`;

/** The transaction of a first delivery, and of a batch, written by hand through knex. */
function byHand(knex: Knex, records: string, effects: string): Sides {
  const insert = (rows: number): string =>
    `insert into ${records} (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
     values ${Array.from({ length: rows }, () => RECORD).join(', ')}`;
  const values = (m: BenchMessage): unknown[] => [
    'default',
    'bench-hand',
    m.id,
    m.hash,
    INBOX_RETENTION_MS * 1000,
  ];
  const effect = `insert into ${effects} (message_id, body_length) values (?, ?)`;
  const bodyLength = (m: BenchMessage): number => String(m.envelope.body).length;
  return {
    one: (m) =>
      knex.transaction(async (trx) => {
        await trx.raw(insert(1), values(m) as Knex.RawBinding[]);
        await trx.raw(effect, [m.id, bodyLength(m)]);
      }),
    batch: (ms) =>
      knex.transaction(async (trx) => {
        const sorted = inKeyOrder(ms);
        await trx.raw(insert(sorted.length), sorted.flatMap(values) as Knex.RawBinding[]);
        for (const m of sorted) await trx.raw(effect, [m.id, bodyLength(m)]);
      }),
  };
}

/** The inbox's `process` and `processBatch`, each outcome checked. */
function throughInbox(store: Store, effects: string, consumer: string): Sides {
  const inbox = createInbox({ store, consumer, retentionMs: INBOX_RETENTION_MS });
  const effect = `insert into ${effects} (message_id, body_length) values (?, ?)`;
  const handler: Handler<void> = async ({ trx, messageId, message }) => {
    await trx.raw(effect, [messageId, message.body.length]);
  };
  return {
    one: async (m) => {
      const outcome = await inbox.process(m.envelope, handler);
      if (outcome.status !== 'processed' && outcome.status !== 'duplicate') {
        throw new Error(`unexpected ${outcome.status}`);
      }
    },
    batch: async (ms) => {
      const outcomes = await inbox.processBatch(
        ms.map((m) => m.envelope),
        handler,
      );
      const bad = outcomes.find((o) => o.status !== 'processed' && o.status !== 'duplicate');
      if (bad !== undefined) throw new Error(`unexpected ${bad.status}`);
    },
  };
}

async function sample<T>(units: readonly T[], count: number, work: (u: T) => Promise<void>) {
  const meter = costMeter();
  const seconds = await timedWorkers(units, WORKERS, work);
  return { perSec: count / seconds, cost: meter(count).cost } satisfies Sample;
}

const redelivered = (m: BenchMessage): BenchMessage => ({
  ...m,
  envelope: { ...m.envelope, delivery: { attempt: 2, redelivered: true, source: 'bench' } },
});

/** Runs the benchmark on the MySQL or MariaDB server at `url`; prints its JSON line last. */
export async function mysqlInboxMain(url: string): Promise<void> {
  const schema = `bench_inbox_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema, pool: { max: WORKERS + 2 } });
  try {
    await store.migrate();
    const { knex, names } = store;
    const effects = names.table('bench_effects');
    await knex.raw(
      `create table ${effects} (message_id varchar(255) not null, body_length integer not null)`,
    );
    const reset = () =>
      knex
        .raw(`delete from ${names.table('inbox_records')}`)
        .then(() => knex.raw(`delete from ${effects}`))
        .then(() => knex.raw(`delete from ${names.table('inbox_attempts')}`));
    const count = Number(process.env.BENCH_INBOX_MESSAGES ?? 2_000);
    const rounds = benchRounds();
    const inbox = throughInbox(store, effects, 'bench-inbox');
    const hand = byHand(knex, names.table('inbox_records'), effects);
    const version = await knex.raw('select version() as v');
    console.log(
      `inbox benchmark on ${String((version as [Array<{ v: string }>])[0][0]?.v)}, ${WORKERS} workers, ` +
        `${rounds} rounds after a warm-up (per-message ${count}, batch ${5 * count} messages per round)`,
    );
    const results: Array<CostRow & { readonly ratios: number[] }> = [];
    const cases: Array<{
      name: string;
      units: (label: string) => { justonce: unknown[]; baseline: unknown[]; count: number };
      run: (side: 'justonce' | 'baseline') => (u: unknown) => Promise<void>;
    }> = [
      {
        name: 'per-message',
        units: (label) => {
          const ms = benchMessages(label, count);
          return { justonce: ms, baseline: benchMessages(`${label}-h`, count), count };
        },
        run: (side) => (u) => (side === 'justonce' ? inbox : hand).one(u as BenchMessage),
      },
      {
        name: 'batch',
        units: (label) => ({
          justonce: chunks(benchMessages(label, 5 * count), BATCH_SIZE),
          baseline: chunks(benchMessages(`${label}-h`, 5 * count), BATCH_SIZE),
          count: 5 * count,
        }),
        run: (side) => (u) => (side === 'justonce' ? inbox : hand).batch(u as BenchMessage[]),
      },
    ];
    for (const c of cases) {
      const measured: { justonce: Sample[]; baseline: Sample[] } = { justonce: [], baseline: [] };
      for (let r = -1; r < rounds; r += 1) {
        const units = c.units(`${c.name}-${r + 1}`);
        const order: Array<'justonce' | 'baseline'> =
          r % 2 === 0 ? ['justonce', 'baseline'] : ['baseline', 'justonce'];
        for (const side of order) {
          await reset();
          const s = await sample(units[side], units.count, c.run(side));
          if (r >= 0) measured[side].push(s);
        }
        if (r >= 0) {
          const j = measured.justonce[r]!;
          const b = measured.baseline[r]!;
          console.log(
            `  ${c.name} round ${r + 1}/${rounds}: inbox ${Math.round(j.perSec)}/s, by hand ${Math.round(b.perSec)}/s`,
          );
        }
      }
      results.push(row(c.name, measured.justonce, measured.baseline));
    }
    results.push(await duplicates(inbox, reset, count, rounds));
    printCostTable(results);
    console.log(
      JSON.stringify({
        bench: 'inbox',
        database: 'mysql',
        results: results.map(({ ratios: _ratios, ...rest }) => rest),
      }),
    );
  } finally {
    await store.knex.raw(`drop database if exists \`${schema}\``).catch(() => undefined);
    await store.close();
  }
}

function row(name: string, justonce: Sample[], baseline: Sample[]): CostRow & { ratios: number[] } {
  const ratios = justonce.map((s, i) => s.perSec / baseline[i]!.perSec);
  return {
    case: name,
    perSec: median(justonce.map((s) => s.perSec)),
    baselinePerSec: median(baseline.map((s) => s.perSec)),
    ratio: Math.round(median(ratios) * 100) / 100,
    cost: medianCost(justonce.map((s) => s.cost)),
    baselineCost: medianCost(baseline.map((s) => s.cost)),
    ratios,
  };
}

/** Per message: first deliveries, then the same messages again as redelivered copies. */
async function duplicates(
  inbox: Sides,
  reset: () => Promise<unknown>,
  count: number,
  rounds: number,
): Promise<CostRow & { ratios: number[] }> {
  const copies: Sample[] = [];
  const firsts: Sample[] = [];
  for (let r = -1; r < rounds; r += 1) {
    await reset();
    const ms = benchMessages(`dup-${r + 1}`, count);
    const first = await sample(ms, count, inbox.one);
    const copy = await sample(ms.map(redelivered), count, inbox.one);
    if (r >= 0) {
      firsts.push(first);
      copies.push(copy);
      console.log(
        `  duplicates round ${r + 1}/${rounds}: first ${Math.round(first.perSec)}/s, copy ${Math.round(copy.perSec)}/s`,
      );
    }
  }
  const result = row('duplicate (redelivered) vs first delivery', copies, firsts);
  return result;
}
