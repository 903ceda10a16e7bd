import { rowsOf, type Store } from '@justonce/core';

/** What waits for cleanup. */
export interface RetentionStatus {
  /**
   * Dedup records past their own `expires_at` (uses `idempotency_expires_at_idx`). The
   * retention job deletes them once they are also older than its window, which is the
   * application's setting and unknown here, so this is an upper bound of the backlog.
   */
  readonly expiredDedupRecords: number;
  /** Published outbox rows kept until the relay's cleanup deletes them (`outbox_published_idx`). */
  readonly publishedOutboxRows: number;
}

/** The retention backlog. Read-only. */
export async function retentionStatus(store: Store): Promise<RetentionStatus> {
  const result = await store.knex.raw(
    `select (select count(*) from ${store.names.table('idempotency')}
              where expires_at is not null and expires_at < now())::bigint as expired,
            (select count(*) from ${store.names.table('outbox')}
              where status = 'published')::bigint as published`,
  );
  const row = rowsOf<{ expired: string | number; published: string | number }>(result)[0];
  return {
    expiredDedupRecords: Number(row?.expired ?? 0),
    publishedOutboxRows: Number(row?.published ?? 0),
  };
}
