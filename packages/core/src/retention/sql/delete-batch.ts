import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import { isMysqlKnex } from '../../store/mysql/connection';
import { mysqlDeleteBatch } from './mysql/delete-batch';

/** Where a pass's batches have got to in the column its condition bounds. @internal */
export interface BatchCursor {
  /** The column, which an index of the table leads with. */
  readonly column: string;
  /** The highest value the batches so far deleted; `undefined` before the first batch. */
  from: Date | undefined;
}

/**
 * @internal
 * Deletes at most `limit` rows of `table` (an already quoted, qualified name) that match
 * `condition`, in one short statement. Rows are picked with `FOR UPDATE SKIP LOCKED`, so
 * the cleanup never waits for a writer that holds one of them, and a writer that wants a
 * row the cleanup holds waits only for this one statement. Returns how many rows went.
 *
 * Rows are picked in the order of `cursor.column`, each batch from where the last one ended:
 * the rows an earlier batch deleted stay in the table and its indexes until vacuum, and a
 * batch that started from the bottom again would walk past all of them, so a pass cost the
 * square of its rows. The cursor moves on to the highest value deleted; `>=` takes the rows
 * that share it (a JavaScript `Date` also drops the microseconds, which only moves it back).
 */
export async function deleteBatch(
  knex: Knex,
  table: string,
  condition: string,
  bindings: readonly Knex.Value[],
  limit: number,
  cursor: BatchCursor,
): Promise<number> {
  if (isMysqlKnex(knex)) return mysqlDeleteBatch(knex, table, condition, bindings, limit, cursor);
  const { column, from } = cursor;
  const result = await knex.raw(
    `delete from ${table}
      where ctid = any(array(
        select ctid from ${table}
         where ${condition} ${from === undefined ? '' : `and ${column} >= ?`}
         order by ${column}
         limit ?
         for update skip locked))
      returning ${column} as at`,
    [...bindings, ...(from === undefined ? [] : [from]), limit],
  );
  const gone = rowsOf<{ at: Date | string }>(result);
  for (const { at } of gone) {
    const value = at instanceof Date ? at : new Date(at);
    if (cursor.from === undefined || value > cursor.from) cursor.from = value;
  }
  return gone.length;
}
