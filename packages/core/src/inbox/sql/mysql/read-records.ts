import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import type { StatementStore } from '../../../store/prepared';
import { keyOf, type MessageKey } from '../message-key';
import type { ChunkRecords, StoredRecord } from '../read-records';
import { keyPairs } from './message-key';

interface RecordRow {
  scope: string;
  message_id: string;
  status: string;
  fingerprint: string | null;
}

function byKey(rows: readonly RecordRow[]): Map<string, StoredRecord> {
  const records = new Map<string, StoredRecord>();
  for (const row of rows) {
    records.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
      status: row.status,
      requestHash: row.fingerprint,
    });
  }
  return records;
}

/**
 * MySQL's `readRecords`: the keys as a list of pairs, which InnoDB reads as that many probes
 * of the primary key. @internal
 */
export async function mysqlReadRecords(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
): Promise<Map<string, StoredRecord>> {
  if (keys.length === 0) return new Map();
  const pairs = keyPairs(keys);
  const result = await runSql(
    db,
    `select scope, message_id, status, fingerprint from ${names.table('inbox_records')}
      where consumer = ? and (scope, message_id) in (${pairs.sql})`,
    [consumer, ...pairs.bindings],
  );
  return byKey(rowsOf<RecordRow>(result));
}

/**
 * MySQL's `readChunk`: the committed `SUCCEEDED` records of `keys`, and whether one of
 * `counting` without such a record has an attempt counter, in one statement. @internal
 */
export async function mysqlReadChunk(
  db: SqlRunner,
  store: StatementStore,
  consumer: string,
  keys: readonly MessageKey[],
  counting: readonly MessageKey[],
): Promise<ChunkRecords> {
  const { names } = store;
  const all = keyPairs(keys);
  const handledSql = `select scope, message_id, status, fingerprint
       from ${names.table('inbox_records')}
      where consumer = ? and (scope, message_id) in (${all.sql}) and status = 'SUCCEEDED'`;
  if (counting.length === 0) {
    const result = await runSql(db, handledSql, [consumer, ...all.bindings]);
    return { handled: byKey(rowsOf<RecordRow>(result)), unfinished: false };
  }
  const some = keyPairs(counting);
  const result = await runSql(
    db,
    `${handledSql}
     union all
     (select null, null, null, null
        from ${names.table('inbox_attempts')} a
       where a.consumer = ? and (a.scope, a.message_id) in (${some.sql})
         and not exists (select 1 from ${names.table('inbox_records')} r
                          where r.consumer = a.consumer and r.scope = a.scope
                            and r.message_id = a.message_id and r.status = 'SUCCEEDED')
       limit 1)`,
    [consumer, ...all.bindings, consumer, ...some.bindings],
  );
  const rows = rowsOf<Partial<RecordRow> & { scope: string | null }>(result);
  const handled = byKey(
    rows.filter((r): r is RecordRow => r.scope !== null && r.scope !== undefined),
  );
  return { handled, unfinished: rows.some((r) => r.scope === null) };
}
