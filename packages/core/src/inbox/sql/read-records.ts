import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, keyOf, type MessageKey } from './message-key';

/** What the inbox's dedup record (`inbox_records`) holds for a message. @internal */
export interface StoredRecord {
  readonly status: string;
  readonly requestHash: string | null;
}

/** Reads the dedup records of messages, by {@link keyOf}. @internal */
export async function readRecords(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
): Promise<Map<string, StoredRecord>> {
  const only = keys.length === 1 ? keys[0] : undefined;
  const result =
    only !== undefined
      ? await runSql(
          db,
          `select scope, message_id, status, fingerprint from ${names.table('inbox_records')}
            where scope = ? and consumer = ? and message_id = ?`,
          [only.scope, consumer, only.messageId],
        )
      : await runSql(
          db,
          `select r.scope, r.message_id, r.status, r.fingerprint
             from ${names.table('inbox_records')} r
             join unnest(?::text[], ?::text[]) as m (scope, message_id)
               on r.scope = m.scope and r.message_id = m.message_id
            where r.consumer = ?`,
          [...keyArrays(keys), consumer],
        );
  const records = new Map<string, StoredRecord>();
  for (const row of rowsOf<{
    scope: string;
    message_id: string;
    status: string;
    fingerprint: string | null;
  }>(result)) {
    records.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
      status: row.status,
      requestHash: row.fingerprint,
    });
  }
  return records;
}
