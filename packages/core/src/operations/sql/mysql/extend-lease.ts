import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import { toDate, type RecordKey } from '../row';
import { micros, NOW, NOW_PLUS } from './row';

/**
 * @internal
 * MySQL's `extendLeaseRow`: the same compare-and-set on the owner, then a read of what it
 * wrote, as MySQL has no `UPDATE … RETURNING`. The read looks for the owner's own IN_PROGRESS
 * row, which nobody else may take before the lease just extended runs out; `updated_at` is the
 * database's now of the update. `greatest` is null on MySQL when an argument is null, hence the
 * `coalesce` PostgreSQL does not need.
 */
export async function mysqlExtendLeaseRow(
  db: SqlRunner,
  names: MigrationNames,
  record: RecordKey,
  ownerId: string,
  leaseMs: number,
): Promise<{ leaseUntil: Date; dbNow: Date } | undefined> {
  const table = names.table('idempotency');
  const where = `where scope = ? and operation = ? and \`key\` = ?
        and owner_id = ? and status = 'IN_PROGRESS'`;
  const key = [record.scope, record.operation, record.key, ownerId];
  const us = micros(leaseMs);
  const updated = await runSql(
    db,
    `update ${table}
        set lease_until = ${NOW_PLUS},
            expires_at = greatest(coalesce(expires_at, ${NOW_PLUS}), ${NOW_PLUS}),
            updated_at = ${NOW}
      ${where}`,
    [us, us, us, ...key],
  );
  if (updated.rowCount !== 1) return undefined;
  const result = await runSql(db, `select lease_until, updated_at from ${table} ${where}`, key);
  const row = rowsOf<{ lease_until: Date | string; updated_at: Date | string }>(result)[0];
  return row === undefined
    ? undefined
    : { leaseUntil: toDate(row.lease_until), dbNow: toDate(row.updated_at) };
}
