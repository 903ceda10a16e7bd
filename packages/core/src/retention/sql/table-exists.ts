import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';

/** @internal Whether `table` (a quoted, qualified name) exists, so older schemas still clean up. */
export async function tableExists(knex: Knex, table: string): Promise<boolean> {
  const result = await knex.raw('select to_regclass(?) is not null as present', [table]);
  return rowsOf<{ present: boolean }>(result)[0]?.present === true;
}
