import type { Migration } from '../migration';

/**
 * `inbox_attempts.shared`: the count was charged to a whole batch at once. When the process
 * dies inside a batch, every message of it comes back with a counter, though only one of them
 * killed it; the batch is then handled one message at a time, and the first count of each
 * on its own turns the shared charge into its own attempt instead of adding a second.
 */
export const m007SharedAttempts: Migration = {
  version: 7,
  name: 'shared_attempts',
  up: ({ table }) => [
    `alter table ${table('inbox_attempts')} add column shared boolean not null default false`,
  ],
};
