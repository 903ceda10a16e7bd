import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import type { StatementStore } from '../../../store/prepared';
import type { MessageToClaim } from '../claim-messages';
import { keyOf } from '../message-key';
import { isDuplicateKey } from './message-key';

const EXPIRES = `current_timestamp(6) + interval ? microsecond`;
const ROW = `(?, ?, ?, 'SUCCEEDED', ?, ?, ${EXPIRES})`;

function insertRecords(names: MigrationNames, rows: number): string {
  return `insert into ${names.table('inbox_records')}
       (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
     values ${Array.from({ length: rows }, () => ROW).join(', ')}`;
}

function rowValues(consumer: string, retentionMs: number, m: MessageToClaim): unknown[] {
  return [m.scope, consumer, m.messageId, m.fingerprint, m.attempt, retentionMs * 1000];
}

/**
 * A plain insert, its duplicate-key error read as "the record exists". Not `insert … on
 * duplicate key update col = col`: mysql2 connects with CLIENT_FOUND_ROWS, under which that
 * reports one affected row for an insert and for a record left unchanged alike, so it could
 * not tell a claim from a duplicate; not `insert ignore`, which would also turn a too-long
 * id into a truncated one. A duplicate-key error undoes the statement only, and the
 * transaction goes on (MySQL does not abort it as PostgreSQL does). Like PostgreSQL's
 * `on conflict do nothing`, the insert of a key another transaction is inserting waits on its
 * lock until that one commits (a duplicate) or rolls back (then this one inserts).
 */
async function tryInsert(db: SqlRunner, sql: string, values: readonly unknown[]): Promise<boolean> {
  try {
    await runSql(db, sql, values);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}

/**
 * MySQL's `claimMessage` (see `../claim-messages.ts`): the record's insert, then the delete of
 * the attempt counter, in that order as on PostgreSQL (the record is locked before the
 * counter on every path). @internal
 */
export async function mysqlClaimMessage(
  db: SqlRunner,
  store: StatementStore,
  consumer: string,
  retentionMs: number,
  message: MessageToClaim,
  clearCounter = true,
): Promise<boolean> {
  const claimed = await tryInsert(
    db,
    insertRecords(store.names, 1),
    rowValues(consumer, retentionMs, message),
  );
  // Cleared whether or not the record is new, as PostgreSQL's `with cleared as (delete …)`.
  if (clearCounter) {
    await runSql(
      db,
      `delete from ${store.names.table('inbox_attempts')}
        where scope = ? and consumer = ? and message_id = ?`,
      [message.scope, consumer, message.messageId],
    );
  }
  return claimed;
}

/**
 * MySQL's `claimMessages`: one multi-row insert in the order given (callers sort by key, so
 * two batches lock in one order). A duplicate key fails the whole statement and undoes its
 * rows (their locks stay with the transaction); the batch is then claimed one row at a time,
 * still in key order, each duplicate telling its message was taken. The common batch (no
 * committed record among its messages, which were read before) pays one statement. @internal
 */
export async function mysqlClaimMessages(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  retentionMs: number,
  messages: readonly MessageToClaim[],
): Promise<Set<string>> {
  const claimed = new Set<string>();
  if (messages.length === 0) return claimed;
  const all = messages.flatMap((m) => rowValues(consumer, retentionMs, m));
  if (await tryInsert(db, insertRecords(names, messages.length), all)) {
    for (const m of messages) claimed.add(keyOf(m));
    return claimed;
  }
  const one = insertRecords(names, 1);
  for (const m of messages) {
    if (await tryInsert(db, one, rowValues(consumer, retentionMs, m))) claimed.add(keyOf(m));
  }
  return claimed;
}
