import type { Knex } from 'knex';
import { runOnPool, transactionStatements } from './driver';
import type { SqlQueryOptions, SqlResult } from './types';
import { isMysqlResult, mysqlRowCount, mysqlRows } from './mysql-result';

/**
 * Where justonce's own statements run: a caller's transaction (a {@link SqlTransaction}) or
 * the store's pool (`pool: true`). It tells a failed statement apart: in a transaction it
 * fails the transaction, on the pool it can simply run again. @internal
 */
export interface SqlRunner {
  query(text: string, values: readonly unknown[], options?: SqlQueryOptions): Promise<SqlResult>;
  readonly pool?: true;
}

/** Statement texts by their knex-style text. Bounded: the statements are a fixed set. */
const NUMBERED = new Map<string, string>();
const CACHE_LIMIT = 1_000;

/** `?` bindings (knex's style, which the statements are written in) to `$n`; `\?` stays `?`. */
function numbered(sql: string): string {
  let text = NUMBERED.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\\\?|\?/g, (match) => (match === '?' ? `$${++n}` : '?'));
    if (NUMBERED.size >= CACHE_LIMIT) NUMBERED.clear();
    NUMBERED.set(sql, text);
  }
  return text;
}

/** Runs `sql`, written with knex-style `?` bindings, on `runner`. @internal */
export function runSql(
  runner: SqlRunner,
  sql: string,
  bindings: readonly unknown[],
  options?: SqlQueryOptions,
): Promise<SqlResult> {
  return runner.query(numbered(sql), bindings, options);
}

/** For each `$n` text: the same text with `?` bindings, and the value index of each. */
const POSITIONAL = new Map<string, { sql: string; order: number[] }>();

/**
 * knex binds `?` placeholders; the seam's statements use `$n`. The conversion is cached per
 * text. A literal `?` is escaped for knex.
 */
function positional(text: string): { sql: string; order: number[] } {
  let known = POSITIONAL.get(text);
  if (known === undefined) {
    const order: number[] = [];
    const sql = text.replace(/\?/g, '\\?').replace(/\$(\d+)/g, (_match, n: string) => {
      order.push(Number(n) - 1);
      return '?';
    });
    known = { sql, order };
    if (POSITIONAL.size >= CACHE_LIMIT) POSITIONAL.clear();
    POSITIONAL.set(text, known);
  }
  return known;
}

/** Runs a `$n` statement through knex (the store's pool or a knex transaction). @internal */
export async function knexQuery(
  db: Knex | Knex.Transaction,
  text: string,
  values: readonly unknown[],
  options?: SqlQueryOptions,
): Promise<SqlResult> {
  const { sql, order } = positional(text);
  const bindings = order.map((index) => values[index]) as Knex.RawBinding[];
  const raw = db.raw(sql, bindings);
  const answer: unknown = await (options?.name === undefined
    ? raw
    : raw.options({ name: options.name }));
  if (isMysqlResult(answer)) return { rows: mysqlRows(answer), rowCount: mysqlRowCount(answer) };
  const result = answer as { rows?: Record<string, unknown>[]; rowCount?: number | null };
  const rows = result.rows ?? [];
  return { rows, rowCount: result.rowCount ?? rows.length };
}

/** knex's own error for a statement on a transaction that has ended. */
function completed(): Error {
  return new Error('Transaction query already complete, run with DEBUG=knex:tx for more info');
}

/**
 * Runs a `$n` statement in a knex transaction: straight on the transaction's connection when
 * knex's driver is node-postgres (see `driver.ts`), else through knex. @internal
 */
export async function transactionQuery(
  trx: Knex.Transaction,
  text: string,
  values: readonly unknown[],
  options?: SqlQueryOptions,
): Promise<SqlResult> {
  if (trx.isCompleted()) throw completed();
  let run = transactionStatements(trx);
  if (run instanceof Promise) run = await run;
  if (run === null) return knexQuery(trx, text, values, options);
  return run(text, values, options?.name);
}

const POOL_RUNNERS = new WeakMap<Knex, SqlRunner>();

/** The store's own knex as a {@link SqlRunner}, for statements outside a caller's transaction. @internal */
export function poolRunner(knex: Knex): SqlRunner {
  let runner = POOL_RUNNERS.get(knex);
  if (runner === undefined) {
    runner = {
      pool: true,
      query: async (text, values, options) =>
        (await runOnPool(knex, text, values, options?.name)) ??
        knexQuery(knex, text, values, options),
    };
    POOL_RUNNERS.set(knex, runner);
  }
  return runner;
}

const TRANSACTION_RUNNERS = new WeakMap<Knex.Transaction, SqlRunner>();

/** A knex transaction of justonce's own, or the store's knex, as a {@link SqlRunner}. @internal */
export function knexRunner(db: Knex | Knex.Transaction): SqlRunner {
  if (db.isTransaction !== true) return poolRunner(db as Knex);
  const trx = db as Knex.Transaction;
  let runner = TRANSACTION_RUNNERS.get(trx);
  if (runner === undefined) {
    runner = { query: (text, values, options) => transactionQuery(trx, text, values, options) };
    TRANSACTION_RUNNERS.set(trx, runner);
  }
  return runner;
}
