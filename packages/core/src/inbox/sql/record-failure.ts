import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import type { MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlRecordFailure } from './mysql/record-failure';

/** What is kept of a handler error: never the payload. @internal */
export interface StoredError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
}

/**
 * Records the error of a failed attempt, in autocommit after the business transaction
 * rolled back. The attempt itself was already counted; when counting was skipped (a first
 * delivery) this creates the row with a count of 1. @internal
 */
export async function recordFailure(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  key: MessageKey,
  error: StoredError,
): Promise<void> {
  if (isMysql(names)) return mysqlRecordFailure(db, names, consumer, key, error);
  await db.raw(
    `insert into ${names.table('inbox_attempts')} as a
       (scope, consumer, message_id, attempts, last_error)
     values (?, ?, ?, 1, ?::jsonb)
     on conflict (scope, consumer, message_id) do update
       set last_error = excluded.last_error, last_attempt_at = now(), shared = false,
           open_since = null`,
    [key.scope, consumer, key.messageId, JSON.stringify(error)],
  );
}
