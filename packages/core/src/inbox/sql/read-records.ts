import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { preparedOn, type StatementStore } from '../../store/prepared';
import { statementCache } from '../../store/statement-cache';
import { keyArrays, keyOf, type MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlReadChunk, mysqlReadRecords } from './mysql/read-records';

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
  if (isMysql(names)) return mysqlReadRecords(db, names, consumer, keys);
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
          // A probe of the primary key per message (see chunkRead), never a join.
          `select m.scope, m.message_id, r.status, r.fingerprint
             from unnest(?::text[], ?::text[]) as m (scope, message_id)
             cross join lateral (
               select status, fingerprint from ${names.table('inbox_records')} r
                where r.scope = m.scope and r.consumer = ? and r.message_id = m.message_id
                limit 1) r`,
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
 * The read of a chunk, one fixed text per store (a named prepared statement: PostgreSQL would
 * otherwise plan it on every batch). Primary-key probes only: each lateral subquery with its
 * `limit` is never flattened into a join, and takes no condition but the whole key, so the
 * planner has nothing to answer with but the primary key. A join, or a probe that also tests
 * `status = 'SUCCEEDED'`, lets it choose a scan of every entry of the consumer (in a primary
 * key that does not lead with the consumer, as the attempt counters' does not, or in the
 * partial index of handled records): cheap while its statistics say the table is small, a
 * chunk more for every row once it is not.
 */
const chunkRead = statementCache(
  (names: MigrationNames) => `select m.scope, m.message_id, r.status, r.fingerprint
       from unnest(?::text[], ?::text[]) as m (scope, message_id)
       cross join lateral (
         select status, fingerprint from ${names.table('inbox_records')} r
          where r.scope = m.scope and r.consumer = ? and r.message_id = m.message_id
          limit 1) r
      where r.status = 'SUCCEEDED'
     union all
     (select null, null, null, null
        from unnest(?::text[], ?::text[]) as m (scope, message_id)
        cross join lateral (
          select a.consumer from ${names.table('inbox_attempts')} a
           where a.scope = m.scope and a.consumer = ? and a.message_id = m.message_id
           limit 1) a
        left join lateral (
          select status from ${names.table('inbox_records')} r
           where r.scope = m.scope and r.consumer = a.consumer and r.message_id = m.message_id
           limit 1) r on true
       where r.status is distinct from 'SUCCEEDED'
       limit 1)`,
);

/**
 * One read for a batch before anything is counted or claimed: the committed `SUCCEEDED`
 * records of `keys` (those messages are duplicates, decided without a transaction or a
 * write), and whether any of `counting` (a subset of `keys`) that has no such record has an
 * attempt counter: an earlier delivery of it was counted and has not finished. @internal
 */
export async function readChunk(
  db: SqlRunner,
  store: StatementStore,
  consumer: string,
  keys: readonly MessageKey[],
  counting: readonly MessageKey[],
): Promise<ChunkRecords> {
  if (isMysql(store)) return mysqlReadChunk(db, store, consumer, keys, counting);
  const result = await preparedOn(store, db, chunkRead(store.names, undefined), [
    ...keyArrays(keys),
    consumer,
    ...keyArrays(counting),
    consumer,
  ]);
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
