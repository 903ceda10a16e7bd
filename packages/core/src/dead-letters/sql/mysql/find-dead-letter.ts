import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';

/** MySQL's `findDeadLetter`, by the deduplicated letters' unique key. @internal */
export async function mysqlFindDeadLetter(
  db: SqlRunner,
  names: MigrationNames,
  key: { scope: string; consumer: string; messageId: string; fingerprint: string },
): Promise<{ id: string; reason: string } | undefined> {
  const result = await runSql(
    db,
    `select cast(id as char) as id, reason from ${names.table('dead_letters')}
      where scope = ? and consumer = ? and message_id = ? and dedupe_fingerprint = ?`,
    [key.scope, key.consumer, key.messageId, key.fingerprint],
  );
  return rowsOf<{ id: string; reason: string }>(result)[0];
}
