import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../store/prepared';
import { rowsOf } from '../../store/migrate';
import { MILLISECONDS, toDate, type RecordKey } from './row';

/** @internal What a successful reservation wrote. */
export interface ReservedRow {
  readonly attempts: number;
  readonly leaseUntil: Date;
  /** The database's `now()` when the reservation was made. */
  readonly dbNow: Date;
}

/**
 * @internal
 * The atomic reserve: one `INSERT … ON CONFLICT DO UPDATE … WHERE` statement. It inserts an
 * IN_PROGRESS row for an absent key, and takes over an existing row only when it is expired
 * (then it starts afresh, whatever its hash), or when its request hash matches and it is
 * FAILED_RETRIABLE or IN_PROGRESS with a lease that has run out. Anything else leaves the row
 * untouched and returns nothing; the caller then reads the row to say why. Lease and expiry
 * use the database clock. A fixed text, run as a prepared statement when the store allows.
 */
export async function reserveRow(
  knex: Knex,
  store: StatementStore,
  record: RecordKey,
  params: { requestHash: string; ownerId: string; leaseMs: number; retentionMs: number },
): Promise<ReservedRow | undefined> {
  const table = store.names.table('idempotency');
  const result = await prepared(
    store,
    knex,
    `insert into ${table} as t
       (scope, operation, key, request_hash, status, owner_id, lease_until,
        response, error, attempts, created_at, updated_at, expires_at)
     values (?, ?, ?, ?, 'IN_PROGRESS', ?, now() + ${MILLISECONDS},
        null, null, 1, now(), now(), now() + greatest(${MILLISECONDS}, ${MILLISECONDS}))
     on conflict (scope, operation, key) do update set
       request_hash = excluded.request_hash,
       status = 'IN_PROGRESS',
       owner_id = excluded.owner_id,
       lease_until = excluded.lease_until,
       response = null,
       error = null,
       attempts = case when t.expires_at <= now() then 1 else t.attempts + 1 end,
       created_at = case when t.expires_at <= now() then now() else t.created_at end,
       updated_at = now(),
       expires_at = excluded.expires_at
     where t.expires_at <= now()
        or (t.request_hash = excluded.request_hash
            and (t.status = 'FAILED_RETRIABLE'
                 or (t.status = 'IN_PROGRESS' and t.lease_until <= now())))
     returning t.attempts, t.lease_until, now() as db_now`,
    [
      record.scope,
      record.operation,
      record.key,
      params.requestHash,
      params.ownerId,
      params.leaseMs,
      params.retentionMs,
      params.leaseMs,
    ],
  );
  const row = rowsOf<{
    attempts: number | string;
    lease_until: Date | string;
    db_now: Date | string;
  }>(result)[0];
  if (row === undefined) return undefined;
  return {
    attempts: Number(row.attempts),
    leaseUntil: toDate(row.lease_until),
    dbNow: toDate(row.db_now),
  };
}
