import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import type { EncodedEvent } from '../encode';

/**
 * Inserts events in the caller's transaction and, when `channel` is given, queues a
 * notification on it in the same statement (PostgreSQL delivers it at commit, never on
 * rollback). An id already present is skipped; the ids actually inserted are returned.
 */
export async function insertEvents(
  trx: Knex.Transaction,
  names: MigrationNames,
  events: readonly EncodedEvent[],
  channel: string | null,
): Promise<Set<string>> {
  const values: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  for (const e of events) {
    values.push('(?, ?, ?, ?::jsonb, ?)');
    bindings.push(e.destination, e.key, e.messageId, JSON.stringify(e.headers), e.payload);
  }
  const insert = `insert into ${names.table('outbox')}
      (destination, partition_key, message_id, headers, payload)
    values ${values.join(', ')}
    on conflict (message_id) do nothing
    returning message_id`;
  const sql =
    channel === null
      ? `with ins as (${insert}) select message_id from ins`
      : `with ins as (${insert}), note as (select pg_notify(?, '') as sent)
         select ins.message_id from note left join ins on true`;
  if (channel !== null) bindings.push(channel);
  const result = await trx.raw(sql, bindings);
  const inserted = new Set<string>();
  for (const row of rowsOf<{ message_id: string | null }>(result)) {
    if (row.message_id !== null) inserted.add(row.message_id);
  }
  return inserted;
}
