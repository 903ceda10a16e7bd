import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, keyOf, type MessageKey } from './message-key';

/** A message to count a delivery of; `initial` is the count when no row exists yet. @internal */
export interface AttemptToCount extends MessageKey {
  readonly initial: number;
}

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
): Promise<Map<string, number>> {
  const table = names.table('inbox_attempts');
  // A count shared with a whole batch becomes this message's own on its next count alone
  // (see migration 007), rather than charging it a second attempt for its batch-mate's crash.
  const upsert = `on conflict (scope, consumer, message_id) do update
       set attempts = case when a.shared then a.attempts else a.attempts + 1 end,
           shared = false, last_attempt_at = now()
     returning scope, message_id, attempts`;
  const only = messages.length === 1 && !shared ? messages[0] : undefined;
  const result =
    only !== undefined
      ? await db.raw(
          `insert into ${table} as a (scope, consumer, message_id, attempts)
           values (?, ?, ?, ?) ${upsert}`,
          [only.scope, consumer, only.messageId, only.initial],
        )
      : await db.raw(
          `insert into ${table} as a (scope, consumer, message_id, attempts, shared)
           select m.scope, ?, m.message_id, m.initial, ?
             from unnest(?::text[], ?::text[], ?::integer[]) with ordinality
                  as m (scope, message_id, initial, ord)
            order by m.ord
           ${upsert}`,
          [consumer, shared, ...keyArrays(messages), messages.map((m) => m.initial)],
        );
  const counts = new Map<string, number>();
  for (const row of rowsOf<{ scope: string; message_id: string; attempts: number }>(result)) {
    counts.set(keyOf({ scope: row.scope, messageId: row.message_id }), Number(row.attempts));
  }
  return counts;
}
