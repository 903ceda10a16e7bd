import { runSql, type SqlRunner } from '../../transactions/sql';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import { ConfigurationError } from '../../errors';
import {
  DISTRIBUTION_COLUMN,
  distributionKeyOf,
  outboxInsertShape,
  type StoreDistribution,
} from '../../store/distribution';
import type { EncodedEvent } from '../encode';
import { isMysql } from '../../store/dialect';
import { mysqlDeleteInserted, mysqlInsertEvents } from './mysql/insert';

/**
 * Inserts events in the caller's transaction and, when `channel` is given, queues a
 * notification on it in the same statement (PostgreSQL delivers it at commit, never on
 * rollback). An id already present is skipped: by the unique `message_id` on the plain
 * layout, under the same distribution key on a distributable schema, by the dedup trigger
 * across partitions on the partitioned layout (which has no unique key on `message_id` alone
 * to name as the conflict target, hence none is named). Resolves to the rows actually
 * inserted: their message id mapped to their row id, so the caller can undo exactly these rows.
 */
export async function insertEvents(
  tx: SqlRunner,
  names: MigrationNames,
  events: readonly EncodedEvent[],
  channel: string | null,
  distribution: StoreDistribution = 'none',
): Promise<Map<string, string>> {
  if (isMysql(names)) return mysqlInsertEvents(tx, names, events, channel);
  const shape = outboxInsertShape(distribution);
  const values: string[] = [];
  const bindings: unknown[] = [];
  for (const e of events) {
    values.push(shape.row);
    bindings.push(e.destination, e.key, e.messageId, e.headersJson, e.payload);
    if (distribution === 'distributable') bindings.push(distributionKeyOf(e.key, e.messageId));
  }
  const insert = `insert into ${names.table('outbox')} (${shape.columns})
    values ${values.join(', ')}
    on conflict do nothing
    returning id, message_id`;
  const sql =
    channel === null
      ? `with ins as (${insert}) select id, message_id from ins`
      : `with ins as (${insert}), note as (select pg_notify(?, '') as sent)
         select ins.id, ins.message_id from note left join ins on true`;
  if (channel !== null) bindings.push(channel);
  const result = await runSql(tx, sql, bindings).catch((error: unknown) => {
    throw keysMismatch(error, distribution);
  });
  const inserted = new Map<string, string>();
  for (const row of rowsOf<{ id: unknown; message_id: string | null }>(result)) {
    if (row.message_id !== null) inserted.set(row.message_id, String(row.id));
  }
  return inserted;
}

/**
 * The store's `distribution` and the outbox's keys disagree when the insert leaves the
 * distribution column null (23502 on that column: a store without the option on a
 * distributable schema) or finds no such column (42703: a store with it on a schema its
 * `migrate()` has not converted): a {@link ConfigurationError} that names the fix instead of
 * the server's words.
 */
function keysMismatch(error: unknown, distribution: StoreDistribution): unknown {
  const { code, column } = (error ?? {}) as { code?: unknown; column?: unknown };
  const unset = code === '23502' && column === DISTRIBUTION_COLUMN;
  if (!unset && code !== '42703') return error;
  return new ConfigurationError(
    distribution === 'distributable'
      ? `the outbox has no ${DISTRIBUTION_COLUMN} column: run store.migrate() on a store with distribution 'distributable' first (docs/scaling.md)`
      : `the outbox's schema is distributable: open the store with distribution 'distributable' (docs/scaling.md)`,
    { distribution, code },
  );
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
