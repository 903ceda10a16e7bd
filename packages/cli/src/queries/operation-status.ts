import { rowsOf, type Store } from '@justonce/core';

/** Operations (and inbox claims) held `IN_PROGRESS`, per operation name. */
export interface OperationStatus {
  readonly operation: string;
  /** Records in progress whose lease has not run out. */
  readonly inProgress: number;
  /** Records in progress whose lease ran out: their owner died or hangs. */
  readonly pastLease: number;
}

/**
 * In-progress records per operation. Read-only. Note: `status` has no index, so this reads
 * the dedup table; see the report of issue #26 on the cost at scale.
 */
export async function operationStatus(store: Store): Promise<OperationStatus[]> {
  const result = await store.knex.raw(
    `select operation,
            count(*) filter (where lease_until is null or lease_until >= now())::bigint as in_progress,
            count(*) filter (where lease_until < now())::bigint as past_lease
       from ${store.names.table('idempotency')}
      where status = 'IN_PROGRESS'
      group by operation
      order by operation`,
  );
  return rowsOf<{ operation: string; in_progress: string | number; past_lease: string | number }>(
    result,
  ).map((r) => ({
    operation: r.operation,
    inProgress: Number(r.in_progress),
    pastLease: Number(r.past_lease),
  }));
}
