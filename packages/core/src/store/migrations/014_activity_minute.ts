import type { Migration } from '../migration';

/**
 * `consumer_activity_minute_idx`: the activity counts by minute, for the retention job, which
 * deletes the minutes older than its window across every consumer. The primary key leads with
 * the consumer, so without this index each of the job's delete batches scanned the whole table
 * (fifty consumers keep about two million minutes over thirty days).
 *
 * Plain `create index if not exists`, like migration 10: a large table can have it built
 * `concurrently` beforehand (docs/store.md, "Migrations on large tables").
 */
export const m014ActivityMinute: Migration = {
  version: 14,
  name: 'activity_minute',
  up: ({ table, name }) => [
    `create index if not exists ${name('consumer_activity_minute_idx')}
       on ${table('consumer_activity')} (minute)`,
  ],
};
