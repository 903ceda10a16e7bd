import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { keyArrays, type MessageKey } from './message-key';

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
  if (failed.length > 0) {
    await runSql(
      db,
      `delete from ${names.table('idempotency')} i
        using unnest(?::text[], ?::text[]) as m (scope, key)
        where i.operation = ? and i.status = 'SUCCEEDED' and i.scope = m.scope and i.key = m.key`,
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
