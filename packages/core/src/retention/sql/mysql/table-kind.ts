import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';

/**
 * @internal
 * MySQL's answer to `tableKind`: `'r'` for a table of the store's database, `undefined` when
 * its migration did not create it. MySQL keeps the plain layout, never partitions.
 */
export async function mysqlTableKind(knex: Knex, table: string): Promise<'r' | undefined> {
  const [schema = '', name = ''] = table.split('.').map((part) => part.replace(/`/g, ''));
  const result = await knex.raw(
    `select 1 as found from information_schema.tables where table_schema = ? and table_name = ?`,
    [schema, name],
  );
  return rowsOf(result).length > 0 ? 'r' : undefined;
}
