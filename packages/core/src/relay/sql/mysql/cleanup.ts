import type { Knex } from 'knex';
import type { MigrationNames } from '../../../store/migration';
import { mysqlRowCount } from '../../../transactions/mysql-result';

/**
 * MySQL's {@link deletePublishedBatch}: one `delete … order by … limit` through the
 * `(status, published_at)` index. MySQL cannot delete from a table it reads in a subquery,
 * so there is no `skip locked` here: a second cleanup running at the same time waits for the
 * first one's batch (a short statement) instead of passing over its rows. Writers do not
 * wait: under READ COMMITTED InnoDB takes no gap locks, and relays never lock published rows.
 */
export async function mysqlDeletePublishedBatch(
  knex: Knex,
  names: MigrationNames,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  const result: unknown = await knex.raw(
    `delete from ${names.table('outbox')}
     where status = 'published'
       and published_at < current_timestamp(6) - interval ? microsecond
     order by published_at
     limit ?`,
    [Math.round(olderThanMs * 1000), limit],
  );
  return mysqlRowCount(result);
}
