import { rowsOf, type Store } from '@justonce/core';

/** Dead letters of one consumer and reason that wait (not yet requeued). */
export interface DeadLetterCount {
  readonly consumer: string;
  readonly reason: string;
  readonly count: number;
  /** When the newest of them was dead-lettered. */
  readonly newestAt: Date;
}

/**
 * Waiting dead letters per consumer and reason. Read-only.
 *
 * Handled and duplicate counts per consumer are not shown: the store does not record them
 * per consumer over time (the inbox's dedup rows are shared with idempotent operations,
 * carry no index on their creation time, and duplicates leave no row at all). They are in
 * the inbox's OpenTelemetry metrics instead.
 */
export async function deadLetterStatus(store: Store): Promise<DeadLetterCount[]> {
  const result = await store.knex.raw(
    `select consumer, reason, count(*)::bigint as count, max(dead_at) as newest_at
       from ${store.names.table('dead_letters')}
      where requeued_at is null
      group by consumer, reason
      order by consumer, reason`,
  );
  return rowsOf<{
    consumer: string;
    reason: string;
    count: string | number;
    newest_at: Date | string;
  }>(result).map((r) => ({
    consumer: r.consumer,
    reason: r.reason,
    count: Number(r.count),
    newestAt: new Date(r.newest_at),
  }));
}
