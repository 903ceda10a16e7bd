import type { Migration } from '../migration';

/**
 * Which rows of `idempotency` the inbox wrote. Every writer of operations reserves a record
 * with an `owner_id` and finalizes it by compare-and-set on that owner, so an operation's
 * `SUCCEEDED` or `FAILED_FINAL` record always has one (an operator's release clears it, but
 * leaves the record `FAILED_RETRIABLE`). The inbox never set an owner: it inserted its
 * records `SUCCEEDED` (handled) or `FAILED_FINAL` (dead-lettered) with `owner_id` null.
 */
const INBOX_ROWS = `owner_id is null and status in ('SUCCEEDED', 'FAILED_FINAL')`;

/**
 * `inbox_records`: the inbox's dedup records, in a table of their own, moved out of
 * `idempotency`, which is left to idempotent operations. Before, both kept their records in
 * `idempotency` keyed `(scope, operation, key)`, the inbox with its consumer's name as the
 * operation, so an operation and a consumer of the same name took each other's records.
 *
 * - Keyed `(consumer, scope, message_id)`, with only what the inbox writes and reads: the
 *   status (`SUCCEEDED` when handled, `FAILED_FINAL` when dead-lettered), the payload's
 *   fingerprint, the attempt that wrote it, the dead-letter reason (`error`), when it was
 *   written and when it expires. Records are only ever inserted and deleted, never updated.
 * - `inbox_records_expires_at_idx` for retention, `inbox_records_succeeded_created_idx`
 *   (partial, `SUCCEEDED` only) for the status read's "handled in the last hour".
 * - The inbox's rows move with one `insert … select` and one `delete`, in this migration's
 *   transaction (see {@link INBOX_ROWS} for how they are told apart). A record without an
 *   expiry (none the inbox wrote) keeps none: `infinity`, never expired.
 *
 * On a large `idempotency` table the move reads the whole table once and holds a row lock on
 * every moved row until it commits; operations' own records are read but not locked. See
 * docs/store.md ("Upgrading to migration 12") for running it on a live database: stop the
 * inboxes (an inbox of an older version writes its records to `idempotency`), optionally
 * move the rows in batches beforehand (the statements here then find the table and indexes
 * present and nothing left to move), migrate, start the new version.
 */
export const m012InboxRecords: Migration = {
  version: 12,
  name: 'inbox_records',
  up: ({ table, name }) => [
    `create table if not exists ${table('inbox_records')} (
       consumer text not null,
       scope text not null,
       message_id text not null,
       status text not null
         constraint ${name('inbox_records_status_check')}
         check (status in ('SUCCEEDED', 'FAILED_FINAL')),
       fingerprint text,
       attempts integer not null default 1,
       error jsonb,
       created_at timestamptz not null default now(),
       expires_at timestamptz not null,
       constraint ${name('inbox_records_pkey')} primary key (consumer, scope, message_id)
     )`,
    `create index if not exists ${name('inbox_records_expires_at_idx')}
       on ${table('inbox_records')} (expires_at)`,
    `create index if not exists ${name('inbox_records_succeeded_created_idx')}
       on ${table('inbox_records')} (created_at, consumer) where status = 'SUCCEEDED'`,
    `insert into ${table('inbox_records')}
       (consumer, scope, message_id, status, fingerprint, attempts, error, created_at, expires_at)
     select operation, scope, key, status, request_hash, attempts, error, created_at,
            coalesce(expires_at, 'infinity'::timestamptz)
       from ${table('idempotency')}
      where ${INBOX_ROWS}
     on conflict do nothing`,
    `delete from ${table('idempotency')} where ${INBOX_ROWS}`,
  ],
};
