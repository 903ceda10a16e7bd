import type { Migration } from '../migration';

/**
 * Indexes for the operator's reads (`createAdmin(store).status()`, the CLI and the
 * dashboard), so that status stays a few index scans however many rows the tables keep.
 *
 * - `idempotency_in_progress_idx`: records held `IN_PROGRESS`, by operation and lease end.
 *   Partial, so it holds only what is running now (a handful of rows) and the in-progress and
 *   past-lease counts are index-only scans. Reserving and finalizing change `status` anyway,
 *   so the predicate costs those updates no HOT opportunity they had.
 * - `idempotency_succeeded_created_idx`: `SUCCEEDED` records by creation time, then
 *   operation, for "handled in the last hour" per consumer or operation. `created_at` leads
 *   so the count reads only the last hour's range, not every record of every operation.
 *   Partial on `status = 'SUCCEEDED'` so the count needs no heap visit for the status and
 *   the index leaves out failed and running records. The price: an operation's completion
 *   (IN_PROGRESS → SUCCEEDED) adds an entry on update; that update is not HOT already (the
 *   index above has `status` in its predicate), and the inbox inserts its records SUCCEEDED,
 *   so each of them costs one entry either way.
 * - `dead_letters_waiting_idx`: letters not yet requeued, by consumer, reason and time, for
 *   the waiting count and the newest letter per consumer and reason (index-only). Requeued
 *   letters leave it.
 *
 * Plain `create index`, not `concurrently`: every migration runs in its own transaction (and
 * PGlite has no concurrent builds). On a large `idempotency` table the build holds a write
 * lock while it runs; apply it at a quiet time, or create the same indexes `concurrently`
 * by hand beforehand (the names match, `if not exists` then skips them).
 */
export const m010OperatorIndexes: Migration = {
  version: 10,
  name: 'operator_indexes',
  up: ({ table, name }) => [
    `create index if not exists ${name('idempotency_in_progress_idx')}
       on ${table('idempotency')} (operation, lease_until) where status = 'IN_PROGRESS'`,
    `create index if not exists ${name('idempotency_succeeded_created_idx')}
       on ${table('idempotency')} (created_at, operation) where status = 'SUCCEEDED'`,
    `create index if not exists ${name('dead_letters_waiting_idx')}
       on ${table('dead_letters')} (consumer, reason, dead_at) where requeued_at is null`,
  ],
};
