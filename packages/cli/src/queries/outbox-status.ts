import { rowsOf, type Store } from '@justonce/core';

/** One outbox destination's figures. */
export interface DestinationStatus {
  /** Topic, queue or exchange the relay publishes to. */
  readonly destination: string;
  /** Events waiting to be published. */
  readonly pending: number;
  /** Age in seconds of the oldest pending event (by `created_at`); `null` when none pend. */
  readonly oldestPendingSeconds: number | null;
  /** Events the relay gave up on (`status = 'dead'`). */
  readonly dead: number;
}

/**
 * Pending and dead events per destination. Read-only. Both filters match the partial
 * indexes `outbox_pending_idx` and `outbox_dead_idx`, so only pending and dead rows are
 * read, never the published ones kept for cleanup.
 */
export async function outboxStatus(store: Store): Promise<DestinationStatus[]> {
  const outbox = store.names.table('outbox');
  const result = await store.knex.raw(
    `select destination,
            count(*) filter (where status = 'pending')::bigint as pending,
            extract(epoch from now() - min(created_at) filter (where status = 'pending'))::float8
              as oldest_pending_seconds,
            count(*) filter (where status = 'dead')::bigint as dead
       from ${outbox}
      where status in ('pending', 'dead')
      group by destination
      order by destination`,
  );
  return rowsOf<{
    destination: string;
    pending: string | number;
    oldest_pending_seconds: number | null;
    dead: string | number;
  }>(result).map((r) => ({
    destination: r.destination,
    pending: Number(r.pending),
    oldestPendingSeconds:
      r.oldest_pending_seconds === null ? null : Number(r.oldest_pending_seconds),
    dead: Number(r.dead),
  }));
}
