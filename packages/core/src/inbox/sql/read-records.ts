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

/** What {@link readChunk} found for a batch's messages before any of them is counted. @internal */
export interface ChunkRecords {
  /** The committed `SUCCEEDED` dedup records among the messages, by {@link keyOf}. */
  readonly handled: Map<string, StoredRecord>;
  /** Some message of `counting` without a `SUCCEEDED` record has an attempt counter. */
  readonly unfinished: boolean;
}

/**
 * One read for a batch before anything is counted or claimed: the committed `SUCCEEDED`
 * records of `keys` (those messages are duplicates, decided without a transaction or a
 * write), and whether any of `counting` (a subset of `keys`) that has no such record has an
 * attempt counter: an earlier delivery of it was counted and has not finished. Primary-key
 * lookups only: the lateral subquery with its `limit` is never flattened into a join, so the
 * records are probed by key whatever the planner thinks of the table's size (a hash join over
 * a scan of the whole table costs a chunk more the more records it holds). @internal
 */
export async function readChunk(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
  counting: readonly MessageKey[],
): Promise<ChunkRecords> {
  const records = names.table('inbox_records');
  const result = await runSql(
    db,
    `select m.scope, m.message_id, r.status, r.fingerprint
       from unnest(?::text[], ?::text[]) as m (scope, message_id)
       cross join lateral (
         select status, fingerprint from ${records} r
          where r.scope = m.scope and r.consumer = ? and r.message_id = m.message_id
            and r.status = 'SUCCEEDED'
          limit 1) r
     union all
     (select null, null, null, null
        from unnest(?::text[], ?::text[]) as m (scope, message_id)
        join ${names.table('inbox_attempts')} a
          on a.scope = m.scope and a.consumer = ? and a.message_id = m.message_id
       where not exists (select 1 from ${records} r
                          where r.scope = m.scope and r.consumer = ?
                            and r.message_id = m.message_id and r.status = 'SUCCEEDED')
       limit 1)`,
    [...keyArrays(keys), consumer, ...keyArrays(counting), consumer, consumer],
  );
  const handled = new Map<string, StoredRecord>();
  let unfinished = false;
  for (const row of rowsOf<{
    scope: string | null;
    message_id: string | null;
    status: string | null;
    fingerprint: string | null;
  }>(result)) {
    if (row.scope === null || row.message_id === null || row.status === null) {
      unfinished = true;
      continue;
    }
    handled.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
      status: row.status,
      requestHash: row.fingerprint,
    });
  }
  return { handled, unfinished };
}
