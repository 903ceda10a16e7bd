import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import type { DeliveryFacts } from '../../transport/envelope';
import type { DeadLetterReason } from '../types';

/** Everything a dead letter stores. @internal */
export interface NewDeadLetter {
  readonly scope: string;
  readonly consumer: string;
  readonly messageId: string | null;
  /** Unique per (scope, consumer, message id, fingerprint) when true; a fresh row when false. */
  readonly dedupe: boolean;
  readonly fingerprint: string;
  readonly reason: DeadLetterReason;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly attempts: number;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly body: Uint8Array;
  readonly bodyIsText: boolean;
  readonly delivery: DeliveryFacts;
  readonly firstAttemptAt: Date | null;
}

/**
 * Writes a dead letter and returns its id. A letter that already exists for the same
 * message and fingerprint is re-armed (new reason and error, `requeued_at` cleared) rather
 * than duplicated. @internal
 */
export async function insertDeadLetter(
  db: Knex | Knex.Transaction,
  names: MigrationNames,
  letter: NewDeadLetter,
): Promise<string> {
  const result = await db.raw(
    `insert into ${names.table('dead_letters')} as d
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, partition_key, headers, body, body_is_text, delivery, first_attempt_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb, ?)
     on conflict (scope, consumer, message_id, fingerprint) where dedupe do update set
       reason = excluded.reason,
       error_code = excluded.error_code,
       error_message = excluded.error_message,
       attempts = excluded.attempts,
       headers = excluded.headers,
       delivery = excluded.delivery,
       first_attempt_at = coalesce(excluded.first_attempt_at, d.first_attempt_at),
       dead_at = now(),
       requeued_at = null
     returning id::text as id`,
    [
      letter.scope,
      letter.consumer,
      letter.messageId,
      letter.dedupe,
      letter.fingerprint,
      letter.reason,
      letter.errorCode,
      letter.errorMessage,
      letter.attempts,
      letter.key,
      JSON.stringify(letter.headers),
      Buffer.from(letter.body.buffer, letter.body.byteOffset, letter.body.byteLength),
      letter.bodyIsText,
      JSON.stringify(letter.delivery),
      letter.firstAttemptAt,
    ],
  );
  const id = rowsOf<{ id: string }>(result)[0]?.id;
  if (id === undefined) throw new Error('dead letter insert returned no id');
  return id;
}
