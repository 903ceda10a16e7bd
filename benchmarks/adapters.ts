/**
 * `pnpm bench adapters`: the inbox through each transaction adapter (knex, pg, kysely,
 * drizzle, typeorm) on real PostgreSQL, against the same statements written by hand through
 * the same library, in the same process and the same run.
 *
 * Per library, 8 workers each take the next message from a shared list:
 * - justonce: `inbox.process` with the library's adapter, a first delivery each; the handler
 *   inserts one business row with the library's own API through `ctx.trx`.
 * - by hand: a transaction opened the library's usual way, the claim the inbox issues for a
 *   first delivery (benchmarks/_support.ts, handClaimOne), the same business insert, commit.
 *
 * A warm-up of each side, then BENCH_ROUNDS rounds (default 6) alternating which side goes
 * first; tables are truncated before every side's run. `ratio` is the median of the rounds'
 * ratios. Each run measures what a message cost (_support.ts, costMeter: this process's CPU,
 * PostgreSQL's, and the statements sent; every library here runs on node-postgres, whose
 * `Client.prototype.query` is counted), and after the rounds an untimed pass sorts each side's
 * statements by kind, which is where an adapter's extra cost shows. `BENCH_ADAPTERS_CASES` (comma-separated library
 * names) runs only some; `BENCH_ADAPTERS_COUNT` sets the messages per run (default 2 000).
 * `BENCH_ADAPTERS_PROFILE=<library>:<inbox|hand>` runs that one side alone, BENCH_ROUNDS
 * times, and prints no comparison: for a CPU profile of one side (`node --cpu-prof`).
 */
import { randomBytes } from 'node:crypto';
import createKnex from 'knex';
import { Pool } from 'pg';
import {
  createInbox,
  createStore,
  knexTransactions,
  rowsOf,
  type Store,
  type TransactionAdapter,
} from '@justonce/core';
import { drizzleTransactions } from '@justonce/core/drizzle';
import { kyselyTransactions } from '@justonce/core/kysely';
import { pgTransactions } from '@justonce/core/pg';
import { typeormTransactions } from '@justonce/core/typeorm';
import * as drizzleOrm from 'drizzle-orm';
import * as drizzleNodePg from 'drizzle-orm/node-postgres';
import * as drizzlePgCore from 'drizzle-orm/pg-core';
import * as kysely from 'kysely';
import * as typeorm from 'typeorm';
import {
  benchMessages,
  benchRounds,
  type BenchMessage,
  timedWorkers,
  claimOneText,
  costCells,
  costHeads,
  costMeter,
  handClaimOne,
  INBOX_RETENTION_MS,
  measureCase,
  onStatement,
  printTable as printRows,
  wantedCases,
  type CaseResult,
  type Run,
} from './_support';

const WORKERS = 8;
const COUNT = Number(process.env.BENCH_ADAPTERS_COUNT ?? 2_000);
const TARGET = 0.95;
const ROWS = 'bench_rows';

type Message = BenchMessage;

/** The business row both sides insert for a message. */
interface Row {
  message_id: string;
  body_length: number;
}

const rowOf = (m: Message): Row => ({ message_id: m.id, body_length: m.envelope.body.length });

/** One library's two sides, each handling one message in its own transaction. */
interface Sides {
  readonly inbox: (m: Message) => Promise<void>;
  readonly hand: (m: Message) => Promise<void>;
  readonly close: () => Promise<void>;
}

/** What every library's sides are built from. */
interface Context {
  readonly url: string;
  readonly store: Store;
  /** Quoted names of the inbox's dedup table and the business table. */
  readonly inboxRecords: string;
  readonly rows: string;
  readonly schema: string;
}

/** The values of handClaimOne's claim, for the libraries that bind `$n` ({@link claimOneText}). */
const claimValues = (m: Message) => ['hand', m.id, m.hash, INBOX_RETENTION_MS];

/** The inbox side on `adapter`: process one message with `insert` as the handler's write. */
function inboxSide<Tx>(
  ctx: Context,
  adapter: TransactionAdapter<Tx>,
  insert: (trx: Tx, row: Row) => Promise<unknown>,
): (m: Message) => Promise<void> {
  const inbox = createInbox({
    store: ctx.store,
    consumer: 'inbox',
    transactions: adapter,
    retentionMs: INBOX_RETENTION_MS,
  });
  return async (m) => {
    const outcome = await inbox.process(m.envelope, async ({ trx }) => {
      await insert(trx, rowOf(m));
    });
    if (outcome.status !== 'processed') throw new Error(`unexpected ${outcome.status}`);
  };
}

const pool = (ctx: Context) => new Pool({ connectionString: ctx.url, max: WORKERS + 2 });

const LIBRARIES: Record<string, (ctx: Context) => Promise<Sides>> = {
  async knex(ctx) {
    const knex = createKnex({
      client: 'pg',
      connection: ctx.url,
      pool: { min: 0, max: WORKERS + 2 },
    });
    const table = () => knex.withSchema(ctx.schema).table(ROWS);
    return {
      inbox: inboxSide(ctx, knexTransactions(knex), (trx, row) =>
        trx.withSchema(ctx.schema).table(ROWS).insert(row),
      ),
      hand: (m) =>
        knex.transaction(async (trx) => {
          if (await handClaimOne(trx, ctx.inboxRecords, 'hand', INBOX_RETENTION_MS, m)) {
            await table().transacting(trx).insert(rowOf(m));
          }
        }),
      close: () => knex.destroy(),
    };
  },

  async pg(ctx) {
    const clients = pool(ctx);
    const insert = `insert into ${ctx.rows} (message_id, body_length) values ($1, $2)`;
    return {
      inbox: inboxSide(ctx, pgTransactions(clients), (client, row) =>
        client.query(insert, [row.message_id, row.body_length]),
      ),
      async hand(m) {
        const client = await clients.connect();
        try {
          await client.query('BEGIN');
          const claimed = await client.query(claimOneText(ctx.inboxRecords), claimValues(m));
          if (claimed.rows.length === 1) await client.query(insert, [m.id, m.envelope.body.length]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => clients.end(),
    };
  },

  async kysely(ctx) {
    const { Kysely, PostgresDialect, sql } = kysely;
    const db = new Kysely<{ [ROWS]: Row }>({
      dialect: new PostgresDialect({ pool: pool(ctx) }),
    }).withSchema(ctx.schema);
    const claim = (m: Message) =>
      sql`insert into ${sql.raw(ctx.inboxRecords)}
            (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
          values ('default', ${'hand'}, ${m.id}, 'SUCCEEDED', ${m.hash}, 1,
                  now() + ${INBOX_RETENTION_MS}::double precision * interval '1 millisecond')
          on conflict (consumer, scope, message_id) do nothing returning scope, message_id`;
    return {
      inbox: inboxSide(ctx, kyselyTransactions(db), (trx, row) =>
        trx.insertInto(ROWS).values(row).execute(),
      ),
      hand: (m) =>
        db.transaction().execute(async (trx) => {
          const claimed = await claim(m).execute(trx);
          if (claimed.rows.length === 1) await trx.insertInto(ROWS).values(rowOf(m)).execute();
        }),
      close: () => db.destroy(),
    };
  },

  async drizzle(ctx) {
    const { sql } = drizzleOrm;
    const { integer, pgSchema, text } = drizzlePgCore;
    const clients = pool(ctx);
    const db = drizzleNodePg.drizzle(clients);
    const rows = pgSchema(ctx.schema).table(ROWS, {
      message_id: text('message_id').notNull(),
      body_length: integer('body_length').notNull(),
    });
    const claim = (m: Message) =>
      sql`insert into ${sql.raw(ctx.inboxRecords)}
            (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
          values ('default', ${'hand'}, ${m.id}, 'SUCCEEDED', ${m.hash}, 1,
                  now() + ${INBOX_RETENTION_MS}::double precision * interval '1 millisecond')
          on conflict (consumer, scope, message_id) do nothing returning scope, message_id`;
    return {
      inbox: inboxSide(ctx, drizzleTransactions(db), (tx, row) => tx.insert(rows).values(row)),
      hand: (m) =>
        db.transaction(async (tx) => {
          const claimed = await tx.execute(claim(m));
          if (claimed.rows.length === 1) await tx.insert(rows).values(rowOf(m));
        }),
      close: () => clients.end(),
    };
  },

  async typeorm(ctx) {
    const { DataSource, EntitySchema } = typeorm;
    const RowEntity = new EntitySchema<Row>({
      name: 'BenchRow',
      tableName: ROWS,
      schema: ctx.schema,
      columns: {
        message_id: { type: 'text', primary: true },
        body_length: { type: 'integer' },
      },
    });
    const dataSource = await new DataSource({
      type: 'postgres',
      url: ctx.url,
      entities: [RowEntity],
      poolSize: WORKERS + 2,
    }).initialize();
    return {
      inbox: inboxSide(ctx, typeormTransactions(dataSource), (manager, row) =>
        manager.getRepository(RowEntity).insert(row),
      ),
      hand: (m) =>
        dataSource.transaction(async (manager) => {
          const claimed: unknown[] = await manager.query(
            claimOneText(ctx.inboxRecords),
            claimValues(m),
          );
          if (claimed.length === 1) await manager.getRepository(RowEntity).insert(rowOf(m));
        }),
      close: () => dataSource.destroy(),
    };
  },
};

/** Runs `work` on every unit with {@link WORKERS} workers; resolves to the elapsed seconds. */
function timed<T>(units: readonly T[], work: (unit: T) => Promise<void>): Promise<number> {
  return timedWorkers(units, WORKERS, work);
}

/** Statements node-postgres sent while counting, by kind. */
const sent = new Map<string, number>();

/** What a statement is, for the per-message breakdown. */
function kindOf(text: string): string {
  const t = text.trim().toLowerCase();
  if (/^(begin|start transaction)/.test(t)) return 'begin';
  if (t.startsWith('commit')) return 'commit';
  if (t.startsWith('rollback')) return 'rollback';
  if (t.includes('inbox_records')) return 'claim';
  if (t.includes(ROWS)) return 'business insert';
  if (t === 'select 1') return 'probe (select 1)';
  return t.replace(/\s+/g, ' ').slice(0, 40);
}

/** Statements per message of one side, by kind, over an untimed pass of `units`. */
async function statementsPerMessage(
  units: readonly Message[],
  side: (m: Message) => Promise<void>,
): Promise<Record<string, number>> {
  sent.clear();
  // Every library here runs on node-postgres, whose statements the shared counter sees.
  const off = onStatement((text) => {
    const kind = kindOf(text);
    sent.set(kind, (sent.get(kind) ?? 0) + 1);
  });
  try {
    await timed(units, side);
  } finally {
    off();
  }
  const per: Record<string, number> = {};
  let total = 0;
  for (const [kind, n] of [...sent].sort()) {
    per[kind] = Math.round((n / units.length) * 100) / 100;
    total += n;
  }
  return { ...per, total: Math.round((total / units.length) * 100) / 100 };
}

interface AdapterResult extends CaseResult {
  readonly target: number;
  readonly statementsPerMessage: Record<string, number>;
  readonly baselineStatementsPerMessage: Record<string, number>;
}

function printTable(results: readonly AdapterResult[]): void {
  printRows(
    ['adapter', 'inbox /s', 'by hand /s', 'ratio', ...costHeads('msg')],
    results.map((r) => [
      r.case,
      String(r.perSec),
      String(r.baselinePerSec),
      `${r.ratio}${r.ratio >= r.target ? '' : ' (MISSED)'}`,
      ...costCells(r.cost, r.baselineCost),
    ]),
  );
  for (const r of results) {
    const extra = Object.entries(r.statementsPerMessage).filter(
      ([kind, n]) => kind !== 'total' && n !== (r.baselineStatementsPerMessage[kind] ?? 0),
    );
    if (extra.length > 0) {
      const list = extra.map(([kind, n]) => `${kind} ${n}`).join(', ');
      console.log(`${r.case}: the inbox's statements that differ from the hand side: ${list}`);
    }
  }
}

/** Runs one side of one library alone, `rounds` times (see BENCH_ADAPTERS_PROFILE). */
async function profileOne(
  ctx: Context,
  which: string,
  rounds: number,
  run: (side: (m: Message) => Promise<void>) => () => Promise<Run>,
): Promise<void> {
  const [name = '', side] = which.split(':');
  const open = LIBRARIES[name];
  if (open === undefined || (side !== 'inbox' && side !== 'hand')) {
    throw new Error('BENCH_ADAPTERS_PROFILE must be <library>:<inbox|hand>');
  }
  const sides = await open(ctx);
  try {
    for (let round = 0; round < rounds; round += 1) {
      const { perSec, cost } = await run(sides[side])();
      console.log(
        `${which} run ${round + 1}: ${Math.round(perSec)}/s, node CPU ` +
          `${cost?.nodeCpuUs ?? 'n/a'} µs/message`,
      );
    }
  } finally {
    await sides.close();
  }
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const rounds = benchRounds();
  const schema = `bench_adapters_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema, pool: { max: WORKERS + 2 } });
  try {
    await store.migrate();
    const { names, knex } = store;
    const ctx: Context = {
      url,
      store,
      schema,
      inboxRecords: names.table('inbox_records'),
      rows: names.table(ROWS),
    };
    await knex.raw(
      `create table ${ctx.rows} (message_id text not null, body_length integer not null)`,
    );
    const reset = () =>
      knex.raw(`truncate ${ctx.inboxRecords}, ${names.table('inbox_attempts')}, ${ctx.rows}`);
    const all = benchMessages('adapters', COUNT);
    const run = (side: (m: Message) => Promise<void>) => async (): Promise<Run> => {
      await reset();
      const cpu = costMeter();
      const seconds = await timed(all, side);
      const used = cpu(COUNT);
      const [row] = rowsOf<{ n: string }>(await knex.raw(`select count(*) as n from ${ctx.rows}`));
      if (Number(row?.n) !== COUNT) throw new Error(`${row?.n} rows, expected ${COUNT}`);
      return { perSec: COUNT / seconds, ...used };
    };

    console.log(
      `adapters benchmark on PostgreSQL, ${WORKERS} workers, ${rounds} rounds after a warm-up ` +
        `(${COUNT} messages per run, one transaction each)`,
    );
    const profiled = process.env.BENCH_ADAPTERS_PROFILE;
    if (profiled !== undefined) {
      await profileOne(ctx, profiled, rounds, run);
      return;
    }
    const wanted = wantedCases('BENCH_ADAPTERS_CASES');
    const results: AdapterResult[] = [];
    for (const [name, open] of Object.entries(LIBRARIES)) {
      if (!wanted(name)) continue;
      const sides = await open(ctx);
      try {
        const result = await measureCase(name, rounds, run(sides.inbox), run(sides.hand));
        const pass = all.slice(0, 200);
        await reset();
        const statements = await statementsPerMessage(pass, sides.inbox);
        await reset();
        const baselineStatements = await statementsPerMessage(pass, sides.hand);
        results.push({
          ...result,
          target: TARGET,
          statementsPerMessage: statements,
          baselineStatementsPerMessage: baselineStatements,
        });
      } finally {
        await sides.close();
      }
    }
    printTable(results);
    console.log(JSON.stringify({ bench: 'adapters', results }));
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
  }
}
