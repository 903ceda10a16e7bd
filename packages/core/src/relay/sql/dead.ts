import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import {
  DISTRIBUTION_COLUMN,
  outboxInsertShape,
  schemaIsDistributable,
} from '../../store/distribution';
import type { ClaimedRow } from './claim';
import { isMysql } from '../../store/dialect';
import { mysqlRequeueDead, mysqlSelectDead } from './mysql/dead';

/** A dead outbox row as stored. @internal */
export interface DeadRow extends Omit<ClaimedRow, 'id'> {
  readonly id: string | number;
  readonly last_error: string | null;
  readonly created_at: Date | string;
  readonly available_at: Date | string;
  /** Read only on a distributable schema, by the requeue. */
  readonly distribution_key?: string;
}

/** Dead events in id order, after `afterId`, at most `limit`. */
export async function selectDead(
  knex: Knex,
  names: MigrationNames,
  limit: number,
  afterId: string | null,
): Promise<DeadRow[]> {
  if (isMysql(names)) return mysqlSelectDead(knex, names, limit, afterId);
  const result = await knex.raw(
    `select id, destination, partition_key, message_id, headers, payload, attempts, last_error,
            created_at, available_at
     from ${names.table('outbox')}
     where status = 'dead' and id > ?::bigint
     order by id
     limit ?`,
    [afterId ?? '0', limit],
  );
  return rowsOf<DeadRow>(result);
}

/** The distribution key of dead event `id` in `table` (a distributable outbox), or null. */
async function deadDistributionKey(
  trx: Knex.Transaction,
  table: string,
  id: string,
): Promise<string | null> {
  const rows = rowsOf<{ key: string }>(
    await trx.raw(
      `select ${DISTRIBUTION_COLUMN} as key from ${table} where id = ?::bigint and status = 'dead'`,
      [id],
    ),
  );
  return rows[0]?.key ?? null;
}

/**
 * Puts a dead event back at the end of its key's queue: the dead row is deleted and
 * re-inserted with a new id (same message id, attempts reset), so it cannot overtake events
 * of its key that are in flight, and on a distributable schema (as the catalog says) the same
 * distribution key, the delete naming it. Returns the new id, or `null` when `id` is not a dead event.
 */
export async function requeueDead(
  knex: Knex,
  names: MigrationNames,
  id: string,
  channel: string | null,
): Promise<string | null> {
  if (isMysql(names)) return mysqlRequeueDead(knex, names, id, channel);
  const t = names.table('outbox');
  return knex.transaction(async (trx) => {
    const distributable = await schemaIsDistributable(trx, names);
    const shape = outboxInsertShape(distributable ? 'distributable' : 'none');
    // On a distributable schema the row is deleted by its distribution key and id, read
    // first: one shard on a distributed table (docs/scaling.md).
    const key = distributable ? await deadDistributionKey(trx, t, id) : null;
    if (distributable && key === null) return null;
    const removed = rowsOf<DeadRow>(
      await trx.raw(
        `delete from ${t} where ${
          distributable ? `${DISTRIBUTION_COLUMN} = ? and ` : ''
        }id = ?::bigint and status = 'dead'
         returning destination, partition_key, message_id, headers, payload, created_at${
           distributable ? `, ${DISTRIBUTION_COLUMN}` : ''
         }`,
        distributable ? [key, id] : [id],
      ),
    )[0];
    if (removed === undefined) return null;
    const inserted = rowsOf<{ id: string | number }>(
      await trx.raw(
        `insert into ${t} (${shape.columns}, created_at)
         values (?, ?, ?, ?::jsonb, ?${distributable ? ', ?' : ''}, ?)
         returning id`,
        [
          removed.destination,
          removed.partition_key,
          removed.message_id,
          typeof removed.headers === 'string' ? removed.headers : JSON.stringify(removed.headers),
          Buffer.from(removed.payload),
          ...(distributable ? [removed.distribution_key ?? null] : []),
          removed.created_at instanceof Date ? removed.created_at : new Date(removed.created_at),
        ],
      ),
    )[0];
    if (channel !== null) await trx.raw(`select pg_notify(?, '')`, [channel]);
    return inserted === undefined ? null : String(inserted.id);
  });
}
