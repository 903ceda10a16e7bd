import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { isMysql } from '../../store/dialect';
import { mysqlDeletePublishedBatch } from './mysql/cleanup';

/**
 * Deletes at most `limit` published events published more than `olderThanMs` ago, oldest
 * first, through the partial index on `published_at`. One short statement: callers loop for
 * more, so writers are never stalled behind a long delete.
 */
export async function deletePublishedBatch(
  knex: Knex,
  names: MigrationNames,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  if (isMysql(names)) return mysqlDeletePublishedBatch(knex, names, olderThanMs, limit);
  const t = names.table('outbox');
  const result = await knex.raw(
    `delete from ${t}
     where id in (
       select id from ${t}
       where status = 'published'
         and published_at < statement_timestamp() - ? * interval '1 millisecond'
       order by published_at
       limit ?
       for update skip locked
     )`,
    [olderThanMs, limit],
  );
  const r = result as { rowCount?: number | null; affectedRows?: number } | null;
  return Number(r?.rowCount ?? r?.affectedRows ?? 0);
}
