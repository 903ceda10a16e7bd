import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, keyOf, type MessageKey } from './message-key';

/** What the dedup table holds for a message. @internal */
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
          `select scope, key, status, request_hash from ${names.table('idempotency')}
            where scope = ? and operation = ? and key = ?`,
          [only.scope, consumer, only.messageId],
        )
      : await runSql(
          db,
          `select i.scope, i.key, i.status, i.request_hash
             from ${names.table('idempotency')} i
             join unnest(?::text[], ?::text[]) as m (scope, key)
               on i.scope = m.scope and i.key = m.key
            where i.operation = ?`,
          [...keyArrays(keys), consumer],
        );
  const records = new Map<string, StoredRecord>();
  for (const row of rowsOf<{
    scope: string;
    key: string;
    status: string;
    request_hash: string | null;
  }>(result)) {
    records.set(keyOf({ scope: row.scope, messageId: row.key }), {
      status: row.status,
      requestHash: row.request_hash,
    });
  }
  return records;
}
