/**
 * `pnpm bench inbox`: the inbox on real PostgreSQL against the same SQL statements written by
 * hand, through knex and through raw node-postgres, and against pgbench running the same
 * statements, in the same process and the same run.
 *
 * Cases (every one with 8 workers, each taking the next unit of work from a shared list):
 * - per-message: `inbox.process` per delivery, beside the transaction the inbox issues for a
 *   first delivery (the claim, the business insert, commit) written by hand in a knex
 *   transaction, and the same with node-postgres (a pooled client, named prepared statements,
 *   no knex), and on postgres.js (a driver that pipelines; see pgjsTransactions); pgbench's
 *   limit runs the same statements with 8 clients. The inbox runs twice: on its default
 *   knex transactions, and on the `pg` transaction adapter (`@justonce/core/pg`).
 * - batch: `inbox.processBatch` of 100 per transaction, beside the transaction the inbox
 *   issues for a batch (one multi-row claim, the business inserts, commit) by hand through
 *   knex and through node-postgres; pgbench's limit runs it with 4 clients, the claim's rows
 *   from `generate_series` rather than from arrays sent by the client.
 * - batch vs per-message: the inbox's batch throughput over its per-message throughput.
 * - duplicates: per message and in batches of 100, the inbox handles N first deliveries, then
 *   the same N again as each kind of copy a broker delivers (see {@link COPIES}): every copy
 *   is a duplicate of a record committed as handled. Each round is measured after emptying
 *   the tables, the first deliveries and then each kind of copy; a copy's ratio is the median
 *   over the rounds of its rate over the same round's first deliveries. Besides the CPU and
 *   the statements, it reports the rows written per message (pg_stat_user_tables, in the
 *   bench's schema: _support.ts, rowsWritten).
 *
 * Each case: a warm-up of the node sides, then BENCH_ROUNDS rounds (default 6), the sides in
 * one order and then the reverse (inbox, knex, pg, postgres.js, pgbench); tables are truncated before every
 * side. Rates are medians over the rounds; each ratio is the median of the rounds' ratios
 * (the sides of a round run back to back, so drift in the machine's load cancels out). Every
 * side also reports its cost per message (_support.ts, costMeter): this process's CPU,
 * PostgreSQL's CPU, and the statements sent (for pgbench: its script's SQL commands).
 * BENCH_INBOX_MESSAGES sets the per-message case's messages per round (default 2 000; the
 * batch case takes five times as many), BENCH_PGBENCH_SECONDS each pgbench run's length
 * (default 5), BENCH_INBOX_CASES a comma-separated subset of per-message, batch and
 * duplicates (default all; batch vs per-message needs both). The last line printed is the
 * JSON result. With a `mysql://` or `mariadb://` DATABASE_URL it runs the MySQL benchmark of
 * `_inbox-mysql.ts` instead.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Pool, type PoolClient } from 'pg';
import postgres from 'postgres';
import {
  createInbox,
  createStore,
  rowsOf,
  type DeliveryFacts,
  type Envelope,
  type Handler,
  type Inbox,
  type Store,
} from '@justonce/core';
import { pgTransactions as pgAdapter } from '@justonce/core/pg';
import { mysqlInboxMain } from './_inbox-mysql';
import {
  medianPgbenchCost,
  pgbenchCommand,
  pgbenchVersion,
  runPgbench,
  type PgbenchCost,
  type PgbenchScript,
} from './_pgbench';
import {
  benchMessages,
  benchRounds,
  type BenchMessage,
  claimBatchText,
  claimOneText,
  costCells,
  costHeads,
  costLine,
  costMeter,
  handClaim,
  handClaimOne,
  INBOX_RETENTION_MS,
  inKeyOrder,
  knexPlaceholders,
  median,
  medianCost,
  printTable,
  timedWorkers,
  rowsWritten,
  wantedCases,
  type Cost,
} from './_support';

const WORKERS = 8;
/** The store's pool: the workers and two more. */
const POOL_MAX = WORKERS + 2;
const BATCH_SIZE = 100;
/** pgbench's clients: one per worker for messages, four for batches. */
const PGBENCH_CLIENTS = { message: WORKERS, batch: 4 };

type Message = BenchMessage;

/** The node sides of a case, each handling every message once. */
interface Sides {
  readonly inbox: () => Promise<void>;
  /** The inbox on the `pg` transaction adapter: no knex in the message's transaction. */
  readonly inboxPg: () => Promise<void>;
  readonly knex: () => Promise<void>;
  readonly pg: () => Promise<void>;
  readonly pgjs: () => Promise<void>;
}
type NodeSide = keyof Sides;
const NODE_SIDES: readonly NodeSide[] = ['inbox', 'inboxPg', 'knex', 'pg', 'pgjs'];

/** A node side's figures for one round. */
interface Sample {
  readonly perSec: number;
  readonly cost: Cost;
}

/** pgbench's figures for one round. */
interface PgbenchSample {
  readonly perSec: number;
  readonly cost: PgbenchCost;
}

/** Every round of a case. */
interface Measured {
  readonly samples: Record<NodeSide, Sample[]>;
  /** Empty when pgbench is not installed. */
  readonly pgbench: PgbenchSample[];
}

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `work` on every unit with {@link WORKERS} workers; resolves to the elapsed seconds. */
function timed<T>(units: readonly T[], work: (unit: T) => Promise<void>): Promise<number> {
  return timedWorkers(units, WORKERS, work);
}

/** Runs `work` in a transaction on a client of `pool`, as a service on node-postgres would. */
async function pgTransaction(pool: Pool, work: (client: PoolClient) => Promise<void>) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
    client.release();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release(true);
    throw error;
  }
}

/** The tables and statements both hand-written sides and pgbench share. */
interface Sql {
  readonly inboxRecords: string;
  readonly effects: string;
  /** The handler's business insert: $1 the message id, $2 the body's length. */
  readonly effect: string;
}

/**
 * pgbench's scripts of the hand-written transactions: for a message (the claim, the business
 * insert) and for a batch of {@link BATCH_SIZE} (one multi-row claim of keys `base + g`, then
 * the business insert of each), each between BEGIN and COMMIT. Keys are random in a range
 * wide enough that a conflict is rare; a claim that conflicted still inserts its effect.
 */
function pgbenchScripts(sql: Sql): { message: PgbenchScript; batch: PgbenchScript } {
  const claimBatch =
    `insert into ${sql.inboxRecords} ` +
    '(scope, consumer, message_id, status, fingerprint, attempts, expires_at) ' +
    "select 'default', :operation, (:base::bigint + g)::text, 'SUCCEEDED', :hash, 1, " +
    "now() + :retention::double precision * interval '1 millisecond' " +
    `from generate_series(0, ${BATCH_SIZE - 1}) as g order by g ` +
    'on conflict (consumer, scope, message_id) do nothing returning message_id';
  const keys = Array.from({ length: BATCH_SIZE }, (_, i) => i);
  return {
    message: {
      messagesPerTransaction: 1,
      lines: [
        '\\set key random(1, 1000000000000)',
        'BEGIN;',
        `${pgbenchCommand(claimOneText(sql.inboxRecords), ['operation', 'key', 'hash', 'retention'])};`,
        `${pgbenchCommand(sql.effect, ['key', 'length'])};`,
        'COMMIT;',
      ],
    },
    batch: {
      messagesPerTransaction: BATCH_SIZE,
      lines: [
        `\\set base ${BATCH_SIZE} * random(0, 10000000000)`,
        ...keys.map((i) => `\\set k${i} :base + ${i}`),
        'BEGIN;',
        `${claimBatch};`,
        ...keys.map((i) => `${pgbenchCommand(sql.effect, [`k${i}`, 'length'])};`),
        'COMMIT;',
      ],
    },
  };
}

/** What the parts of the benchmark share. */
interface Bench {
  readonly url: string;
  readonly store: Store;
  readonly pool: Pool;
  /** postgres.js, for the side that pipelines. */
  readonly pgjs: postgres.Sql;
  readonly sql: Sql;
  readonly rounds: number;
  /** pgbench's version, or null when it is not installed. */
  readonly pgbench: string | null;
  readonly pgbenchSeconds: number;
  /** Empties the tables every side writes. */
  reset(): Promise<void>;
  /** The business rows written since the last reset. */
  effects(): Promise<number>;
}

/** One message or one batch, handled in one transaction. */
interface Transactions {
  readonly one: (m: Message) => Promise<void>;
  readonly batch: (batch: readonly Message[]) => Promise<void>;
}

/** The inbox: `process` per message, `processBatch` per batch, the handler's insert. */
function inboxTransactions(b: Bench): Transactions {
  const inbox = createInbox({
    store: b.store,
    consumer: 'bench-inbox',
    retentionMs: INBOX_RETENTION_MS,
  });
  const insertEffect = knexPlaceholders(b.sql.effect);
  const handler: Handler<void> = async ({ trx, messageId, message }) => {
    await trx.raw(insertEffect, [messageId, message.body.length]);
  };
  return inboxCalls(inbox, handler);
}

/**
 * The inbox on the `pg` transaction adapter (`@justonce/core/pg`, on its own pool): the
 * message's transaction is a node-postgres client, and the handler's insert a named
 * prepared statement on it, as on the pg side by hand.
 */
function inboxPgTransactions(b: Bench): Transactions {
  const inbox = createInbox({
    store: b.store,
    consumer: 'bench-inbox-pg',
    transactions: pgAdapter(b.pool),
    retentionMs: INBOX_RETENTION_MS,
  });
  const handler: Handler<void, PoolClient> = async ({ trx, messageId, message }) => {
    await trx.query({
      name: 'bench-effect',
      text: b.sql.effect,
      values: [messageId, message.body.length],
    });
  };
  return inboxCalls(inbox, handler);
}

/** `process` per message and `processBatch` per batch of `inbox`, each checked. */
function inboxCalls<Tx>(inbox: Inbox<Tx>, handler: Handler<void, Tx>): Transactions {
  return {
    one: async (m) => {
      const outcome = await inbox.process(m.envelope, handler);
      if (outcome.status !== 'processed') throw new Error(`unexpected ${outcome.status}`);
    },
    batch: async (batch) => {
      const outcomes = await inbox.processBatch(
        batch.map((m) => m.envelope),
        handler,
      );
      if (outcomes.some((o) => o.status !== 'processed')) throw new Error('batch not processed');
    },
  };
}

/**
 * The inbox's statements by hand in knex transactions: for a first delivery (inbox/sql/
 * claim-messages.ts, claimMessage) the claim, the handler's insert, commit (a first delivery
 * skips the attempt-counting statement, and so has no counter to clear); for a batch of first
 * deliveries the multi-row claim (handClaim), the handlers' inserts, commit.
 */
function knexTransactions(b: Bench): Transactions {
  const { knex } = b.store;
  const { inboxRecords } = b.sql;
  const insertEffect = knexPlaceholders(b.sql.effect);
  return {
    one: async (m) => {
      await knex.transaction(async (trx) => {
        if (await handClaimOne(trx, inboxRecords, 'bench-knex', INBOX_RETENTION_MS, m)) {
          await trx.raw(insertEffect, [m.id, m.envelope.body.length]);
        }
      });
    },
    batch: async (batch) => {
      await knex.transaction(async (trx: Knex.Transaction) => {
        const claimed = await handClaim(trx, inboxRecords, 'bench-knex', INBOX_RETENTION_MS, batch);
        for (const m of batch.filter((m) => claimed.has(m.id))) {
          await trx.raw(insertEffect, [m.id, m.envelope.body.length]);
        }
      });
    },
  };
}

/**
 * The same transactions as {@link knexTransactions} on node-postgres, as named prepared
 * statements (each connection parses and plans them once), no knex.
 */
function pgTransactions(b: Bench): Transactions {
  const claimOne = claimOneText(b.sql.inboxRecords);
  const claimBatch = claimBatchText(b.sql.inboxRecords);
  const effect = (client: PoolClient, m: Message) =>
    client.query({
      name: 'bench-effect',
      text: b.sql.effect,
      values: [m.id, m.envelope.body.length],
    });
  return {
    one: (m) =>
      pgTransaction(b.pool, async (client) => {
        const claimed = await client.query({
          name: 'bench-claim-one',
          text: claimOne,
          values: ['bench-pg', m.id, m.hash, INBOX_RETENTION_MS],
        });
        if (claimed.rows.length === 1) await effect(client, m);
      }),
    batch: (batch) =>
      pgTransaction(b.pool, async (client) => {
        const sorted = inKeyOrder(batch);
        const claimed = await client.query<{ message_id: string }>({
          name: 'bench-claim-batch',
          text: claimBatch,
          values: [
            'bench-pg',
            INBOX_RETENTION_MS,
            sorted.map(() => 'default'),
            sorted.map((m) => m.id),
            sorted.map((m) => m.hash),
            sorted.map(() => 1),
          ],
        });
        const isNew = new Set(claimed.rows.map((r) => r.message_id));
        for (const m of batch) if (isNew.has(m.id)) await effect(client, m);
      }),
  };
}

/**
 * The same transactions on postgres.js, a driver that pipelines: statements sent without
 * waiting share round trips. Per message nothing can be sent early (the business insert
 * waits for the claim's answer, and postgres.js waits for `BEGIN` before running the
 * callback); per batch, the business inserts of the claimed messages go out together,
 * which node-postgres cannot do. Statements are prepared (postgres.js's default). Its
 * statements do not pass node-postgres, so its statement count reads 0.
 */
function pgjsTransactions(b: Bench): Transactions {
  const claimOne = claimOneText(b.sql.inboxRecords);
  const claimBatch = claimBatchText(b.sql.inboxRecords);
  const sql = b.pgjs;
  return {
    one: async (m) => {
      await sql.begin(async (tx) => {
        const claimed = await tx.unsafe(claimOne, ['bench-pgjs', m.id, m.hash, INBOX_RETENTION_MS]);
        if (claimed.length === 1) {
          await tx.unsafe(b.sql.effect, [m.id, m.envelope.body.length]);
        }
      });
    },
    batch: async (batch) => {
      await sql.begin(async (tx) => {
        const sorted = inKeyOrder(batch);
        const claimed = await tx.unsafe<Array<{ message_id: string }>>(claimBatch, [
          'bench-pgjs',
          INBOX_RETENTION_MS,
          sorted.map(() => 'default'),
          sorted.map((m) => m.id),
          sorted.map((m) => m.hash),
          sorted.map(() => 1),
        ]);
        const isNew = new Set(claimed.map((r) => r.message_id));
        await Promise.all(
          batch
            .filter((m) => isNew.has(m.id))
            .map((m) => tx.unsafe(b.sql.effect, [m.id, m.envelope.body.length])),
        );
      });
    },
  };
}

/** One pgbench run of `script` on emptied tables, checked against the rows it left. */
async function pgbenchSample(
  b: Bench,
  script: PgbenchScript,
  clients: number,
): Promise<PgbenchSample> {
  const sample = benchMessages('pgbench', 1)[0]!;
  await b.reset();
  const result = await runPgbench(b.url, script, {
    clients,
    seconds: b.pgbenchSeconds,
    variables: {
      operation: 'bench-pgbench',
      hash: sample.hash,
      retention: INBOX_RETENTION_MS,
      length: sample.envelope.body.length,
    },
  });
  const rows = await b.effects();
  if (rows !== result.messages) {
    throw new Error(`pgbench: ${rows} effects, expected ${result.messages}`);
  }
  return { perSec: result.perSec, cost: result.cost };
}

/** One node side's run over every message, on emptied tables, with its cost. */
async function nodeSample(b: Bench, label: string, count: number, run: () => Promise<void>) {
  await b.reset();
  const meter = costMeter();
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  const sample: Sample = { perSec: count / seconds, cost: meter(count).cost };
  const rows = await b.effects();
  if (rows !== count) throw new Error(`${label}: ${rows} effects, expected ${count}`);
  return sample;
}

/**
 * A case: a warm-up of the node sides, then `b.rounds` rounds, inbox, knex, pg, pgbench in
 * one round and the reverse in the next. `sides` builds the node sides over a list.
 */
async function measure(
  b: Bench,
  label: string,
  count: number,
  sides: (msgs: readonly Message[]) => Sides,
  limit: { script: PgbenchScript; clients: number },
): Promise<Measured> {
  const warm = sides(benchMessages(`${label}-warm`, Math.min(count, 1_000)));
  for (const side of NODE_SIDES) {
    await b.reset();
    await warm[side]();
  }
  const measured: Measured = {
    samples: { inbox: [], inboxPg: [], knex: [], pg: [], pgjs: [] },
    pgbench: [],
  };
  const run = sides(benchMessages(label, count));
  const order: Array<NodeSide | 'pgbench'> = [...NODE_SIDES];
  if (b.pgbench !== null) order.push('pgbench');
  for (let r = 0; r < b.rounds; r += 1) {
    for (const side of r % 2 === 0 ? order : [...order].reverse()) {
      if (side === 'pgbench') {
        measured.pgbench.push(await pgbenchSample(b, limit.script, limit.clients));
      } else {
        measured.samples[side].push(await nodeSample(b, `${label} ${side}`, count, run[side]));
      }
    }
    const rate = (s: { perSec: number } | undefined): string => `${Math.round(s?.perSec ?? 0)}/s`;
    const { inbox, inboxPg, knex, pg, pgjs } = measured.samples;
    console.log(
      `  ${label} round ${r + 1}/${b.rounds}: inbox ${rate(inbox[r])}, ` +
        `inbox on pg ${rate(inboxPg[r])}, knex ${rate(knex[r])}, ` +
        `pg ${rate(pg[r])}, postgres.js ${rate(pgjs[r])}` +
        (b.pgbench === null ? '' : `, pgbench ${rate(measured.pgbench[r])}`),
    );
  }
  return measured;
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (/^(mysql|mariadb):\/\//.test(url)) return mysqlInboxMain(url);
  const schema = `bench_inbox_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema, pool: { max: POOL_MAX } });
  const pool = new Pool({ connectionString: url, max: WORKERS });
  const pgjs = postgres(url, { max: WORKERS, onnotice: () => undefined });
  try {
    await store.migrate();
    const { names, knex } = store;
    const effects = names.table('bench_effects');
    const sql: Sql = {
      inboxRecords: names.table('inbox_records'),
      effects,
      effect: `insert into ${effects} (message_id, body_length) values ($1, $2)`,
    };
    await knex.raw(
      `create table ${effects} (message_id text not null, body_length integer not null)`,
    );
    const b: Bench = {
      url,
      store,
      pool,
      pgjs,
      sql,
      rounds: benchRounds(),
      pgbench: await pgbenchVersion(),
      pgbenchSeconds: positive('BENCH_PGBENCH_SECONDS', 5),
      reset: async () => {
        await knex.raw(
          `truncate ${sql.inboxRecords}, ${names.table('inbox_attempts')}, ${effects}`,
        );
      },
      effects: async () => {
        const [row] = rowsOf<{ n: string }>(await knex.raw(`select count(*) as n from ${effects}`));
        return Number(row?.n);
      },
    };
    const perMessageCount = positive('BENCH_INBOX_MESSAGES', 2_000);
    const batchCount = 5 * perMessageCount;
    const tx = {
      inbox: inboxTransactions(b),
      inboxPg: inboxPgTransactions(b),
      knex: knexTransactions(b),
      pg: pgTransactions(b),
      pgjs: pgjsTransactions(b),
    };
    const perMessage = (msgs: readonly Message[]): Sides => ({
      inbox: async () => void (await timed(msgs, tx.inbox.one)),
      inboxPg: async () => void (await timed(msgs, tx.inboxPg.one)),
      knex: async () => void (await timed(msgs, tx.knex.one)),
      pg: async () => void (await timed(msgs, tx.pg.one)),
      pgjs: async () => void (await timed(msgs, tx.pgjs.one)),
    });
    const batched = (msgs: readonly Message[]): Sides => {
      const batches = chunks(msgs, BATCH_SIZE);
      return {
        inbox: async () => void (await timed(batches, tx.inbox.batch)),
        inboxPg: async () => void (await timed(batches, tx.inboxPg.batch)),
        knex: async () => void (await timed(batches, tx.knex.batch)),
        pg: async () => void (await timed(batches, tx.pg.batch)),
        pgjs: async () => void (await timed(batches, tx.pgjs.batch)),
      };
    };
    const scripts = pgbenchScripts(sql);

    const wanted = wantedCases('BENCH_INBOX_CASES');
    console.log(
      `inbox benchmark on PostgreSQL, ${WORKERS} workers, ${b.rounds} rounds after a warm-up ` +
        `(per-message ${perMessageCount}, batch ${batchCount} messages per round); ` +
        (b.pgbench
          ? `pgbench limit: ${b.pgbench}, ${b.pgbenchSeconds} s a run`
          : 'pgbench not found: no limit measured'),
    );
    const one = wanted('per-message')
      ? await measure(b, 'per-message', perMessageCount, perMessage, {
          script: scripts.message,
          clients: PGBENCH_CLIENTS.message,
        })
      : undefined;
    const many = wanted('batch')
      ? await measure(b, 'batch', batchCount, batched, {
          script: scripts.batch,
          clients: PGBENCH_CLIENTS.batch,
        })
      : undefined;
    const results: object[] = [];
    const summaries = [
      ...(one ? [summarize(`per-message (${WORKERS} concurrent) vs hand-written SQL`, one)] : []),
      ...(many
        ? [
            summarize(
              `batch (${BATCH_SIZE} per transaction, ${WORKERS} concurrent) vs hand-written SQL`,
              many,
            ),
          ]
        : []),
    ];
    results.push(...summaries);
    let batchVsOne: BatchVsOne | undefined;
    if (one && many) {
      batchVsOne = {
        case: 'batch vs per-message (inbox both)',
        perSec: Math.round(perSec(many.samples.inbox)),
        baselinePerSec: Math.round(perSec(one.samples.inbox)),
        ratio: round2(perSec(many.samples.inbox) / perSec(one.samples.inbox)),
        target: 5,
        cost: medianCost(many.samples.inbox.map((s) => s.cost)),
        baselineCost: medianCost(one.samples.inbox.map((s) => s.cost)),
      };
      results.push(batchVsOne);
    }
    printResults(summaries, batchVsOne);
    if (wanted('duplicates')) {
      for (const mode of ['message', 'batch'] as const) {
        const count = mode === 'message' ? perMessageCount : batchCount;
        results.push(...(await measureDuplicates(b, schema, mode, count)));
      }
    }
    console.log(JSON.stringify({ bench: 'inbox', results }));
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
    await pool.end();
    await pgjs.end();
  }
}

/** The inbox's batch case over its per-message case. */
interface BatchVsOne {
  readonly case: string;
  readonly perSec: number;
  readonly baselinePerSec: number;
  readonly ratio: number;
  readonly target: number;
  readonly cost: Cost;
  readonly baselineCost: Cost;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const perSec = (samples: ReadonlyArray<{ perSec: number }>): number =>
  median(samples.map((s) => s.perSec));
/** The median of the per-round ratios: each round's sides ran back to back. */
const pairedRatio = (
  a: ReadonlyArray<{ perSec: number }>,
  b: ReadonlyArray<{ perSec: number }>,
): number => round2(median(a.map((s, i) => s.perSec / b[i]!.perSec)));

/** A case's JSON: the inbox against knex by hand (the target's ratio), pg by hand, pgbench. */
function summarize(name: string, m: Measured) {
  const { inbox, inboxPg, knex, pg, pgjs } = m.samples;
  return {
    case: name,
    perSec: Math.round(perSec(inbox)),
    baselinePerSec: Math.round(perSec(knex)),
    ratio: pairedRatio(inbox, knex),
    target: 0.9,
    cost: medianCost(inbox.map((s) => s.cost)),
    baselineCost: medianCost(knex.map((s) => s.cost)),
    rawPgPerSec: Math.round(perSec(pg)),
    rawPgCost: medianCost(pg.map((s) => s.cost)),
    ratioToRawPg: pairedRatio(inbox, pg),
    inboxPgPerSec: Math.round(perSec(inboxPg)),
    inboxPgCost: medianCost(inboxPg.map((s) => s.cost)),
    inboxPgToRawPg: pairedRatio(inboxPg, pg),
    postgresJsPerSec: Math.round(perSec(pgjs)),
    postgresJsCost: medianCost(pgjs.map((s) => s.cost)),
    postgresJsToRawPg: pairedRatio(pgjs, pg),
    ...(m.pgbench.length === 0
      ? {}
      : {
          pgbenchPerSec: Math.round(perSec(m.pgbench)),
          pgbenchCost: medianPgbenchCost(m.pgbench.map((s) => s.cost)),
          ratioToPgbench: pairedRatio(inbox, m.pgbench),
          baselineRatioToPgbench: pairedRatio(knex, m.pgbench),
          rawPgRatioToPgbench: pairedRatio(pg, m.pgbench),
          inboxPgRatioToPgbench: pairedRatio(inboxPg, m.pgbench),
          postgresJsRatioToPgbench: pairedRatio(pgjs, m.pgbench),
        }),
  };
}

/** Prints each case's sides with their rates, their ratio to pgbench and their costs. */
function printResults(
  results: ReadonlyArray<ReturnType<typeof summarize>>,
  batchVsOne: BatchVsOne | undefined,
): void {
  const text = (ratio: number | undefined): string => (ratio === undefined ? 'n/a' : String(ratio));
  for (const r of results) {
    console.log(`\n${r.case}`);
    const rows = [
      ['justonce inbox (knex)', r.perSec, r.ratioToPgbench, costCells(r.cost)],
      [
        'justonce inbox (pg adapter)',
        r.inboxPgPerSec,
        r.inboxPgRatioToPgbench,
        costCells(r.inboxPgCost),
      ],
      ['by hand, knex', r.baselinePerSec, r.baselineRatioToPgbench, costCells(r.baselineCost)],
      ['by hand, pg prepared', r.rawPgPerSec, r.rawPgRatioToPgbench, costCells(r.rawPgCost)],
      [
        'by hand, postgres.js',
        r.postgresJsPerSec,
        r.postgresJsRatioToPgbench,
        [...costCells(r.postgresJsCost).slice(0, 2), 'n/a'],
      ],
    ] as const;
    const limit =
      r.pgbenchCost === undefined
        ? []
        : [
            [
              `pgbench limit`,
              String(r.pgbenchPerSec),
              '1',
              'n/a',
              ...costCells({ nodeCpuUs: 0, ...r.pgbenchCost }).slice(1),
            ],
          ];
    printTable(
      ['side', 'messages/s', 'ratio to pgbench', ...costHeads('message')],
      [
        ...rows.map(([side, rate, ratio, cost]) => [side, String(rate), text(ratio), ...cost]),
        ...limit,
      ],
    );
    console.log(
      `${r.ratio >= r.target ? 'met   ' : 'MISSED'} inbox / knex by hand ${r.ratio} ` +
        `(target >= ${r.target}); inbox / pg by hand ${r.ratioToRawPg}` +
        `; inbox on the pg adapter / pg by hand ${r.inboxPgToRawPg}` +
        (r.ratioToPgbench === undefined ? '' : `; inbox / pgbench ${r.ratioToPgbench}`) +
        `; postgres.js / pg by hand ${r.postgresJsToRawPg}`,
    );
  }
  const b = batchVsOne;
  if (b === undefined) return;
  console.log(
    `\n${b.ratio >= b.target ? 'met   ' : 'MISSED'} ${b.case}: ${b.perSec}/s vs ` +
      `${b.baselinePerSec}/s, ratio ${b.ratio} (target >= ${b.target}); ` +
      `per message ${costLine(b.cost, b.baselineCost)}`,
  );
}

/**
 * The copies of a handled message a broker delivers, by the delivery facts each carries:
 * a redelivery as RabbitMQ flags it and as SQS counts it; a Kafka record in the first chunk
 * after a partition's assignment (no facts: the consumer counts it); and a copy delivered as
 * new (`redelivered: false`: a Kafka record past that chunk after a rebalance that rewound
 * the offsets, or a message its producer sent twice). The inbox takes the first three
 * through its attempt count, the last straight to its claim.
 */
const COPIES: Readonly<Record<string, DeliveryFacts>> = {
  'redelivered flag': { attempt: 2, redelivered: true, source: 'bench' },
  'receive count 2': { attempt: 2, receiveCount: 2, source: 'bench' },
  'no facts': { source: 'bench' },
  'declared first': { attempt: 1, receiveCount: 1, redelivered: false, source: 'bench' },
};

/** One run of the duplicates case: its rate, its cost and the rows it wrote per message. */
interface DuplicateSample {
  readonly perSec: number;
  readonly cost: Cost;
  readonly writes: number;
}

/**
 * The duplicates case in one mode: per round, after emptying the tables, the first deliveries
 * of `count` messages, then each kind of {@link COPIES} of all of them; prints a table and
 * returns one JSON result per kind of copy (its ratio to the first deliveries of its rounds).
 */
async function measureDuplicates(
  b: Bench,
  schema: string,
  mode: 'message' | 'batch',
  count: number,
) {
  const inbox = createInbox({
    store: b.store,
    consumer: 'bench-duplicates',
    retentionMs: INBOX_RETENTION_MS,
  });
  const insertEffect = knexPlaceholders(b.sql.effect);
  const handler: Handler = async ({ trx, messageId, message }) => {
    await trx.raw(insertEffect, [messageId, message.body.length]);
  };
  const deliver = async (envelopes: readonly Envelope[], expected: string): Promise<void> => {
    const outcomes =
      mode === 'message'
        ? [await inbox.process(envelopes[0]!, handler)]
        : await inbox.processBatch(envelopes, handler);
    if (outcomes.some((o) => o.status !== expected)) {
      throw new Error(`duplicates: ${outcomes.find((o) => o.status !== expected)?.status}`);
    }
  };
  const unitsOf = (envelopes: readonly Envelope[]): Envelope[][] =>
    mode === 'message' ? envelopes.map((e) => [e]) : chunks(envelopes, BATCH_SIZE);
  const run = async (units: readonly Envelope[][], expected: string) => {
    const before = await rowsWritten(b.store.knex, schema, POOL_MAX);
    const meter = costMeter();
    const seconds = await timed(units, (unit) => deliver(unit, expected));
    const cost = meter(count).cost;
    const writes = (await rowsWritten(b.store.knex, schema, POOL_MAX)) - before;
    return { perSec: count / seconds, cost, writes: writes / count };
  };
  const label = `duplicates ${mode === 'message' ? 'per-message' : `batch of ${BATCH_SIZE}`}`;
  const samples: Record<string, DuplicateSample[]> = { first: [] };
  for (const copy of Object.keys(COPIES)) samples[copy] = [];
  for (let r = -1; r < b.rounds; r += 1) {
    // Round -1 is the warm-up, on other ids.
    const messages = benchMessages(r < 0 ? `dup-${mode}-warm` : `dup-${mode}`, count);
    await b.reset();
    const first = await run(unitsOf(messages.map((m) => m.envelope)), 'processed');
    const copies: Record<string, DuplicateSample> = {};
    for (const [copy, facts] of Object.entries(COPIES)) {
      copies[copy] = await run(
        unitsOf(messages.map((m) => ({ ...m.envelope, delivery: facts }))),
        'duplicate',
      );
    }
    if ((await b.effects()) !== count) throw new Error(`${label}: effects written twice`);
    if (r < 0) continue;
    samples.first!.push(first);
    for (const [copy, sample] of Object.entries(copies)) samples[copy]!.push(sample);
    console.log(
      `  ${label} round ${r + 1}/${b.rounds}: first ${Math.round(first.perSec)}/s, ` +
        Object.entries(copies)
          .map(([copy, s]) => `${copy} ${Math.round(s.perSec)}/s`)
          .join(', '),
    );
  }
  const firsts = samples.first!;
  const rows = Object.entries(samples).map(([copy, runs]) => ({
    case: `${label}: ${copy === 'first' ? 'first delivery' : copy}`,
    perSec: Math.round(perSec(runs)),
    ratio: copy === 'first' ? 1 : pairedRatio(runs, firsts),
    cost: medianCost(runs.map((s) => s.cost)),
    writesPerMessage: Math.round(median(runs.map((s) => s.writes)) * 1000) / 1000,
  }));
  console.log(`\n${label} (${count} messages, ${WORKERS} concurrent)`);
  printTable(
    ['delivery', 'messages/s', 'ratio to first', ...costHeads('message'), 'rows written/message'],
    rows.map((row) => [
      row.case.slice(label.length + 2),
      String(row.perSec),
      String(row.ratio),
      ...costCells(row.cost),
      String(row.writesPerMessage),
    ]),
  );
  return rows;
}
