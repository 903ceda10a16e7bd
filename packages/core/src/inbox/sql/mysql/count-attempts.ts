import { rowsOf } from '../../../store/migrate';
import { knexRunner, poolRunner, runSql } from '../../../transactions/sql';
import {
  OVERLAP_MS,
  type AttemptToCount,
  type CountedAttempt,
  type CountingStore,
} from '../count-attempts';
import { keyOf } from '../message-key';
import { keyPairs, mysqlBoolean } from './message-key';

/**
 * The counter upsert's update, PostgreSQL's `UPSERT` in MySQL's terms. MySQL assigns left to
 * right, each assignment seeing the columns already assigned, so the order is the logic:
 * `overlapped` first, from the old `open_since` and `open_pid`; then `attempts` from the old
 * `shared`; then `open_since` and `open_pid`, which keep the open attempt's (their old values)
 * when the new count passes `maxAttempts` while it is open. The session is alive when
 * `information_schema.processlist` lists its connection id: MySQL never reuses an id while the
 * server runs (it counts up), so the check of the session's start PostgreSQL needs for a
 * recycled pid has no twin here. Every process of a store connects as one user, and a user
 * sees its own sessions there without the PROCESS privilege. A function: `OVERLAP_MS` comes
 * from the module that imports this one.
 */
const update = (): string => `overlapped = coalesce(
         open_since > current_timestamp(6) - interval ${OVERLAP_MS * 1000} microsecond
           and exists (select 1 from information_schema.processlist s where s.id = open_pid),
         false),
       attempts = if(shared, attempts, attempts + 1),
       open_since = if(attempts > ? and overlapped, open_since, current_timestamp(6)),
       open_pid = if(attempts > ? and overlapped, open_pid, connection_id()),
       shared = false,
       last_attempt_at = current_timestamp(6)`;

/**
 * MySQL's `countAttempts` (see `../count-attempts.ts`): no data-modifying CTE and no
 * `returning`, so three statements, still before any business transaction: the read of the
 * committed `SUCCEEDED` records (a plain read, as PostgreSQL's CTE is), then, in one short
 * transaction of their own, the counter upsert of the other messages in the order given and
 * the read of the counts it left. The upsert keeps the counters locked until the commit, so
 * the counts read back are this transaction's, never a concurrent count's. @internal
 */
export async function mysqlCountAttempts(
  store: CountingStore,
  consumer: string,
  maxAttempts: number,
  messages: readonly AttemptToCount[],
  shared = false,
): Promise<Map<string, CountedAttempt>> {
  const { names } = store;
  const counts = new Map<string, CountedAttempt>();
  const all = keyPairs(messages);
  const handled = rowsOf<{ scope: string; message_id: string; fingerprint: string | null }>(
    await runSql(
      poolRunner(store.knex),
      `select scope, message_id, fingerprint from ${names.table('inbox_records')}
        where consumer = ? and (scope, message_id) in (${all.sql}) and status = 'SUCCEEDED'`,
      [consumer, ...all.bindings],
    ),
  );
  for (const row of handled) {
    counts.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
      attempts: 0,
      overlapped: false,
      handled: { status: 'SUCCEEDED', requestHash: row.fingerprint },
    });
  }
  const toCount = messages.filter((m) => !counts.has(keyOf(m)));
  // A known duplicate costs this one read, as on PostgreSQL: no transaction, no write.
  if (toCount.length === 0) return counts;
  await store.knex.transaction(async (trx) => {
    const db = knexRunner(trx);
    const values: unknown[] = [];
    for (const m of toCount) values.push(m.scope, consumer, m.messageId, m.initial, shared);
    await runSql(
      db,
      `insert into ${names.table('inbox_attempts')}
         (scope, consumer, message_id, attempts, shared, open_since, open_pid)
       values ${toCount.map(() => '(?, ?, ?, ?, ?, current_timestamp(6), connection_id())').join(', ')}
       on duplicate key update ${update()}`,
      [...values, maxAttempts, maxAttempts],
    );
    const keys = keyPairs(toCount);
    const rows = rowsOf<{
      scope: string;
      message_id: string;
      attempts: number | string;
      overlapped: unknown;
    }>(
      await runSql(
        db,
        `select scope, message_id, attempts, overlapped from ${names.table('inbox_attempts')}
          where consumer = ? and (scope, message_id) in (${keys.sql})`,
        [consumer, ...keys.bindings],
      ),
    );
    for (const row of rows) {
      counts.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
        attempts: Number(row.attempts),
        overlapped: mysqlBoolean(row.overlapped),
      });
    }
  });
  return counts;
}
