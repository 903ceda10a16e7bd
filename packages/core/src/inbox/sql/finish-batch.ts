import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { keyArrays, type MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlFinishBatch } from './mysql/finish-batch';

/**
 * Ends a batch inside its transaction: deletes the dedup records of the messages whose
 * handler failed (so those follow the retry path), and the attempt counters of the messages
 * that are done (handled or duplicate). @internal
 */
export async function finishBatch(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  done: readonly MessageKey[],
  failed: readonly MessageKey[],
): Promise<void> {
  if (isMysql(names)) return mysqlFinishBatch(db, names, consumer, done, failed);
  if (failed.length > 0) {
    await runSql(
      db,
      `delete from ${names.table('inbox_records')} r
        using unnest(?::text[], ?::text[]) as m (scope, message_id)
        where r.consumer = ? and r.status = 'SUCCEEDED' and r.scope = m.scope
          and r.message_id = m.message_id`,
      [...keyArrays(failed), consumer],
    );
  }
  if (done.length > 0) {
    await runSql(
      db,
      `delete from ${names.table('inbox_attempts')} a
        using unnest(?::text[], ?::text[]) as m (scope, message_id)
        where a.consumer = ? and a.scope = m.scope and a.message_id = m.message_id`,
      [...keyArrays(done), consumer],
    );
  }
}
