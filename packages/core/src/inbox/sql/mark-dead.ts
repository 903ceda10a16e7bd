import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import type { MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlMarkDead } from './mysql/mark-dead';

/**
 * Writes the FAILED_FINAL record that marks a message as dead-lettered, so its redeliveries
 * are acknowledged without running the handler. `insert … on conflict do nothing`: resolves
 * to false when the message already has a record (handled, dead-lettered, or another
 * payload under the same id). No conflict target, for the partitioned layout (see
 * `claim-messages.ts`). @internal
 */
export async function markDead(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  retentionMs: number,
  message: MessageKey & { fingerprint: string; attempt: number; reason: string; code: string },
): Promise<boolean> {
  if (isMysql(names)) return mysqlMarkDead(db, names, consumer, retentionMs, message);
  const result = await runSql(
    db,
    `insert into ${names.table('inbox_records')}
       (scope, consumer, message_id, status, fingerprint, attempts, error, expires_at)
     values (?, ?, ?, 'FAILED_FINAL', ?, ?, ?::jsonb,
             now() + ?::double precision * interval '1 millisecond')
     on conflict do nothing
     returning message_id`,
    [
      message.scope,
      consumer,
      message.messageId,
      message.fingerprint,
      message.attempt,
      JSON.stringify({ reason: message.reason, code: message.code }),
      retentionMs,
    ],
  );
  return rowsOf(result).length > 0;
}
