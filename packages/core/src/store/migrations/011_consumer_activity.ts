import type { Migration } from '../migration';

/**
 * `consumer_activity`: what each inbox consumer did per minute (handled, duplicates,
 * dead-lettered), for the operator's "last hour" figures. Duplicates leave no other row, so
 * this is the only place they are recorded. Inboxes count in memory and add their counts
 * with one upsert per flush, so several processes of one consumer add up in the same rows.
 *
 * The primary key `(consumer, minute)` serves both the upsert and the status read (the last
 * hour's range of each consumer); retention deletes rows by `minute`, and the table stays
 * small (one row per consumer and active minute).
 */
export const m011ConsumerActivity: Migration = {
  version: 11,
  name: 'consumer_activity',
  up: ({ table, name }) => [
    `create table if not exists ${table('consumer_activity')} (
       consumer text not null,
       minute timestamptz not null,
       handled bigint not null default 0,
       duplicates bigint not null default 0,
       dead_lettered bigint not null default 0,
       constraint ${name('consumer_activity_pkey')} primary key (consumer, minute)
     )`,
  ],
};
