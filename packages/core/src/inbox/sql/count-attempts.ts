import type { Store } from '../../store/store';
import { preparedOn } from '../../store/prepared';
import { statementCache } from '../../store/statement-cache';
import { poolRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, keyOf, type MessageKey } from './message-key';
import type { StoredRecord } from './read-records';
import { isMysql } from '../../store/dialect';
import { mysqlCountAttempts } from './mysql/count-attempts';

/** A message to count a delivery of; `initial` is the count when no row exists yet. @internal */
export interface AttemptToCount extends MessageKey {
  readonly initial: number;
}

/** A message's stored count after counting one more delivery. @internal */
export interface CountedAttempt {
  readonly attempts: number;
  /**
   * The previous attempt that went ahead was counted within {@link OVERLAP_MS}, has not
   * reported a failure, and the session that counted it is alive: it may still be on its way
   * to the dedup record, so this delivery may be a copy delivered at the same time.
   */
  readonly overlapped: boolean;
  /**
   * The message's committed `SUCCEEDED` dedup record, when the statement saw one: then
   * nothing was counted (`attempts` is 0) and the record decides the delivery, whatever
   * the count was.
   */
  readonly handled?: StoredRecord;
}

/**
 * How close after an unfinished attempt's count a new count may mean "a copy delivered at
 * the same time": the gap from counting to the dedup record is a pool checkout and two round
 * trips. Past it, an attempt that never finished in a live process counts as failed, so a
 * copy is retried at most for this long after the last attempt that went ahead. @internal
 */
export const OVERLAP_MS = 1000;

/**
 * The counter upsert. The previous attempt is "open" while it is under {@link OVERLAP_MS}
 * old, has not reported a failure, and its session is alive. A count that passes
 * `maxAttempts` (the statement's one binding) while another attempt is open is refused (see
 * `settleExhausted`): it leaves `open_since` and `open_pid` to that attempt, so refused copies
 * never keep each other refused; only an attempt that goes ahead restarts the window.
 */
const UPSERT = `on conflict (scope, consumer, message_id) do update
       set (attempts, overlapped, open_since, open_pid, shared, last_attempt_at) = (
         select n.attempts, n.open,
                case when n.attempts > ?::integer and n.open then a.open_since else now() end,
                case when n.attempts > ?::integer and n.open then a.open_pid
                     else pg_backend_pid() end,
                false, now()
           from (select case when a.shared then a.attempts else a.attempts + 1 end as attempts,
                        coalesce(a.open_since > now() - ${OVERLAP_MS} * interval '1 millisecond'
                          and exists (select 1 from pg_stat_activity s
                                       where s.pid = a.open_pid
                                         and s.backend_start <= a.open_since), false) as open
                ) n)
     returning a.scope, a.message_id, a.attempts, a.overlapped`;

/** Both shapes answer counted rows and handled records alike. */
const ANSWER = `select scope, message_id, attempts, overlapped, null::text as status,
                       null::text as fingerprint
                  from counted
                union all
                select scope, message_id, 0, false, status, fingerprint from handled`;

/** What counting needs of the store: its pool, its table names, whether to prepare. */
export type CountingStore = Pick<Store, 'knex' | 'names' | 'preparedStatements'>;

/**
 * The count of one message: its text is fixed per store, so it runs as a named prepared
 * statement (PostgreSQL would otherwise plan this long statement on every delivery).
 */
const countOne = statementCache(
  (names: MigrationNames) => `with handled as (
     select scope, message_id, status, fingerprint
       from (select scope, message_id, status, fingerprint from ${names.table('inbox_records')}
              where scope = ? and consumer = ? and message_id = ? limit 1) r
      where status = 'SUCCEEDED'
   ), counted as (
     insert into ${names.table('inbox_attempts')} as a
       (scope, consumer, message_id, attempts, open_since, open_pid)
     select ?::text, ?::text, ?::text, ?::integer, now(), pg_backend_pid()
      where not exists (select 1 from handled)
     ${UPSERT}
   )
   ${ANSWER}`,
);

/** The count of several messages, their keys passed as arrays: also one fixed text. */
const countMany = statementCache(
  (names: MigrationNames) => `with m as (
     select * from unnest(?::text[], ?::text[], ?::integer[]) with ordinality
              as m (scope, message_id, initial, ord)
   ), handled as (
     -- A probe of the primary key per message, on the whole key alone (see readChunk).
     select m.scope, m.message_id, r.status, r.fingerprint
       from m cross join lateral (
         select status, fingerprint from ${names.table('inbox_records')} r
          where r.scope = m.scope and r.consumer = ? and r.message_id = m.message_id
          limit 1) r
      where r.status = 'SUCCEEDED'
   ), counted as (
     insert into ${names.table('inbox_attempts')} as a
       (scope, consumer, message_id, attempts, shared, open_since, open_pid)
     select m.scope, ?::text, m.message_id, m.initial, ?::boolean, now(), pg_backend_pid()
       from m
      where not exists (select 1 from handled h
                         where h.scope = m.scope and h.message_id = m.message_id)
      order by m.ord
     ${UPSERT}
   )
   ${ANSWER}`,
);

/**
 * Counts one more delivery of each message, in autocommit, before any business transaction
 * opens, so the count survives a rollback or a crash. One statement for all messages (their
 * keys must be distinct), in the order given. A message that already has a committed
 * `SUCCEEDED` dedup record is not counted: the same statement reads that record and returns
 * it as {@link CountedAttempt.handled}, so a redelivery of a handled message is decided by its
 * record, never by a count that copies delivered together inflated. `shared` marks new
 * counters as charged to a whole batch. Resolves to the stored counts by {@link keyOf}.
 * @internal
 */
export async function countAttempts(
  store: CountingStore,
  consumer: string,
  maxAttempts: number,
  messages: readonly AttemptToCount[],
  shared = false,
): Promise<Map<string, CountedAttempt>> {
  if (isMysql(store)) return mysqlCountAttempts(store, consumer, maxAttempts, messages, shared);
  // A count shared with a whole batch becomes this message's own on its next count alone
  // (see migration 007), rather than charging it a second attempt for its batch-mate's crash.
  const only = messages.length === 1 && !shared ? messages[0] : undefined;
  const result =
    only !== undefined
      ? await preparedOn(store, poolRunner(store.knex), countOne(store.names, undefined), [
          only.scope,
          consumer,
          only.messageId,
          only.scope,
          consumer,
          only.messageId,
          only.initial,
          maxAttempts,
          maxAttempts,
        ])
      : await preparedOn(store, poolRunner(store.knex), countMany(store.names, undefined), [
          ...keyArrays(messages),
          messages.map((m) => m.initial),
          consumer,
          consumer,
          shared,
          maxAttempts,
          maxAttempts,
        ]);
  const counts = new Map<string, CountedAttempt>();
  type Row = {
    scope: string;
    message_id: string;
    attempts: number;
    overlapped: boolean;
    status: string | null;
    fingerprint: string | null;
  };
  for (const row of rowsOf<Row>(result)) {
    const key = keyOf({ scope: row.scope, messageId: row.message_id });
    counts.set(
      key,
      row.status === null
        ? { attempts: Number(row.attempts), overlapped: row.overlapped === true }
        : {
            attempts: 0,
            overlapped: false,
            handled: { status: row.status, requestHash: row.fingerprint },
          },
    );
  }
  return counts;
}
