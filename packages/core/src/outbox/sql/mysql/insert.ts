import { runSql, type SqlRunner } from '../../../transactions/sql';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import type { EncodedEvent } from '../../encode';

/** `?, ?, …` for `count` bindings. */
function marks(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** True for MySQL's duplicate key error (mysql2's code, or errno 1062). */
function isDuplicateKey(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown };
  return code === 'ER_DUP_ENTRY' || errno === 1062;
}

/** The row ids of these message ids, as this transaction sees them. */
async function rowIds(
  tx: SqlRunner,
  names: MigrationNames,
  messageIds: readonly string[],
): Promise<Map<string, string>> {
  const result = await runSql(
    tx,
    `select id, message_id from ${names.table('outbox')}
     where message_id in (${marks(messageIds.length)})`,
    messageIds,
  );
  const found = new Map<string, string>();
  for (const row of rowsOf<{ id: unknown; message_id: string }>(result)) {
    found.set(row.message_id, String(row.id as string | number));
  }
  return found;
}

/**
 * MySQL's {@link insertEvents}: the same result (the rows inserted, message id → row id, an id
 * already present skipped), reached differently. There is no `on conflict do nothing …
 * returning`: `insert ignore` would also turn other errors into warnings (a value too long,
 * a failed check) and `on duplicate key update` reports no row ids. So a plain insert runs,
 * and its row ids are read back by message id (the unique key makes them this statement's);
 * a duplicate fails the statement, which InnoDB takes back whole while the transaction stays
 * usable, and the insert is run again without the ids found present — the rows PostgreSQL's
 * `do nothing` would have left. A concurrent transaction inserting the same id makes this
 * insert wait on the unique key until it ends, as on PostgreSQL. There is no NOTIFY:
 * `channel` is ignored and relays poll (see `relay/listener.ts`).
 */
export async function mysqlInsertEvents(
  tx: SqlRunner,
  names: MigrationNames,
  events: readonly EncodedEvent[],
  _channel: string | null,
): Promise<Map<string, string>> {
  let pending = events;
  for (;;) {
    if (pending.length === 0) return new Map();
    const bindings: unknown[] = [];
    for (const e of pending) {
      bindings.push(e.destination, e.key, e.messageId, e.headersJson, e.payload);
    }
    try {
      await runSql(
        tx,
        `insert into ${names.table('outbox')}
           (destination, partition_key, message_id, headers, payload)
         values ${pending.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        bindings,
      );
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Another transaction may commit one more of these ids meanwhile: then this loops again.
      const present = await rowIds(
        tx,
        names,
        pending.map((e) => e.messageId),
      );
      const rest = pending.filter((e) => !present.has(e.messageId));
      // Nothing found: the duplicate is not of this table's ids (the call's ids are unique).
      if (rest.length === pending.length) throw error;
      pending = rest;
      continue;
    }
    return rowIds(
      tx,
      names,
      pending.map((e) => e.messageId),
    );
  }
}

/** MySQL's {@link deleteInserted}: by primary key, one binding per id. */
export async function mysqlDeleteInserted(
  tx: SqlRunner,
  names: MigrationNames,
  rowIds: readonly string[],
): Promise<void> {
  if (rowIds.length === 0) return;
  await runSql(
    tx,
    `delete o from ${names.table('outbox')} o force index (primary)
     where o.id in (${rowIds.map(() => 'cast(? as signed)').join(', ')})`,
    rowIds,
  );
}
