import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { isMysql } from '../../store/dialect';
import { mysqlFindDeadLetter } from './mysql/find-dead-letter';

/** The id and reason of the letter kept for one message and fingerprint, if any. @internal */
export async function findDeadLetter(
  db: SqlRunner,
  names: MigrationNames,
  key: { scope: string; consumer: string; messageId: string; fingerprint: string },
): Promise<{ id: string; reason: string } | undefined> {
  if (isMysql(names)) return mysqlFindDeadLetter(db, names, key);
  const result = await runSql(
    db,
    `select id::text as id, reason from ${names.table('dead_letters')}
      where scope = ? and consumer = ? and message_id = ? and fingerprint = ? and dedupe`,
    [key.scope, key.consumer, key.messageId, key.fingerprint],
  );
  return rowsOf<{ id: string; reason: string }>(result)[0];
}
