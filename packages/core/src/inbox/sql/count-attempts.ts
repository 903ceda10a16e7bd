import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, keyOf, type MessageKey } from './message-key';

/** A message to count a delivery of; `initial` is the count when no row exists yet. @internal */
export interface AttemptToCount extends MessageKey {
  readonly initial: number;
}

/** A message's stored count after counting one more delivery. @internal */
export interface CountedAttempt {
  readonly attempts: number;
  /**
   * The previous attempt was counted within {@link OVERLAP_MS}, has not reported a failure,
   * and the session that counted it is alive: it may still be on its way to the dedup record,
   * so this delivery may be a copy delivered at the same time.
   */
  readonly overlapped: boolean;
}

/**
 * How close after an unfinished attempt's count a new count may mean "a copy delivered at
 * the same time": the gap from counting to the dedup record is a pool checkout and two round
 * trips. Past it, an attempt that never finished in a live process counts as failed, so a
 * copy is retried at most for this long. @internal
 */
export const OVERLAP_MS = 1000;

/**
 * Counts one more delivery of each message, in autocommit, before any business transaction
 * opens, so the count survives a rollback or a crash. One statement for all messages (their
 * keys must be distinct), in the order given. `shared` marks new counters as charged to a
 * whole batch. Resolves to the stored counts by {@link keyOf}. @internal
 */
export async function countAttempts(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  messages: readonly AttemptToCount[],
  shared = false,
): Promise<Map<string, CountedAttempt>> {
  const table = names.table('inbox_attempts');
  // A count shared with a whole batch becomes this message's own on its next count alone
  // (see migration 007), rather than charging it a second attempt for its batch-mate's crash.
  const upsert = `on conflict (scope, consumer, message_id) do update
       set attempts = case when a.shared then a.attempts else a.attempts + 1 end,
           overlapped = case
             when a.open_since > now() - ${OVERLAP_MS} * interval '1 millisecond'
             then exists (select 1 from pg_stat_activity s
                           where s.pid = a.open_pid and s.backend_start <= a.open_since)
             else false end,
           open_since = now(), open_pid = pg_backend_pid(), shared = false,
           last_attempt_at = now()
     returning scope, message_id, attempts, overlapped`;
  const only = messages.length === 1 && !shared ? messages[0] : undefined;
  const result =
    only !== undefined
      ? await db.raw(
          `insert into ${table} as a (scope, consumer, message_id, attempts, open_since, open_pid)
           values (?, ?, ?, ?, now(), pg_backend_pid()) ${upsert}`,
          [only.scope, consumer, only.messageId, only.initial],
        )
      : await db.raw(
          `insert into ${table} as a
             (scope, consumer, message_id, attempts, shared, open_since, open_pid)
           select m.scope, ?, m.message_id, m.initial, ?, now(), pg_backend_pid()
             from unnest(?::text[], ?::text[], ?::integer[]) with ordinality
                  as m (scope, message_id, initial, ord)
            order by m.ord
           ${upsert}`,
          [consumer, shared, ...keyArrays(messages), messages.map((m) => m.initial)],
        );
  const counts = new Map<string, CountedAttempt>();
  type Row = { scope: string; message_id: string; attempts: number; overlapped: boolean };
  for (const row of rowsOf<Row>(result)) {
    counts.set(keyOf({ scope: row.scope, messageId: row.message_id }), {
      attempts: Number(row.attempts),
      overlapped: row.overlapped === true,
    });
  }
  return counts;
}
