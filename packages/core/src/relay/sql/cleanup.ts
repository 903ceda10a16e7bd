import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { isMysql } from '../../store/dialect';
import { mysqlDeletePublishedBatch } from './mysql/cleanup';

/**
 * The statement that deletes at most `limit` published events published more than
 * `olderThanMs` ago (its two bindings), oldest first, through the partial index on
 * `published_at`. The ids are gathered into an array first, so that the delete finds each row
 * by primary key: joined to a subquery instead, the partitioned outbox's delete was planned as
 * a hash join over a scan of every partition. @internal
 */
export function deletePublishedSql(names: MigrationNames): string {
  const t = names.table('outbox');
  return `delete from ${t}
     where id = any(array(
       select id from ${t}
       where status = 'published'
         and published_at < statement_timestamp() - ? * interval '1 millisecond'
       order by published_at
       limit ?
       for update skip locked
     ))`;
}

/**
 * Deletes at most `limit` published events published more than `olderThanMs` ago
 * ({@link deletePublishedSql}). One short statement: callers loop for more, so writers are
 * never stalled behind a long delete.
 */
export async function deletePublishedBatch(
  knex: Knex,
  names: MigrationNames,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  if (isMysql(names)) return mysqlDeletePublishedBatch(knex, names, olderThanMs, limit);
  const result = await knex.raw(deletePublishedSql(names), [olderThanMs, limit]);
  const r = result as { rowCount?: number | null; affectedRows?: number } | null;
  return Number(r?.rowCount ?? r?.affectedRows ?? 0);
}
