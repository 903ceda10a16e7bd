import type { Migration } from '../migration';

/**
 * Indexes the retention job's cleanup conditions use beside the `idempotency` table's own
 * `expires_at` index, so that each bounded batch finds its stale rows without scanning the
 * whole table: attempt counters by their last attempt, dead letters by when they died.
 */
export const m005Operations: Migration = {
  version: 5,
  name: 'operations_retention',
  up: ({ table, name }) => [
    `create index ${name('inbox_attempts_last_attempt_at_idx')}
       on ${table('inbox_attempts')} (last_attempt_at)`,
    `create index ${name('dead_letters_dead_at_idx')}
       on ${table('dead_letters')} (dead_at)`,
  ],
};
