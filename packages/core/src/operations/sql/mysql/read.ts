import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import type { ReadRow } from '../read';
import type { IdempotencyRow, RecordKey } from '../row';
import { NOW, RECORD_COLUMNS, truth } from './row';

/** @internal MySQL's `readRow`: reads one record without locking it. */
export async function mysqlReadRow(
  db: SqlRunner,
  names: MigrationNames,
  record: RecordKey,
): Promise<ReadRow | undefined> {
  const result = await runSql(
    db,
    `select ${RECORD_COLUMNS},
            coalesce(expires_at <= ${NOW}, false) as expired,
            coalesce(lease_until > ${NOW}, false) as lease_live
       from ${names.table('idempotency')}
      where scope = ? and operation = ? and \`key\` = ?`,
    [record.scope, record.operation, record.key],
  );
  const row = rowsOf<IdempotencyRow & { expired: unknown; lease_live: unknown }>(result)[0];
  if (row === undefined) return undefined;
  const { expired, lease_live: leaseLive, ...rest } = row;
  return { row: rest, expired: truth(expired), leaseLive: truth(leaseLive) };
}
