import { runSql, type SqlRunner } from '../../transactions/sql';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import type { EncodedEvent } from '../encode';
import { isMysql } from '../../store/dialect';
import { mysqlDeleteInserted, mysqlInsertEvents } from './mysql/insert';

/**
 * Inserts events in the caller's transaction and, when `channel` is given, queues a
 * notification on it in the same statement (PostgreSQL delivers it at commit, never on
 * rollback). An id already present is skipped. Resolves to the rows actually inserted: their
 * message id mapped to their row id, so the caller can undo exactly these rows.
 */
export async function insertEvents(
  tx: SqlRunner,
  names: MigrationNames,
  events: readonly EncodedEvent[],
  channel: string | null,
): Promise<Map<string, string>> {
  if (isMysql(names)) return mysqlInsertEvents(tx, names, events, channel);
  const values: string[] = [];
  const bindings: unknown[] = [];
  for (const e of events) {
    values.push('(?, ?, ?, ?::jsonb, ?)');
    bindings.push(e.destination, e.key, e.messageId, e.headersJson, e.payload);
  }
  const insert = `insert into ${names.table('outbox')}
      (destination, partition_key, message_id, headers, payload)
    values ${values.join(', ')}
    on conflict (message_id) do nothing
    returning id, message_id`;
  const sql =
    channel === null
      ? `with ins as (${insert}) select id, message_id from ins`
      : `with ins as (${insert}), note as (select pg_notify(?, '') as sent)
         select ins.id, ins.message_id from note left join ins on true`;
  if (channel !== null) bindings.push(channel);
  const result = await runSql(tx, sql, bindings);
  const inserted = new Map<string, string>();
  for (const row of rowsOf<{ id: unknown; message_id: string | null }>(result)) {
    if (row.message_id !== null) inserted.set(row.message_id, String(row.id));
  }
  return inserted;
}

/**
 * Deletes the outbox rows with these row ids: the rows one `add` call inserted earlier in the
 * same transaction, undone when the call is refused. Rows by primary key, so nothing else is
 * touched.
 */
export async function deleteInserted(
  tx: SqlRunner,
  names: MigrationNames,
  rowIds: readonly string[],
): Promise<void> {
  if (isMysql(names)) return mysqlDeleteInserted(tx, names, rowIds);
  if (rowIds.length === 0) return;
  await runSql(tx, `delete from ${names.table('outbox')} where id = any(?::bigint[])`, [
    `{${rowIds.join(',')}}`,
  ]);
}
