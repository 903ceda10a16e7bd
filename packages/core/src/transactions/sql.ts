import type { Knex } from 'knex';
import type { SqlQueryOptions, SqlResult } from './types';

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
  const result = (await (options?.name === undefined
    ? raw
    : raw.options({ name: options.name }))) as {
    rows?: Record<string, unknown>[];
    rowCount?: number | null;
  };
  const rows = result.rows ?? [];
  return { rows, rowCount: result.rowCount ?? rows.length };
}

const POOL_RUNNERS = new WeakMap<Knex, SqlRunner>();

/** The store's own knex as a {@link SqlRunner}, for statements outside a caller's transaction. @internal */
export function poolRunner(knex: Knex): SqlRunner {
  let runner = POOL_RUNNERS.get(knex);
  if (runner === undefined) {
    runner = {
      pool: true,
      query: (text, values, options) => knexQuery(knex, text, values, options),
    };
    POOL_RUNNERS.set(knex, runner);
  }
  return runner;
}
