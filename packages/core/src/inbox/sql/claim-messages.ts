import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { preparedOn, type StatementStore } from '../../store/prepared';
import { statementCache } from '../../store/statement-cache';
import { keyArrays, keyOf, type MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlClaimMessage, mysqlClaimMessages } from './mysql/claim-messages';

/** A message to claim for handling. @internal */
export interface MessageToClaim extends MessageKey {
  readonly fingerprint: string;
  readonly attempt: number;
}

/** The claim of a message for one of its attempts. @internal */
export function toClaim(
  message: MessageKey & { readonly fingerprint: string },
  attempt: number,
): MessageToClaim {
  return {
    scope: message.scope,
    messageId: message.messageId,
    fingerprint: message.fingerprint,
    attempt,
  };
}

const EXPIRES = `now() + ?::double precision * interval '1 millisecond'`;
/**
 * No conflict target: on the partitioned layout the primary key includes `created_at`, and a
 * trigger skips a record whose key another partition holds (store/partitions/dedup-trigger.ts),
 * which `returning` reports as a conflict. On the plain layout the primary key is the only
 * unique index, so this is the same as naming it.
 */
const CONFLICT = `on conflict do nothing returning scope, message_id`;

function claimedKeys(result: unknown): Set<string> {
  const claimed = new Set<string>();
  for (const row of rowsOf<{ scope: string; message_id: string }>(result)) {
    claimed.add(keyOf({ scope: row.scope, messageId: row.message_id }));
  }
  return claimed;
}

/** The claim of one message, with or without the clearing of its attempt counter. */
const claimOne = statementCache((names, clearCounter: boolean) => {
  const insert = `insert into ${names.table('inbox_records')}
       (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
     values (?, ?, ?, 'SUCCEEDED', ?, ?, ${EXPIRES})
     ${CONFLICT}`;
  return clearCounter
    ? `with cleared as (
         delete from ${names.table('inbox_attempts')}
          where scope = ? and consumer = ? and message_id = ?
       )
       ${insert}`
    : insert;
});

/**
 * The dedup insert of one message, in its business transaction: `insert … on conflict do
 * nothing` of a SUCCEEDED record. A record another transaction is inserting makes this one
 * wait on the unique index until that one commits (then it is a conflict) or rolls back
 * (then this insert goes through). With `clearCounter`, the same statement deletes the
 * message's attempt counter, which is not needed once the record commits and comes back with
 * a rollback; the insert runs before that delete (an unreferenced data-modifying `with` runs
 * after the main statement), so every path locks the record before the counter. A delivery
 * that skipped counting has no counter to clear (a stray one from an earlier delivery is
 * removed by retention). Resolves to whether the record is new. @internal
 */
export async function claimMessage(
  db: SqlRunner,
  store: StatementStore,
  consumer: string,
  retentionMs: number,
  message: MessageToClaim,
  clearCounter = true,
): Promise<boolean> {
  if (isMysql(store)) {
    return mysqlClaimMessage(db, store, consumer, retentionMs, message, clearCounter);
  }
  const values = [
    message.scope,
    consumer,
    message.messageId,
    message.fingerprint,
    message.attempt,
    retentionMs,
  ];
  const result = clearCounter
    ? await preparedOn(store, db, claimOne(store.names, true), [
        message.scope,
        consumer,
        message.messageId,
        ...values,
      ])
    : await preparedOn(store, db, claimOne(store.names, false), values);
  return rowsOf(result).length > 0;
}

/**
 * The dedup insert of a batch: one multi-row `insert … on conflict do nothing`, rows in the
 * order given (callers sort them by key, so two batches lock in the same order and cannot
 * deadlock). Resolves to the keys ({@link keyOf}) that were new. @internal
 */
export async function claimMessages(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  retentionMs: number,
  messages: readonly MessageToClaim[],
): Promise<Set<string>> {
  if (isMysql(names)) return mysqlClaimMessages(db, names, consumer, retentionMs, messages);
  const result = await runSql(
    db,
    `insert into ${names.table('inbox_records')}
       (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
     select m.scope, ?, m.message_id, 'SUCCEEDED', m.fingerprint, m.attempts, ${EXPIRES}
       from unnest(?::text[], ?::text[], ?::text[], ?::integer[]) with ordinality
            as m (scope, message_id, fingerprint, attempts, ord)
      order by m.ord
     ${CONFLICT}`,
    [
      consumer,
      retentionMs,
      ...keyArrays(messages),
      messages.map((m) => m.fingerprint),
      messages.map((m) => m.attempt),
    ],
  );
  return claimedKeys(result);
}
