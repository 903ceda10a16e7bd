import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { RECORD_COLUMNS, type IdempotencyRow, type RecordKey } from './row';
import { isMysql } from '../../store/dialect';
import { mysqlReadRow } from './mysql/read';

/** @internal A row plus what the database clock says about it. */
export interface ReadRow {
  readonly row: IdempotencyRow;
  /** `expires_at` has passed: the key is ABSENT. */
  readonly expired: boolean;
  /** `lease_until` is still ahead. */
  readonly leaseLive: boolean;
}

/** @internal Reads one record without locking it. */
export async function readRow(
  db: SqlRunner,
  names: MigrationNames,
  record: RecordKey,
): Promise<ReadRow | undefined> {
  if (isMysql(names)) return mysqlReadRow(db, names, record);
  const result = await runSql(
    db,
    `select ${RECORD_COLUMNS},
            coalesce(expires_at <= now(), false) as expired,
            coalesce(lease_until > now(), false) as lease_live
       from ${names.table('idempotency')}
      where scope = ? and operation = ? and key = ?`,
    [record.scope, record.operation, record.key],
  );
  const row = rowsOf<IdempotencyRow & { expired: boolean; lease_live: boolean }>(result)[0];
  if (row === undefined) return undefined;
  const { expired, lease_live: leaseLive, ...rest } = row;
  return { row: rest, expired: expired === true, leaseLive: leaseLive === true };
}
