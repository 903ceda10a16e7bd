import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import type { FailureMark } from '../mark';
import { idMarks } from './claimed-row';

/** MySQL's {@link markPublished}: the same update or delete, ids one binding each. */
export async function mysqlMarkPublished(
  trx: Knex.Transaction,
  store: StatementStore,
  ids: readonly string[],
  remove: boolean,
): Promise<number> {
  if (ids.length === 0) return 0;
  const t = store.names.table('outbox');
  const sql = remove
    ? `delete o from ${t} o force index (primary)
         where o.id in (${idMarks(ids.length)}) and o.status = 'pending'`
    : `update ${t} o force index (primary)
         set o.status = 'published', o.published_at = current_timestamp(6)
         where o.id in (${idMarks(ids.length)}) and o.status = 'pending'`;
  return (await prepared(store, trx, sql, ids)).rowCount;
}

/**
 * MySQL's {@link markFailed}: one update joined to the failures as a derived table (`union
 * all` of one-row selects: MySQL's and MariaDB's table value constructors differ). Without
 * `returning`, the ids that went dead are read back in the same transaction, which sees its
 * own writes; only rows it holds are marked (their keys' heads are locked by it), so a row
 * dead now was pending before the update, as PostgreSQL's `returning` reports.
 */
export async function mysqlMarkFailed(
  trx: Knex.Transaction,
  store: StatementStore,
  failures: readonly FailureMark[],
): Promise<string[]> {
  if (failures.length === 0) return [];
  const t = store.names.table('outbox');
  const one = 'select cast(? as signed) as id, ? as error, ? as delay_ms, ? as dead, ? as charged';
  const bindings: unknown[] = [];
  for (const f of failures) {
    bindings.push(
      f.id,
      f.error,
      Math.max(0, Math.round(f.delayMs)),
      f.dead ? 1 : 0,
      f.charged ? 1 : 0,
    );
  }
  await prepared(
    store,
    trx,
    `update ${t} o force index (primary)
     join (${failures.map(() => one).join(' union all ')}) f on o.id = f.id
     set o.attempts = o.attempts + case when f.charged = 1 then 1 else 0 end,
         o.last_error = f.error,
         o.available_at = current_timestamp(6) + interval (f.delay_ms * 1000) microsecond,
         o.status = case when f.dead = 1 then 'dead' else 'pending' end
     where o.status = 'pending'`,
    bindings,
  );
  const dead = failures.filter((f) => f.dead).map((f) => f.id);
  if (dead.length === 0) return [];
  const result = await prepared(
    store,
    trx,
    `select id from ${t} where id in (${idMarks(dead.length)}) and status = 'dead'`,
    dead,
  );
  return result.rows.map((row) => String(row.id as string | number));
}
