import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Store } from './store';

/**
 * Statement names by text. The texts come from the statement caches (a handful per store),
 * so this stays small; it is cleared when full so that it cannot grow without end.
 */
const names = new Map<string, string>();
const NAMES_LIMIT = 1_000;

/**
 * The name a statement is prepared under: derived from its text, because the `pg` driver
 * keeps a connection's prepared statements by name and refuses a name reused for another
 * text. @internal
 */
export function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    name = `justonce_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
    if (names.size >= NAMES_LIMIT) names.clear();
    names.set(sql, name);
  }
  return name;
}

/** What a statement run through {@link prepared} needs of the store. @internal */
export type StatementStore = Pick<Store, 'names' | 'preparedStatements'>;

/**
 * Runs `sql` (a fixed text, with `?` bindings) in `trx`, as a named prepared statement when
 * the store allows it: each connection then parses it once, and PostgreSQL may switch to a
 * generic plan after a few runs instead of planning every call. Only for statements whose
 * text does not vary with the data, or each connection would keep one per variant.
 * @internal
 */
export function prepared(
  store: StatementStore,
  trx: Knex.Transaction,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Knex.Raw {
  const statement = trx.raw(sql, bindings as Knex.RawBinding[]);
  return store.preparedStatements ? statement.options({ name: statementName(sql) }) : statement;
}
