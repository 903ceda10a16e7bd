import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import type { MysqlHeader } from '../../../transactions/mysql-result';
import type { DeadRow } from '../dead';

/** MySQL's {@link selectDead}. */
export async function mysqlSelectDead(
  knex: Knex,
  names: MigrationNames,
  limit: number,
  afterId: string | null,
): Promise<DeadRow[]> {
  const result: unknown = await knex.raw(
    `select id, destination, partition_key, message_id, headers, payload, attempts, last_error,
            created_at, available_at
     from ${names.table('outbox')}
     where status = 'dead' and id > cast(? as signed)
     order by id
     limit ?`,
    [afterId ?? '0', limit],
  );
  return rowsOf<DeadRow>(result).map((row) => ({ ...row, id: String(row.id) }));
}

/**
 * MySQL's {@link requeueDead}: the dead row is locked and read (`for update`), deleted and
 * inserted again with a new id from `auto_increment` (the insert's `insertId`), in one
 * transaction, since MySQL's `delete` has no `returning`. No notification: relays poll.
 */
export async function mysqlRequeueDead(
  knex: Knex,
  names: MigrationNames,
  id: string,
  _channel: string | null,
): Promise<string | null> {
  const t = names.table('outbox');
  return knex.transaction(async (trx) => {
    const dead = rowsOf<DeadRow>(
      await trx.raw(
        `select destination, partition_key, message_id, headers, payload, created_at
         from ${t} force index (primary) where id = cast(? as signed) and status = 'dead'
         for update`,
        [id],
      ),
    )[0];
    if (dead === undefined) return null;
    await trx.raw(`delete from ${t} where id = cast(? as signed)`, [id]);
    const result = (await trx.raw(
      `insert into ${t} (destination, partition_key, message_id, headers, payload, created_at)
       values (?, ?, ?, ?, ?, ?)`,
      [
        dead.destination,
        dead.partition_key,
        dead.message_id,
        typeof dead.headers === 'string' ? dead.headers : JSON.stringify(dead.headers),
        Buffer.from(dead.payload),
        dead.created_at instanceof Date ? dead.created_at : new Date(dead.created_at),
      ],
    )) as [MysqlHeader];
    const insertId = result[0].insertId;
    return insertId === undefined ? null : String(insertId);
  });
}
