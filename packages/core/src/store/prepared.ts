import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Store } from './store';
import { knexRunner, runSql, type SqlRunner } from '../transactions/sql';
import type { SqlResult } from '../transactions/types';

/**
 * Statement names by text. The texts come from the statement caches (a handful per store),
 * so this stays small; it is cleared when full so that it cannot grow without end.
 */
const names = new Map<string, string>();
const NAMES_LIMIT = 1_000;

/**
 * Bumped when PostgreSQL no longer has, or can no longer run, a statement the driver believes
 * prepared (see {@link isStaleStatement}): every name changes, so the next run of each
 * statement parses it afresh on whatever connection it gets.
 */
let generation = 0;

/**
 * The name a statement is prepared under: derived from its text, because the `pg` driver
 * keeps a connection's prepared statements by name and refuses a name reused for another
 * text. @internal
 */
export function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    const hash = createHash('sha256').update(sql).digest('hex').slice(0, 32);
    name = generation === 0 ? `justonce_${hash}` : `justonce_${hash}_${generation}`;
    if (names.size >= NAMES_LIMIT) names.clear();
    names.set(sql, name);
  }
  return name;
}

/**
 * True for the errors of a prepared statement that its connection will repeat on every run:
 * the server lost it (`DISCARD ALL`, a pooler that moved the session) or a migration changed
 * the type of a column it returns.
 */
function isStaleStatement(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === '26000' ||
    (code === '0A000' &&
      typeof message === 'string' &&
      message.includes('cached plan must not change result type'))
  );
}

/** What a statement run through {@link prepared} needs of the store. @internal */
export type StatementStore = Pick<Store, 'names' | 'preparedStatements'>;

/**
 * Runs `sql` (a fixed text, with `?` bindings) in `trx`, as a named prepared statement when
 * the store allows it: each connection then parses it once, and PostgreSQL may switch to a
 * generic plan after a few runs instead of planning every call. Only for statements whose
 * text does not vary with the data, or each connection would keep one per variant.
 *
 * `trx` may also be the store's own knex (a statement in its own transaction). Either way the
 * statement goes to the driver's connection directly where it can (see {@link knexRunner}).
 * For what happens to a statement the server lost, see {@link preparedOn}. @internal
 */
export function prepared(
  store: StatementStore,
  trx: Knex | Knex.Transaction,
  sql: string,
  bindings: readonly unknown[],
): Promise<SqlResult> {
  return preparedOn(store, knexRunner(trx), sql, bindings);
}

/**
 * Runs `sql` (a fixed text, with `?` bindings) on a {@link SqlRunner}: the store's pool or a
 * caller's transaction, which prepares the statement when its driver can. A prepared
 * statement the server lost or can no longer run fails; the names then change. In a
 * transaction the failure fails the transaction, and the caller's next transaction prepares
 * every statement again; a statement on its own changed nothing, so it runs once more at
 * once under its new name. @internal
 */
export async function preparedOn(
  store: StatementStore,
  runner: SqlRunner,
  sql: string,
  bindings: readonly unknown[],
): Promise<SqlResult> {
  if (!store.preparedStatements) return runSql(runner, sql, bindings);
  try {
    return await runSql(runner, sql, bindings, { name: statementName(sql) });
  } catch (error) {
    if (!isStaleStatement(error)) throw error;
    generation += 1;
    names.clear();
    if (runner.pool !== true) throw error;
    return runSql(runner, sql, bindings, { name: statementName(sql) });
  }
}
