import type { Knex } from 'knex';
import type { MigrationNames } from '../../../store/migration';
import type { MessageKey } from '../message-key';
import type { StoredError } from '../record-failure';

/**
 * MySQL's `recordFailure`: `on duplicate key update` with the inserted row's `values()` for
 * PostgreSQL's `excluded` (MariaDB has no `as new` alias; MySQL 8 still takes `values()`). @internal
 */
export async function mysqlRecordFailure(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  key: MessageKey,
  error: StoredError,
): Promise<void> {
  await db.raw(
    `insert into ${names.table('inbox_attempts')}
       (scope, consumer, message_id, attempts, last_error)
     values (?, ?, ?, 1, ?)
     on duplicate key update
       last_error = values(last_error), last_attempt_at = current_timestamp(6), shared = false,
       open_since = null`,
    [key.scope, consumer, key.messageId, JSON.stringify(error)],
  );
}
