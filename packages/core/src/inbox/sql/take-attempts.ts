import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import type { MessageKey } from './message-key';
import type { StoredError } from './record-failure';
import { isMysql } from '../../store/dialect';
import { mysqlTakeAttempts } from './mysql/take-attempts';

/** A message's attempt counter, as it was when removed. @internal */
export interface TakenAttempts {
  readonly attempts: number;
  readonly firstAttemptAt: Date;
  readonly lastError: StoredError | null;
}

/** Deletes a message's attempt counter and returns what it held, if anything. @internal */
export async function takeAttempts(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  key: MessageKey,
): Promise<TakenAttempts | undefined> {
  if (isMysql(names)) return mysqlTakeAttempts(db, names, consumer, key);
  const result = await runSql(
    db,
    `delete from ${names.table('inbox_attempts')}
      where scope = ? and consumer = ? and message_id = ?
      returning attempts, first_attempt_at, last_error`,
    [key.scope, consumer, key.messageId],
  );
  const row = rowsOf<{
    attempts: number;
    first_attempt_at: Date | string;
    last_error: StoredError | string | null;
  }>(result)[0];
  if (row === undefined) return undefined;
  return {
    attempts: Number(row.attempts),
    firstAttemptAt:
      row.first_attempt_at instanceof Date ? row.first_attempt_at : new Date(row.first_attempt_at),
    lastError:
      typeof row.last_error === 'string'
        ? (JSON.parse(row.last_error) as StoredError)
        : row.last_error,
  };
}
