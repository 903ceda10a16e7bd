import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';

/**
 * @internal
 * Deletes at most `limit` rows of `table` (an already quoted, qualified name) that match
 * `condition`, in one short statement. Rows are picked with `FOR UPDATE SKIP LOCKED`, so
 * the cleanup never waits for a writer that holds one of them, and a writer that wants a
 * row the cleanup holds waits only for this one statement. Returns how many rows went.
 */
export async function deleteBatch(
  knex: Knex,
  table: string,
  condition: string,
  bindings: readonly Knex.Value[],
  limit: number,
): Promise<number> {
  const result = await knex.raw(
    `delete from ${table}
      where ctid = any(array(
        select ctid from ${table}
         where ${condition}
         limit ?
         for update skip locked))
      returning 1 as gone`,
    [...bindings, limit],
  );
  return rowsOf(result).length;
}
