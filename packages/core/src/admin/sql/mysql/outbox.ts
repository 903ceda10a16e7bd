import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import { mysqlRowCount } from '../../../transactions/mysql-result';
import type { OutboxFilters } from '../../outbox';

/**
 * @internal
 * MySQL's conditions of `outbox.list`: the database clock with a window in microseconds, an
 * `in` list for the named ids (MySQL has no arrays), and plain integers for the row ids.
 */
export const MYSQL_OUTBOX_FILTERS: OutboxFilters = {
  stuck: (stuckAfterMs) => ({
    sql: '(attempts > 0 or created_at < date_sub(current_timestamp(6), interval ? microsecond))',
    bindings: [Math.round(stuckAfterMs * 1000)],
  }),
  ids: (ids) =>
    ids.length === 0
      ? { sql: 'false', bindings: [] }
      : { sql: `id in (${ids.map(() => '?').join(', ')})`, bindings: [...ids] },
  after: (id) => ({ sql: 'id > ?', bindings: [id] }),
};

/** @internal MySQL's `outbox.get` statement. */
export async function mysqlGetOutboxRow<Row>(
  knex: Knex,
  table: string,
  columns: string,
  id: string,
): Promise<Row | undefined> {
  return rowsOf<Row>(await knex.raw(`select ${columns} from ${table} where id = ?`, [id]))[0];
}

/**
 * @internal
 * MySQL's `outbox.delete`: whether it removed the row is its affected-row count, as MySQL has
 * no `DELETE … RETURNING`.
 */
export async function mysqlDeleteOutboxRow(
  knex: Knex,
  table: string,
  id: string,
): Promise<boolean> {
  const result: unknown = await knex.raw(
    `delete from ${table} where id = ? and status in ('dead', 'pending')`,
    [id],
  );
  return mysqlRowCount(result) > 0;
}
