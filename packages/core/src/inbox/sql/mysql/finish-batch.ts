import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import type { MessageKey } from '../message-key';
import { keyPairs } from './message-key';

/** MySQL's `finishBatch`: the same two deletes, keys as lists of pairs. @internal */
export async function mysqlFinishBatch(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  done: readonly MessageKey[],
  failed: readonly MessageKey[],
): Promise<void> {
  if (failed.length > 0) {
    const pairs = keyPairs(failed);
    await runSql(
      db,
      `delete from ${names.table('inbox_records')}
        where consumer = ? and (scope, message_id) in (${pairs.sql}) and status = 'SUCCEEDED'`,
      [consumer, ...pairs.bindings],
    );
  }
  if (done.length > 0) {
    const pairs = keyPairs(done);
    await runSql(
      db,
      `delete from ${names.table('inbox_attempts')}
        where consumer = ? and (scope, message_id) in (${pairs.sql})`,
      [consumer, ...pairs.bindings],
    );
  }
}
