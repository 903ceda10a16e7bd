import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import type { MessageKey } from '../message-key';
import { isDuplicateKey } from './message-key';

/**
 * MySQL's `markDead`: a plain insert whose duplicate-key error means the message already has
 * a record (see `claim-messages.ts` for why not `on duplicate key update`). @internal
 */
export async function mysqlMarkDead(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  retentionMs: number,
  message: MessageKey & { fingerprint: string; attempt: number; reason: string; code: string },
): Promise<boolean> {
  try {
    await runSql(
      db,
      `insert into ${names.table('inbox_records')}
         (scope, consumer, message_id, status, fingerprint, attempts, error, expires_at)
       values (?, ?, ?, 'FAILED_FINAL', ?, ?, ?,
               current_timestamp(6) + interval ? microsecond)`,
      [
        message.scope,
        consumer,
        message.messageId,
        message.fingerprint,
        message.attempt,
        JSON.stringify({ reason: message.reason, code: message.code }),
        retentionMs * 1000,
      ],
    );
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}
