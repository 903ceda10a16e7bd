import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import type { MessageKey } from '../message-key';
import type { StoredError } from '../record-failure';
import type { TakenAttempts } from '../take-attempts';
import { mysqlJson } from './message-key';

/**
 * MySQL's `takeAttempts`: no `delete … returning`, so the counter is read with `for update`
 * and then deleted, in the caller's transaction (the dead-lettering one): the lock keeps what
 * was read the row that is deleted. @internal
 */
export async function mysqlTakeAttempts(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  key: MessageKey,
): Promise<TakenAttempts | undefined> {
  const where = 'where scope = ? and consumer = ? and message_id = ?';
  const values = [key.scope, consumer, key.messageId];
  const row = rowsOf<{
    attempts: number | string;
    first_attempt_at: Date;
    last_error: StoredError | string | null;
  }>(
    await runSql(
      db,
      `select attempts, first_attempt_at, last_error from ${names.table('inbox_attempts')}
        ${where} for update`,
      values,
    ),
  )[0];
  if (row === undefined) return undefined;
  await runSql(db, `delete from ${names.table('inbox_attempts')} ${where}`, values);
  return {
    attempts: Number(row.attempts),
    firstAttemptAt:
      row.first_attempt_at instanceof Date ? row.first_attempt_at : new Date(row.first_attempt_at),
    lastError: mysqlJson(row.last_error),
  };
}
