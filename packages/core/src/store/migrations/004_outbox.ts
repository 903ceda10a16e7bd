import type { Migration } from '../migration';

/**
 * The transactional outbox. One row per event, written in the caller's business transaction
 * and published by the relay afterwards.
 *
 * - `id` is an identity column: the order events of one partition key are published in.
 * - `status` is `pending` until published (`published`, when published rows are kept) or
 *   given up on (`dead`).
 * - A relay claims a key by locking the key's earliest pending row (`for update skip locked`)
 *   in the transaction that also marks the batch; no lease columns are needed.
 * - The partial indexes hold only pending rows, so the relay's poll stays an index scan
 *   however many published or dead rows the table keeps.
 */
export const m004Outbox: Migration = {
  version: 4,
  name: 'outbox',
  up: ({ table, name }) => [
    `create table ${table('outbox')} (
       id bigint generated always as identity
         constraint ${name('outbox_pkey')} primary key,
       destination text not null,
       partition_key text,
       message_id text not null
         constraint ${name('outbox_message_id_key')} unique,
       headers jsonb not null default '{}'::jsonb,
       payload bytea not null,
       created_at timestamptz not null default now(),
       available_at timestamptz not null default now(),
       attempts integer not null default 0,
       last_error text,
       status text not null default 'pending'
         constraint ${name('outbox_status_check')}
         check (status in ('pending', 'published', 'dead')),
       published_at timestamptz
     )`,
    `create index ${name('outbox_pending_idx')}
       on ${table('outbox')} (id) where status = 'pending'`,
    `create index ${name('outbox_pending_key_idx')}
       on ${table('outbox')} (partition_key, id)
       where status = 'pending' and partition_key is not null`,
    `create index ${name('outbox_pending_keyless_idx')}
       on ${table('outbox')} (id) where status = 'pending' and partition_key is null`,
    `create index ${name('outbox_published_idx')}
       on ${table('outbox')} (published_at) where status = 'published'`,
    `create index ${name('outbox_dead_idx')}
       on ${table('outbox')} (id) where status = 'dead'`,
  ],
};
