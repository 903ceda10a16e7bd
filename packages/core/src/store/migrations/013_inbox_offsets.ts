import type { Migration } from '../migration';

/**
 * `inbox_offsets`: the offset watermark of an inbox in a watermark dedup mode (see the inbox's
 * `dedup` option). Per consumer and broker partition, the highest offset whose effects
 * committed: a record at or below it is a duplicate, without a row of its own. The inbox
 * advances it with a compare-and-set in the business transaction, so the row lock also
 * serialises two consumers that both believe they own the partition during a rebalance.
 *
 * Keyed `(consumer, topic, partition)`; one row per consumer and partition, updated once per
 * batch and partition, never deleted by retention (it is what makes redeliveries duplicates).
 */
export const m013InboxOffsets: Migration = {
  version: 13,
  name: 'inbox_offsets',
  up: ({ table, name }) => [
    `create table if not exists ${table('inbox_offsets')} (
       consumer text not null,
       topic text not null,
       partition integer not null,
       high_offset bigint not null,
       updated_at timestamptz not null default now(),
       constraint ${name('inbox_offsets_pkey')} primary key (consumer, topic, partition)
     )`,
  ],
};
