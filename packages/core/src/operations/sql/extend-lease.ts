import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { MILLISECONDS, toDate, type RecordKey } from './row';
import { isMysql } from '../../store/dialect';
import { mysqlExtendLeaseRow } from './mysql/extend-lease';

/**
 * @internal
 * Moves the lease end to now plus `leaseMs`, by compare-and-set on the owner, and keeps
 * `expires_at` at or after the lease end so cleanup never removes a live reservation.
 * Returns the new lease end and the database's now, or `undefined` when `ownerId` no
 * longer owns an IN_PROGRESS record.
 */
export async function extendLeaseRow(
  db: SqlRunner,
  names: MigrationNames,
  record: RecordKey,
  ownerId: string,
  leaseMs: number,
): Promise<{ leaseUntil: Date; dbNow: Date } | undefined> {
  if (isMysql(names)) return mysqlExtendLeaseRow(db, names, record, ownerId, leaseMs);
  const result = await runSql(
    db,
    `update ${names.table('idempotency')}
        set lease_until = now() + ${MILLISECONDS},
            expires_at = greatest(expires_at, now() + ${MILLISECONDS}),
            updated_at = now()
      where scope = ? and operation = ? and key = ?
        and owner_id = ? and status = 'IN_PROGRESS'
      returning lease_until, now() as db_now`,
    [leaseMs, leaseMs, record.scope, record.operation, record.key, ownerId],
  );
  const row = rowsOf<{ lease_until: Date | string; db_now: Date | string }>(result)[0];
  return row === undefined
    ? undefined
    : { leaseUntil: toDate(row.lease_until), dbNow: toDate(row.db_now) };
}
